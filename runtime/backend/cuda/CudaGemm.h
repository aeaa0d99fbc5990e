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
// plan's own buffers, is kept. For GEMMs of few rows (SkinnyGemmKernel.h)
// the cell code's skinny kernel, at a few k-split counts, runs in the same
// contest: cuBLASLt's kernels for such shapes read the weights at a
// fraction of the device's bandwidth. CELL_CUDA_GEMM=skinny or =cublas in
// the environment decides the contest instead of the clock; =skinny-gather
// as =skinny with only the skinny kernels that gather A (tests).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CUDA_CUDAGEMM_H
#define CELLRUN_BACKEND_CUDA_CUDAGEMM_H

#include "CudaMemory.h"

#include "artifact/Artifact.h"

#include "SkinnyGemmKernel.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

namespace cellrun::cuda {

/// The cuBLAS compute type of a GEMM step's precision: fp32 data, products
/// in fp32 or on TF32/BF16/FP16 tensor cores.
cublasComputeType_t gemmComputeType(cellpack::Precision precision);

/// Device addresses of a GEMM's operands (c may be null).
struct GemmOperands {
  const void *a = nullptr;
  const void *b = nullptr;
  const void *c = nullptr;
  void *d = nullptr;
  /// The bias as host data when it is a weight (for scaling by beta).
  const float *hostBias = nullptr;
  /// A is the plan's workspace, which the check of a skinny kernel against
  /// cuBLASLt may fill with test values at load (not a weight).
  bool aIsScratch = false;
};

/// One of the cell code's skinny GEMM kernels: what SkinnyGemmKernel.h
/// says of it (name, rows, whether it gathers A) and its handle.
struct SkinnyGemmVariantKernel : cellpack::SkinnyGemmVariant {
  cudaKernel_t kernel = nullptr;
};

/// A's rows where they lie: row r of A is row rows[r] of `data` (rows of k
/// floats, a state pool) for the task's `count` rows; the rows of D past
/// them (the plan's padding, whose indices are not the task's) are left
/// as they were.
struct GatheredRows {
  const void *data = nullptr;
  const int32_t *rows = nullptr;
  int64_t count = 0;
};

/// The cell code's skinny GEMM kernels, those it has, and the device's
/// multiprocessor count (which sizes their k splits).
struct SkinnyGemmKernel {
  std::vector<SkinnyGemmVariantKernel> variants;
  int multiprocessors = 0;
  /// When positive, the only k-split count the contest times (tests).
  int splits = 0;
  /// Launched as a programmatic dependent launch (CudaLaunch.h).
  bool programmatic = false;
};

class CudaGemm {
public:
  /// Prepares `step` with m = `rows`; `workspace` (of `workspaceBytes`) is
  /// cuBLASLt's scratch, used only on `stream`. Times up to `candidates`
  /// algorithms on `stream` when more than one is proposed.
  static Result<std::unique_ptr<CudaGemm>>
  create(cublasLtHandle_t handle, const cellpack::GemmStep &step, int64_t rows,
         const GemmOperands &operands, void *workspace, size_t workspaceBytes,
         cudaStream_t stream, const SkinnyGemmKernel &skinny = {},
         int candidates = 8);
  ~CudaGemm();
  CudaGemm(const CudaGemm &) = delete;
  CudaGemm &operator=(const CudaGemm &) = delete;

  /// Enqueues the GEMM on `stream`; with `gathered`, A's rows are read
  /// where they lie (only when gathersA()).
  Status enqueue(cudaStream_t stream,
                 const GatheredRows *gathered = nullptr) const;
  /// Whether the chosen kernel reads A's rows through an index list, so a
  /// gather of them before the GEMM can be left out.
  bool gathersA() const { return useSkinny_ && skinnyKernel_.gathersA; }

  /// The operands as a skinny kernel takes them (a GEMM-and-epilogue kernel
  /// too), and the k splits the contest chose.
  struct SkinnyOperands {
    const void *a = nullptr, *b = nullptr, *bias = nullptr, *c = nullptr;
    void *d = nullptr;
    int m = 0, n = 0, k = 0, splits = 1;
    float alpha = 1.0f, beta = 0.0f;
  };
  /// Whether the skinny kernels run this GEMM (they won the contest).
  bool usesSkinny() const { return useSkinny_; }
  SkinnyOperands skinnyOperands() const;
  /// Adds `text` to description() (what became of the GEMM later).
  void describe(const std::string &text) { description_ += text; }

  /// "m=64 n=4096 k=2048 FP32, fastest of 8 proposals: 11.2 us" or
  /// "m=4 ..., skinny kernel cellrun_skinny_gemm_gather4, 16 k splits: 9.1 us
  /// (cuBLASLt 21.1 us)".
  const std::string &description() const { return description_; }

private:
  CudaGemm() = default;
  /// Creates the matmul descriptor (the compute type of the step's
  /// precision, B as cuBLASLt's first operand) and the layouts of A, B, C
  /// and D, of the sizes m_, n_ and k_ (set before).
  Status createDescriptors(const cellpack::GemmStep &step);
  /// Adds the step's C, if it has one: a vector of n as the BIAS epilogue
  /// (attachBias), a full [m, n] C as beta * C; any other size is an error.
  Status attachBiasOrC(const cellpack::GemmStep &step,
                       const GemmOperands &operands);
  /// The BIAS epilogue with operands.c, first scaled by beta on the host
  /// (and uploaded) when beta != 1, which needs the bias as a weight.
  Status attachBias(const cellpack::GemmStep &step,
                    const GemmOperands &operands);
  /// Chooses what runs the GEMM: the fastest cuBLASLt algorithm, against
  /// the skinny kernel when the shape, precision and operand alignments let
  /// it contest; an error only when neither can run it.
  Status chooseKernel(const cellpack::GemmStep &step,
                      const GemmOperands &operands, cudaStream_t stream,
                      int candidates);
  Status chooseAlgorithm(cudaStream_t stream, int candidates);
  /// Times each skinny kernel that takes m rows at a few split counts
  /// against `cublasMicros` (negative: no cuBLASLt algorithm runs) and
  /// keeps the fastest when it beats cuBLASLt.
  Status contestSkinny(cudaStream_t stream, float cublasMicros);
  /// Runs the chosen skinny kernel and cuBLASLt on the same A (test values
  /// when A is scratch) and compares their D; on a difference beyond fp32
  /// (or TF32) rounding, cuBLASLt runs the GEMM and the description says
  /// why. A guard against a kernel bug the tests did not meet on this GPU.
  Status checkSkinny(cudaStream_t stream, const GemmOperands &operands,
                     cellpack::Precision precision);
  Status enqueueSkinny(cudaStream_t stream,
                       const GatheredRows *gathered = nullptr) const;

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
  int64_t m_ = 0, n_ = 0, k_ = 0;
  // The skinny kernel, when it won: which, its launch, k-split partial sums
  // and per-tile arrival counters, and the bias (vector) or C (full) it
  // adds.
  SkinnyGemmKernel skinny_;
  SkinnyGemmVariantKernel skinnyKernel_{};
  bool useSkinny_ = false;
  int splits_ = 1, kPerSplit_ = 0;
  unsigned grid_ = 0;
  const void *skinnyBias_ = nullptr, *skinnyC_ = nullptr;
  float skinnyBeta_ = 0.0f;
  float cublasMicros_ = -1.0f; // the chosen algorithm's time, when timed
  DeviceBuffer partial_, counters_;
};

} // namespace cellrun::cuda

#endif // CELLRUN_BACKEND_CUDA_CUDAGEMM_H
