//===- PackedWeights.h - Weights packed once for the CPU GEMM --*- C++ -*-===//
//
// A cell's weight matrices packed into GEMM panels (PackedGemm.h, or as bf16
// for bf16 GEMMs, PackedGemmBf16.h) once per loaded artifact, shared by every
// batch-size plan, every kernel that reads them and every worker's backend:
// the memory a plan adds is only its workspace, and a second worker adds no
// weights.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_PACKEDWEIGHTS_H
#define CELLRUN_BACKEND_CPU_PACKEDWEIGHTS_H

#include "PackedGemm.h"
#include "PackedGemmBf16.h"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace cellrun::cpu {

class PackedWeightCache {
public:
  /// The cache of the artifact whose weights live at `artifact` (any
  /// address that identifies it while it is loaded), made on the first
  /// call and shared by every caller holding it; freed with the last
  /// holder. A holder must keep the artifact loaded (the cache points into
  /// its weights). Thread-safe.
  static std::shared_ptr<PackedWeightCache> forArtifact(const void *artifact);

  /// `source` packed as PackedMatrix(source, k, n, transposed); the result
  /// lives as long as the cache. Thread-safe.
  const PackedMatrix &get(const float *source, int64_t k, int64_t n,
                          bool transposed) {
    return find(packed_, source, k, n, transposed);
  }
  /// The same packed as bf16 (for GEMMs of --precision=bf16 artifacts).
  const PackedMatrixBf16 &getBf16(const float *source, int64_t k, int64_t n,
                                  bool transposed) {
    return find(packedBf16_, source, k, n, transposed);
  }
  size_t bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes_;
  }

private:
  using Key = std::tuple<const float *, int64_t, int64_t, bool>;
  template <typename Packed>
  const Packed &find(std::map<Key, std::unique_ptr<Packed>> &packed,
                     const float *source, int64_t k, int64_t n,
                     bool transposed) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto &entry = packed[{source, k, n, transposed}];
    if (!entry) {
      entry = std::make_unique<Packed>(source, k, n, transposed);
      bytes_ += entry->bytes();
    }
    return *entry;
  }
  mutable std::mutex mutex_;
  std::map<Key, std::unique_ptr<PackedMatrix>> packed_;
  std::map<Key, std::unique_ptr<PackedMatrixBf16>> packedBf16_;
  size_t bytes_ = 0;
};

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_PACKEDWEIGHTS_H
