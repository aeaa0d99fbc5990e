//===- CpuTaskRunner.h - One batched task of a cell on the CPU -*- C++ -*-===//
//
// Runs the steps of one batch plan: GEMMs through the backend's packed GEMM
// (weights packed once, PackedWeights.h; OpenBLAS only for a GEMM whose B
// is not a weight), kernels through the region interpreter. Cell inputs are
// read from, and cell outputs written to, state pools through row-index
// vectors, as the CUDA kernels do; only the task's active rows are touched.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_CPUTASKRUNNER_H
#define CELLRUN_BACKEND_CPU_CPUTASKRUNNER_H

#include "PackedWeights.h"
#include "RegionInterpreter.h"
#include "ThreadPool.h"
#include "base/ZeroPages.h"

#include <functional>

namespace cellrun::cpu {

/// The pool that holds a cell input or output, and the task's rows in it
/// (rows[r] is the pool row of the task's row r).
struct PoolView {
  void *data = nullptr;
  const int32_t *rows = nullptr;
  /// A cell input read where its rows lie (the request's own data, not
  /// copied into a pool first): row r at rowData[r]; data and rows unused.
  /// Only for inputs the runner reads in place (readsInPlace).
  const void *const *rowData = nullptr;
  /// A cell output whose rows also go elsewhere (only for outputs the
  /// runner writes copies of, copyBytes): row r to copyTo[r] too, where
  /// that is not null, as the step that makes it stores it.
  void *const *copyTo = nullptr;
};

/// Runs one kernel step for `rows` rows in place of the region interpreter
/// (tests run the generated CUDA kernels on the CPU this way).
using KernelLauncher = std::function<Status(
    const cellpack::KernelStep &, int64_t rows, const std::vector<InputView> &,
    const std::vector<OutputView> &)>;

/// OpenBLAS (the GEMMs whose B is not a weight) on the calling thread
/// only: its own threads spin for a while after every call and would take
/// the engine's core; the backend's ThreadPool splits the work instead.
/// Called once per process by the executor (Executor::create).
void keepBlasOnCallingThread();

class CpuTaskRunner {
public:
  /// Prepares `plan` of `cell` (its weights stay in the artifact's buffer,
  /// which must outlive the runner). Kernels run through the region
  /// interpreter, or through `launcher` when one is given. A plan with a
  /// GEMM that is not fp32 with an untransposed A is refused here.
  /// With `pool`, the rows of each kernel step (or the columns of a GEMM)
  /// are split among its workers (the pool must outlive the runner).
  /// Weights are packed into `weights` (shared with the other plans of the
  /// executor; the runner keeps its own when none is given).
  static Result<std::unique_ptr<CpuTaskRunner>>
  create(const cellpack::CellType &cell, const cellpack::BatchPlan &plan,
         KernelLauncher launcher = {}, ThreadPool *pool = nullptr,
         PackedWeightCache *weights = nullptr);

  /// Runs the plan for `rows` active rows (1 <= rows <= batch size).
  /// `inputs`/`outputs` have one view per cell input/output.
  Status run(int64_t rows, const std::vector<PoolView> &inputs,
             const std::vector<PoolView> &outputs);

