//===- Artifact.h - A loaded cellpack, inside the runtime -------*- C++ -*-===//
//
// loadArtifact (cellrun/Model.h) reads a .cellpack (schema/cellpack.fbs)
// into 64-byte aligned memory and checks it completely before anyone reads
// it: size prefix, file identifier, FlatBuffers structure, format version,
// payload checksum, the nested Model's structure, then the semantics every
// later component relies on (indices in range, workspace ranges inside the
// workspace, kernels present in the code, weight sizes, GEMM shapes). A
// LoadedArtifact is immutable and never reads outside its buffer; its
// accessors hand out the FlatBuffers tables directly. Internal: applications
// see the opaque class and describeModel.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_ARTIFACT_H
#define CELLRUN_ARTIFACT_H

#include "cellrun/Model.h"
#include "cellrun/Status.h"

#include "cellpack_generated.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cellrun {

/// Alignment of the loaded file in memory, and so of the payload, of every
/// weight's data and of every CUBIN (the schema forces 64 on them).
constexpr size_t kArtifactAlignment = 64;

/// Bytes of one element of `dtype`; 0 for a value outside the enum.
size_t dtypeSize(cellpack::DType dtype);

/// One weight of a cell: its data stays inside the loaded file.
struct WeightView {
  std::string_view name;
  cellpack::DType dtype;
  std::vector<int64_t> shape;
  const uint8_t *data; // kArtifactAlignment-aligned; nullptr when bytes == 0
  size_t bytes;
};

namespace detail {
class ArtifactLoader;

/// Owns the file's bytes at a kArtifactAlignment-aligned address.
struct AlignedBytes {
  struct Free {
    void operator()(uint8_t *p) const;
  };
  std::unique_ptr<uint8_t[], Free> data;
  size_t size = 0;
};
} // namespace detail

/// A verified cellpack in memory. Made only by loadArtifact*.
class LoadedArtifact {
public:
  /// The path (or name) it was loaded from; every message starts with it.
  const std::string &displayName() const { return displayName_; }
  /// The whole file (size prefix included), kArtifactAlignment-aligned.
  const uint8_t *fileData() const { return bytes_.data.get(); }
  size_t fileSize() const { return bytes_.size; }
  uint32_t formatVersion() const { return envelope_->format_version(); }
  uint64_t checksum() const { return envelope_->checksum(); }

  const cellpack::Model &model() const { return *model_; }
  /// The cells in the order of the file.
  std::vector<const cellpack::CellType *> cells() const;

  /// The cell called `name`, or NotFound naming the cells there are.
  Result<const cellpack::CellType *> cell(std::string_view name) const;
  /// The cell's code entry (the loader guarantees exactly one). `cell` must
  /// come from this artifact.
  const cellpack::CellCode &code(const cellpack::CellType &cell) const;

  /// The supported batch sizes of `cell`, increasing.
  std::vector<uint32_t> batchSizes(const cellpack::CellType &cell) const;
  /// The plan for exactly `batchSize`, or NotFound.
  Result<const cellpack::BatchPlan *> plan(const cellpack::CellType &cell,
                                           uint32_t batchSize) const;
  /// The plan of the smallest batch size >= `rows` (rows >= 1), or
  /// OutOfRange when `rows` exceeds the largest batch size.
  Result<const cellpack::BatchPlan *>
  smallestPlanAtLeast(const cellpack::CellType &cell, uint32_t rows) const;

  /// weights[index] of `cell`, or OutOfRange.
  Result<WeightView> weight(const cellpack::CellType &cell,
                            uint32_t index) const;

private:
  friend class detail::ArtifactLoader;

  LoadedArtifact() = default;

  std::string displayName_;
  detail::AlignedBytes bytes_;
  const cellpack::Artifact *envelope_ = nullptr;
  const cellpack::Model *model_ = nullptr;
  std::unordered_map<std::string_view, const cellpack::CellType *> cellsByName_;
  std::unordered_map<const cellpack::CellType *, const cellpack::CellCode *>
      codeByCell_;
};

/// The pool a tensor's rows live in: the executor keeps one pool per
/// element type and row size, shared by every cell input and output of
/// that type. (element type, bytes of one row)
std::pair<int, size_t> poolRowType(const cellpack::TensorSpec &spec);

} // namespace cellrun

#endif // CELLRUN_ARTIFACT_H
