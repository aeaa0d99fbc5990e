//===- CudaTaskRunner.h - One batch plan of a cell on a stream -*- C++ -*-===//
//
// The CUDA counterpart of CpuTaskRunner: the steps of one batch plan, GEMMs
// through cuBLASLt (CudaGemm) and fused kernels launched from the artifact's
// parameter lists with its launch geometry, all enqueued on one stream
// without waiting. The runner owns the plan's device workspace; tasks on one
// stream run in order, so consecutive tasks share it safely.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CUDA_CUDATASKRUNNER_H
#define CELLRUN_BACKEND_CUDA_CUDATASKRUNNER_H

#include "CudaCell.h"
#include "CudaGemm.h"

#include <memory>
#include <vector>

namespace cellrun::cuda {

/// Where a task's tensors are on the device: the pool of every cell input
/// and output, and the task's row indices (batch-size int32 per input, one
/// block after another, then likewise per output; padding entries unused).
struct DeviceTaskViews {
  std::vector<void *> inputs;
  std::vector<void *> outputs;
  const int32_t *inputRows = nullptr;
  const int32_t *outputRows = nullptr;
};

/// Blocks of a kernel step for `rows` rows (one per row for a row
/// reduction, else ceil(rows * row_width / block_size)).
int64_t kernelGridSize(const cellpack::KernelStep &step, int64_t rows);

class CudaTaskRunner {
public:
  /// Prepares `plan` of `cell`. `gemmWorkspace` is cuBLASLt's scratch for
  /// work on `stream`; the GEMMs' algorithms are timed on `stream` here,
  /// the skinny kernel's k splits sized for `multiprocessors`.
  static Result<std::unique_ptr<CudaTaskRunner>>
  create(const CudaCell &cell, const cellpack::BatchPlan &plan,
         cublasLtHandle_t handle, void *gemmWorkspace,
         size_t gemmWorkspaceBytes, cudaStream_t stream, int multiprocessors);

  /// Enqueues the plan for `rows` active rows (1 <= rows <= batch size).
  Status enqueue(int64_t rows, const DeviceTaskViews &views,
                 cudaStream_t stream) const;

  uint32_t batchSize() const { return plan_.batch_size(); }
  /// One line per GEMM: its shape and chosen algorithm.
  std::vector<std::string> gemmDescriptions() const;

private:
  struct Launch {
    const cellpack::KernelStep *step;
    cudaKernel_t kernel;
  };
  struct Step {
    std::unique_ptr<CudaGemm> gemm; // or
    Launch launch{};
    /// A gather left out: the GEMM after it reads the rows where they lie.
    bool folded = false;
    /// A GEMM reading A's rows in the pool of this cell input, or -1.
    int gatherInput = -1;
  };

  CudaTaskRunner(const CudaCell &cell, const cellpack::BatchPlan &plan)
      : cell_(cell), plan_(plan) {}
  Result<void *> resolve(const cellpack::ValueRef &ref,
                         const DeviceTaskViews *views) const;
  Status launch(const Launch &launch, int64_t rows,
                const DeviceTaskViews &views, cudaStream_t stream) const;
  /// Leaves out a kernel step that only gathers a state pool's rows into
  /// the A of the GEMM after it, when that GEMM's kernel reads them where
  /// they lie (the skinny kernels that gather) and nothing else reads the
  /// gathered copy.
  void foldGathers();

  const CudaCell &cell_;
  const cellpack::BatchPlan &plan_;
  DeviceBuffer workspace_;
  std::vector<Step> steps_;
};

} // namespace cellrun::cuda

#endif // CELLRUN_BACKEND_CUDA_CUDATASKRUNNER_H
