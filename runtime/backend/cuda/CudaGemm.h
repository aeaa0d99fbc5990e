//===- CudaGemm.h - One GEMM step of a plan through cuBLASLt ---*- C++ -*-===//
//
// The artifact's GEMMs are row-major: D[m,n] = alpha op(A)[m,k] op(B)[k,n]
// + beta C. cuBLASLt is column-major, so each runs as the column-major
// D^T = op(B)^T op(A)^T (B first, no data moved). A one-dimensional bias
// becomes the BIAS epilogue (pre-scaled by beta when beta != 1), a full C the
// beta term. All operands of a GEMM step are dense (weights or the task's
// workspace), so the descriptors are made once per batch size with m the
// plan's batch size, and the algorithm is chosen then: cuBLASLt's heuristic
// proposes candidates and the fastest of them on this device, timed on the
// plan's own buffers, is kept.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CUDA_CUDAGEMM_H
#define CELLRUN_BACKEND_CUDA_CUDAGEMM_H

#include "CudaMemory.h"

#include "cellrun/Artifact.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

namespace cellrun::cuda {

/// Device addresses of a GEMM's operands (c may be null).
struct GemmOperands {
  const void *a = nullptr;
  const void *b = nullptr;
  const void *c = nullptr;
  void *d = nullptr;
  /// The bias as host data when it is a weight (for scaling by beta).
  const float *hostBias = nullptr;
};

class CudaGemm {
public:
  /// Prepares `step` with m = `rows`; `workspace` (of `workspaceBytes`) is
  /// cuBLASLt's scratch, used only on `stream`. Times up to `candidates`
  /// algorithms on `stream` when more than one is proposed.
  static Result<std::unique_ptr<CudaGemm>>
  create(cublasLtHandle_t handle, const cellpack::GemmStep &step, int64_t rows,
         const GemmOperands &operands, void *workspace, size_t workspaceBytes,
         cudaStream_t stream, int candidates = 8);
  ~CudaGemm();
  CudaGemm(const CudaGemm &) = delete;
  CudaGemm &operator=(const CudaGemm &) = delete;

  /// Enqueues the GEMM on `stream`.
  Status enqueue(cudaStream_t stream) const;

  /// "m=64 n=4096 k=1024 tf32, algo 23 (fastest of 8: 11.2 us)".
  const std::string &description() const { return description_; }

private:
  CudaGemm() = default;
  Status chooseAlgorithm(cudaStream_t stream, int candidates);

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t operation_ = nullptr;
  cublasLtMatrixLayout_t layoutA_ = nullptr, layoutB_ = nullptr,
                         layoutC_ = nullptr, layoutD_ = nullptr;
  cublasLtMatmulAlgo_t algorithm_{};
  float alpha_ = 1.0f, beta_ = 0.0f;
  const void *a_ = nullptr, *b_ = nullptr, *c_ = nullptr;
  void *d_ = nullptr;
  void *workspace_ = nullptr;
  size_t workspaceBytes_ = 0;
  DeviceBuffer scaledBias_;
  std::string description_;
};

} // namespace cellrun::cuda

#endif // CELLRUN_BACKEND_CUDA_CUDAGEMM_H
