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

#include "base/FunctionRef.h"

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
  /// A kernel step run as the epilogue of the skinny GEMM step before it,
  /// (steps_[index - 1]), one kernel for both (cellpack::GemmEpilogue;
  /// CudaGemmEpilogue.cpp).
  struct Epilogue {
    cudaKernel_t kernel = nullptr;
    cellpack::SkinnyGemmLaunch geometry;
    DeviceBuffer partial, counters; // its k splits' sums, its tiles' counts
  };
  struct Step {
    std::unique_ptr<CudaGemm> gemm; // or
    Launch launch{};
    /// A gather left out: the GEMM after it reads the rows where they lie.
    bool folded = false;
    /// A GEMM reading A's rows in the pool of this cell input, or -1.
    int gatherInput = -1;
    /// A kernel step that also runs the GEMM step before it.
    std::unique_ptr<Epilogue> epilogue;
  };

  CudaTaskRunner(const CudaCell &cell, const cellpack::BatchPlan &plan)
      : cell_(cell), plan_(plan) {}
  Result<void *> resolve(const cellpack::ValueRef &ref,
                         const DeviceTaskViews *views) const;
  Status launch(const Launch &launch, int64_t rows,
                const DeviceTaskViews &views, cudaStream_t stream) const;
  /// The kernel step's arguments for a task of `rows` rows, as
  /// cudaLaunchKernel takes them (`args` point into `pointers` and at
  /// `rowCount`; `pointers` has a place for every parameter).
  Status stepArguments(const Launch &launch, int64_t rows,
                       const DeviceTaskViews &views,
                       std::vector<const void *> &pointers,
                       std::vector<void *> &args, int &rowCount) const;
  /// The GEMM step's A as a task reads it: the task's rows in a pool when
  /// the gather before it was folded, else null.
  Result<GatheredRows> gatheredA(const Step &gemm, int64_t rows,
                                 const DeviceTaskViews &views) const;
  /// Runs each kernel step that lists a GEMM-and-epilogue kernel in one
  /// launch with the skinny GEMM before it, where that is safe and faster
  /// (timed on scratch pools; CELL_CUDA_EPILOGUE=fused or =separate
  /// decides instead of the clock) and its outputs there are those of the
  /// two launches apart (a guard against a kernel bug the tests did not
  /// meet on this GPU). Only a broken device is an error.
  Status fuseEpilogues(cudaStream_t stream);
  /// The fp32 outputs of kernel step `step` for the plan's rows in `views`
  /// (scratch pools whose task rows are pool rows 0..batch-1), after
  /// `enqueue` and the stream have finished; with `poison`, NaN before it.
  Result<std::vector<std::vector<float>>>
  stepOutputs(const cellpack::KernelStep &step, const DeviceTaskViews &views,
              FunctionRef<Status()> enqueue, cudaStream_t stream,
              bool poison) const;
  /// Launches kernel step `index` with the GEMM before it.
  Status launchEpilogue(size_t index, int64_t rows,
                        const DeviceTaskViews &views,
                        cudaStream_t stream) const;
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