  uint32_t batchSize() const { return plan_.batch_size(); }
  /// GEMM steps run inside the next step's LSTM gates (foldGemmsIntoGates).
  int gemmsInGates() const;
  /// Whether cell input `input` may be given as PoolView::rowData: every
  /// step reads it row by row (the region interpreter, or a GEMM's A packed
  /// from its rows where they lie), none through a kernel launcher.
  bool readsInPlace(uint32_t input) const {
    return input < readsInPlace_.size() && readsInPlace_[input];
  }
  /// The bytes of a row of cell output `output` the step that makes it
  /// writes to PoolView::copyTo as well, when one kernel step of the region
  /// interpreter makes it (0 otherwise: copyTo is not read).
  size_t copyBytes(uint32_t output) const {
    return output < copyBytes_.size() ? copyBytes_[output] : 0;
  }

private:
  CpuTaskRunner(const cellpack::CellType &cell, const cellpack::BatchPlan &plan)
      : cell_(cell), plan_(plan) {}
  /// A GEMM step's B packed for the CPU GEMM: fp32, or bf16 for a step of
  /// bf16 precision (neither: B is not a weight, OpenBLAS runs it).
  struct PackedB {
    const PackedMatrix *fp32 = nullptr;
    const PackedMatrixBf16 *bf16 = nullptr;
  };
  Status runGemm(const cellpack::GemmStep &gemm, size_t step,
                 const PackedB &packed, int64_t rows,
                 const std::vector<PoolView> &inputs,
                 const std::vector<PoolView> &outputs);
  /// Which cell inputs readsInPlace (after foldRowGathers).
  void findInputsReadInPlace();
  /// Which cell outputs one interpreted kernel step makes (copyBytes).
  void findOutputsCopiedByStep();
  Result<const void *> resolve(const cellpack::ValueRef &ref,
                               const std::vector<PoolView> &inputs,
                               const std::vector<PoolView> &outputs,
                               const int32_t **rows);

  /// The packed form of `ref` as a GEMM's B of k x n, when it is a weight.
  const PackedMatrix *packedWeight(const cellpack::ValueRef &ref, int64_t k,
                                   int64_t n, bool transposed);
  /// The fp32 weight behind `ref` holding at least k x n values, or null.
  const float *weightFloats(const cellpack::ValueRef &ref, int64_t k,
                            int64_t n) const;
  RegionOptions regionOptions(const cellpack::KernelStep &kernel);
  /// Finds the kernel steps that only gather a cell input's rows into the
  /// workspace for the next step, a GEMM, to read as its A and nothing
  /// else reads: the GEMM then reads the rows where they lie in the pool
  /// (packedGemmGathered) and the copy is skipped.
  void foldRowGathers();
  /// Finds the GEMMs (after foldRowGathers, their A a cell input's rows)
  /// whose result only the next step's fused LSTM sum reads, in narrow rows
  /// of a weight product: the gates' loop then makes it (LstmGateGemm.cpp,
  /// on AVX-512) and the GEMM step is skipped.
  void foldGemmsIntoGates();
  /// Whether no step but `first` and the one after it reads or writes the
  /// workspace bytes [begin, end).
  bool othersLeaveAlone(size_t first, uint64_t begin, uint64_t end) const;
  /// gatheredRows_ = the addresses of `rows` rows of `floats` of `view`.
  void gatherRows(const PoolView &view, int64_t rows, int64_t floats);

  const cellpack::CellType &cell_;
  const cellpack::BatchPlan &plan_;
  std::unique_ptr<PackedWeightCache> ownWeights_;
  PackedWeightCache *weights_ = nullptr;
  /// Per step, the packed B of a GEMM step (none otherwise).
  std::vector<PackedB> packedGemms_;
  ZeroPages workspaceStorage_;
  uint8_t *workspace_ = nullptr;
  /// Per step, one interpreter per worker, or a single one for a region
  /// with a GEMM (empty for GEMM steps).
  std::vector<std::vector<std::unique_ptr<RegionInterpreter>>> kernels_;
  KernelLauncher launcher_;
  ThreadPool *pool_ = nullptr;
  /// Per step: a kernel folded into the GEMM after it (skipped), and for
  /// that GEMM the cell input whose rows are its A (-1: none), with the
  /// floats of a row; the rows' addresses for a task (reused).
  std::vector<uint8_t> folded_;
  std::vector<int32_t> gatheredInput_;
  std::vector<const float *> gatheredRows_;
  /// Per step: a GEMM made in the next step's gates (skipped; its A is
  /// the rows of cell input gatheredInput_ of it).
  std::vector<uint8_t> gemmInGates_;
  std::vector<uint8_t> readsInPlace_; // per cell input
  std::vector<size_t> copyBytes_;     // per cell output
};

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_CPUTASKRUNNER_H
