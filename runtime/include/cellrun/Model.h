//===- Model.h - Loading a compiled model and what it holds ----*- C++ -*-===//
//
// A model is a .cellpack written by cellc. loadArtifact reads one and checks
// it completely before anything reads it (structure, format version,
// checksum, and every index, range, kernel and weight size the runtime
// relies on); the result is an immutable, opaque LoadedArtifact that the
// engine (Engine.h) and the request parser (RequestParser.h) take.
// describeModel says what it holds in plain C++ types: its cells, their
// tensors and batch sizes, how requests unfold into them, its precision.
// The file format itself (FlatBuffers) stays inside the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_MODEL_H
#define CELLRUN_MODEL_H

#include "cellrun/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cellrun {

/// A verified cellpack in memory; made only by loadArtifact*.
class LoadedArtifact;

/// Reads and checks the file at `path`. Errors: NotFound (no such file),
/// IoError (cannot open or read, a directory), DataLoss (truncated,
/// corrupted, malformed), Unsupported (another format version),
/// ResourceExhausted (no memory for it). The message starts with the path
/// and says what is wrong, e.g. "m.cellpack: truncated: the size prefix
/// says 4092 bytes but 2044 follow".
Result<std::shared_ptr<const LoadedArtifact>>
loadArtifact(const std::string &path);

/// The same for a file already in memory; `displayName` stands for the path
/// in messages. The bytes are copied to aligned memory.
Result<std::shared_ptr<const LoadedArtifact>>
loadArtifactFromBytes(std::vector<uint8_t> bytes, std::string displayName);

/// The artifact format version this runtime reads (and cellc writes).
uint32_t supportedFormatVersion();

/// Element types of a cell's tensors and weights.
enum class ElementType : uint8_t {
  F32,
  F64,
  F16,
  BF16,
  I64,
  I32,
  I16,
  I8,
  Bool
};
/// "f32", "f64", "f16", "bf16", "i64", "i32", "i16", "i8", "bool".
const char *elementTypeName(ElementType type);

/// How a request unfolds into cell steps: a chain of one cell, an encoder
/// chain then a decoder that feeds its tokens back, a tree of leaf and
/// internal cells, or an unfolder registered by the application.
enum class UnfoldingKind : uint8_t { Chain, Seq2Seq, Tree, Custom };
/// "chain", "seq2seq", "tree", "custom".
const char *unfoldingName(UnfoldingKind unfolding);

/// The arithmetic the cells' matrix products were compiled for.
enum class ComputePrecision : uint8_t { FP32, TF32, BF16, FP16 };
/// "fp32", "tf32", "bf16", "fp16".
const char *precisionName(ComputePrecision precision);

/// One input or output of a cell, per row (a request's node).
struct CellTensorInfo {
  std::string name;
  /// "input" (request data), "state", "child" (a tree child's output),
  /// "output", "memory" or "memory_mask" (attention over an encoder).
  std::string role;
  ElementType type = ElementType::F32;
  std::vector<int64_t> rowShape; // after the batch dimension
  /// A state output returned at every step (a chain's per-step output).
  bool emitted = false;
};

struct CellInfo {
  std::string name;
  std::vector<CellTensorInfo> inputs, outputs;
  /// The batch sizes it was compiled for, increasing: a task of n rows
  /// runs at the smallest one >= n.
  std::vector<uint32_t> batchSizes;
  uint32_t weightCount = 0;
  uint64_t weightBytes = 0;
  /// Kernels generated for the GPU, the GPU architectures with machine code
  /// (CUBINs: "sm_90"), and the architecture of its PTX ("" when none).
  uint32_t kernelCount = 0;
  std::vector<std::string> gpuArchitectures;
  std::string ptxArchitecture;
};

struct ModelInfo {
  /// Where it was loaded from (the path, or the name given with the bytes).
  std::string source;
  uint64_t fileBytes = 0;
  uint32_t formatVersion = 0;
  uint64_t checksum = 0;
  /// The manifest's model name ("" when it has none) and "cellc <version>".
  std::string name, producer;
  UnfoldingKind unfolding = UnfoldingKind::Chain;
  /// UnfoldingKind::Custom: the name the application's unfolder registered.
  std::string unfolder;
  ComputePrecision precision = ComputePrecision::FP32;
  /// Seq2Seq: the decoder's begin and end tokens and its step limit
  /// (0: none; requests may set a lower one).
  int64_t beginToken = 0, endToken = 0, maxDecodeLength = 0;
  std::vector<CellInfo> cells; // in the order of the file
  /// State memory one pool row of every row type costs together: serving
  /// with pools of R rows takes R times this (the engine's poolRows).
  uint64_t poolBytesPerRow = 0;
};

/// What `artifact` holds.
ModelInfo describeModel(const LoadedArtifact &artifact);

} // namespace cellrun

#endif // CELLRUN_MODEL_H
