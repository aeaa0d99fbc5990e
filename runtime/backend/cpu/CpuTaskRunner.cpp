//===- CpuTaskRunner.cpp - One batched task of a cell on the CPU ---------===//
#include "CpuTaskRunner.h"

#include "artifact/ElementIO.h"

#include <algorithm>
#include <cblas.h>
#include <cstdlib>
#include <mutex>
#include <string>

using namespace cellrun;
using namespace cellrun::cpu;

/// Rows of an element-wise kernel the workers take at least at a time
/// (ThreadPool's guided chunks: larger takes first, this at the end).
static constexpr int64_t kRowsPerChunk = 16;

/// OpenBLAS starts its thread server when the program loads (its own
/// constructor, of default priority) and those threads spin for about 0.1 s
/// before they sleep: a core taken from the engine just as serving starts
/// (measured on the 2-core VM: 6-13% of `cellrun run`'s row-step time).
/// Asking for one thread before that constructor runs means none is made;
/// a process that sets OPENBLAS_NUM_THREADS itself keeps its choice, and
/// openblas_set_num_threads can still add threads later (task_bench does).
__attribute__((constructor(101))) static void startBlasWithoutThreads() {
  setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/0);
}

void cellrun::cpu::keepBlasOnCallingThread() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

Result<std::unique_ptr<CpuTaskRunner>>
CpuTaskRunner::create(const cellpack::CellType &cell,
                      const cellpack::BatchPlan &plan, KernelLauncher launcher,
                      ThreadPool *pool, PackedWeightCache *weights) {
  std::unique_ptr<CpuTaskRunner> runner(new CpuTaskRunner(cell, plan));
  runner->launcher_ = std::move(launcher);
  runner->pool_ = pool;
  if (!weights) {
    runner->ownWeights_ = std::make_unique<PackedWeightCache>();
    weights = runner->ownWeights_.get();
  }
  runner->weights_ = weights;
  unsigned workers = pool ? pool->size() : 1;
  // Zero and backed as it is written (ZeroPages.h): a plan for a batch
  // size that never runs costs no memory (every plan of a hidden-1024
  // model zeroed its workspace at start: 40 MB a worker). Page-aligned.
  runner->workspaceStorage_ = ZeroPages(plan.workspace_bytes());
  if (!runner->workspaceStorage_.valid())
    return Status(StatusCode::ResourceExhausted,
                  "cell '" + cell.name()->str() + "': no memory for the " +
                      std::to_string(plan.workspace_bytes()) +
                      "-byte workspace of its " +
                      std::to_string(plan.batch_size()) + "-row plan");
  runner->workspace_ = runner->workspaceStorage_.data();
  if (plan.steps())
    for (const cellpack::TaskStep *step : *plan.steps()) {
      const cellpack::GemmStep *gemm = step->step_as_GemmStep();
      if (gemm &&
          (gemm->trans_a() || gemm->a()->dtype() != cellpack::DType::F32 ||
           gemm->b()->dtype() != cellpack::DType::F32 ||
           gemm->d()->dtype() != cellpack::DType::F32))
        return Status(StatusCode::Unsupported,
                      "cell '" + cell.name()->str() +
                          "': the CPU backend runs fp32 GEMMs with an "
                          "untransposed A");
      PackedB packed;
      if (gemm && gemm->precision() == cellpack::Precision::BF16) {
        // bf16 products, fp32 sums (--precision=bf16), as on the GPU.
        if (const float *source =
                runner->weightFloats(*gemm->b(), gemm->k(), gemm->n()))
          packed.bf16 =
              &weights->getBf16(source, gemm->k(), gemm->n(), gemm->trans_b());
      } else if (gemm) {
        packed.fp32 = runner->packedWeight(*gemm->b(), gemm->k(), gemm->n(),
                                           gemm->trans_b());
      }
      runner->packedGemms_.push_back(packed);
      const cellpack::KernelStep *kernelStep = step->step_as_KernelStep();
      std::vector<std::unique_ptr<RegionInterpreter>> perWorker;
      if (kernelStep && !runner->launcher_) {
        RegionOptions options = runner->regionOptions(*kernelStep);
        for (unsigned w = 0; w < workers; ++w) {
          auto prepared = RegionInterpreter::create(*kernelStep, options);
          if (!prepared.ok())
            return prepared.status();
          perWorker.push_back(std::move(prepared).value());
          if (perWorker.back()->hasGemm())
            break; // one call runs every row; its GEMM uses the pool
        }
      }
      runner->kernels_.push_back(std::move(perWorker));
    }
  runner->foldRowGathers();
  runner->foldGemmsIntoGates();
  runner->findInputsReadInPlace();
  runner->findOutputsCopiedByStep();
  return runner;
}

void CpuTaskRunner::findOutputsCopiedByStep() {
  uint32_t outputs = cell_.outputs() ? cell_.outputs()->size() : 0;
  copyBytes_.assign(outputs, 0);
  if (launcher_ || !plan_.steps())
    return;
  std::vector<uint32_t> writers(outputs, 0);
  auto count = [&](const cellpack::ValueRef *ref) {
    if (ref && ref->kind() == cellpack::ValueKind::CellOutput &&
        ref->index() < outputs)
      ++writers[ref->index()];
  };
  for (const cellpack::TaskStep *step : *plan_.steps()) {
    if (const cellpack::GemmStep *gemm = step->step_as_GemmStep()) {
      count(gemm->d());
      continue;
    }
    const cellpack::KernelStep *kernel = step->step_as_KernelStep();
    if (kernel && kernel->outputs())
      for (const cellpack::ValueRef *ref : *kernel->outputs())
        count(ref);
  }
  for (const cellpack::TaskStep *step : *plan_.steps()) {
    const cellpack::KernelStep *kernel = step->step_as_KernelStep();
    if (!kernel || !kernel->outputs())
      continue;
    for (const cellpack::ValueRef *ref : *kernel->outputs()) {
      if (ref->kind() != cellpack::ValueKind::CellOutput ||
          ref->index() >= outputs || writers[ref->index()] != 1 ||
          !ref->shape() || ref->shape()->size() < 1)
        continue;
      size_t elements = 1;
      for (uint32_t d = 1; d < ref->shape()->size(); ++d)
        elements *= static_cast<size_t>(ref->shape()->Get(d));
      copyBytes_[ref->index()] = elements * elementSize(ref->dtype());
    }
  }
}

void CpuTaskRunner::findInputsReadInPlace() {
  readsInPlace_.assign(cell_.inputs() ? cell_.inputs()->size() : 0, 1);
  auto notInPlace = [&](const cellpack::ValueRef *ref) {
    if (ref && ref->kind() == cellpack::ValueKind::CellInput &&
        ref->index() < readsInPlace_.size())
      readsInPlace_[ref->index()] = 0;
  };
  size_t count = plan_.steps() ? plan_.steps()->size() : 0;
  for (size_t i = 0; i < count; ++i) {
    if (folded_[i])
      continue; // the GEMM after it reads the rows (gatheredRows_)
    const cellpack::TaskStep *step = plan_.steps()->Get(i);
    if (const cellpack::GemmStep *gemm = step->step_as_GemmStep()) {
      for (const cellpack::ValueRef *ref :
           {gemm->a(), gemm->b(), gemm->c(), gemm->d()})
        notInPlace(ref);
      continue;
    }
    const cellpack::KernelStep *kernel = step->step_as_KernelStep();
    for (const auto *refs : {kernel->inputs(), kernel->outputs()})
      for (uint32_t r = 0; refs && r < refs->size(); ++r)
        if (launcher_ || refs == kernel->outputs() || !kernel->input_access() ||
            r >= kernel->input_access()->size() ||
            kernel->input_access()->Get(r) != cellpack::Access::Gather)
          notInPlace(refs->Get(r)); // only row-indexed inputs by row
  }
}

const float *CpuTaskRunner::weightFloats(const cellpack::ValueRef &ref,
                                         int64_t k, int64_t n) const {
  if (ref.kind() != cellpack::ValueKind::Weight ||
      ref.dtype() != cellpack::DType::F32 || !cell_.weights() ||
      ref.index() >= cell_.weights()->size() || k <= 0 || n <= 0)
    return nullptr;
  const cellpack::Weight *weight = cell_.weights()->Get(ref.index());
  if (!weight->data() ||
      weight->data()->size() < static_cast<uint64_t>(k * n) * sizeof(float))
    return nullptr;
  return reinterpret_cast<const float *>(weight->data()->data());
}

const PackedMatrix *CpuTaskRunner::packedWeight(const cellpack::ValueRef &ref,
                                                int64_t k, int64_t n,
                                                bool transposed) {
  const float *source = weightFloats(ref, k, n);
  return source ? &weights_->get(source, k, n, transposed) : nullptr;
}

/// Interpreter options for a kernel step: the plan's batch size, the pool,
/// and the packed weights its GEMMs read as B.
RegionOptions CpuTaskRunner::regionOptions(const cellpack::KernelStep &kernel) {
  RegionOptions options;
  options.maxRows = plan_.batch_size();
  options.pool = pool_;
  const cellpack::PortableRegion *region = kernel.region();
  if (!region || !region->ops() || !region->values() || !kernel.inputs() ||
      kernel.inputs()->size() != region->num_inputs())
    return options; // the interpreter reports what is malformed
  options.packedInputs.assign(region->num_inputs(), nullptr);
  for (const cellpack::PortableOp *op : *region->ops()) {
    if (op->opcode() != cellpack::OpCode::Gemm || !op->operands() ||
        op->operands()->size() < 2)
      continue;
    uint32_t id = op->operands()->Get(1);
    if (id >= region->num_inputs() || id >= region->values()->size())
      continue;
    const flatbuffers::Vector<int64_t> *shape =
        region->values()->Get(id)->shape();
    if (!shape || shape->size() != 2)
      continue;
    int64_t rows = shape->Get(0), columns = shape->Get(1);
    bool transposed = op->trans_b();
    options.packedInputs[id] =
        packedWeight(*kernel.inputs()->Get(id), transposed ? columns : rows,
                     transposed ? rows : columns, transposed);
  }
  return options;
}

Result<const void *> CpuTaskRunner::resolve(
    const cellpack::ValueRef &ref, const std::vector<PoolView> &inputs,
    const std::vector<PoolView> &outputs, const int32_t **rows) {
  *rows = nullptr;
  switch (ref.kind()) {
  case cellpack::ValueKind::Workspace:
    return static_cast<const void *>(workspace_ + ref.offset());
  case cellpack::ValueKind::Weight: {
    const cellpack::Weight *weight = cell_.weights()->Get(ref.index());
    return static_cast<const void *>(weight->data()->data());
  }
  case cellpack::ValueKind::CellInput:
    if (ref.index() >= inputs.size() || inputs[ref.index()].rowData)
      break; // rows in place only where the steps read them so
    *rows = inputs[ref.index()].rows;
    return static_cast<const void *>(inputs[ref.index()].data);
  case cellpack::ValueKind::CellOutput:
    if (ref.index() >= outputs.size())
      break;
    *rows = outputs[ref.index()].rows;
    return static_cast<const void *>(outputs[ref.index()].data);
  }
  return Status(StatusCode::InvalidArgument,
                "cell '" + cell_.name()->str() +
                    "': a step refers to a cell input or output the task "
                    "did not provide");
}

Status CpuTaskRunner::runGemm(const cellpack::GemmStep &gemm, size_t step,
                              const PackedB &packed, int64_t rows,
                              const std::vector<PoolView> &inputs,
                              const std::vector<PoolView> &outputs) {
  const int32_t *rowsA, *rowsB, *rowsD, *rowsC;
  auto a = resolve(*gemm.a(), inputs, outputs, &rowsA);
  auto b = resolve(*gemm.b(), inputs, outputs, &rowsB);
  auto d = resolve(*gemm.d(), inputs, outputs, &rowsD);
  if (!a.ok() || !b.ok() || !d.ok())
    return !a.ok() ? a.status() : !b.ok() ? b.status() : d.status();
  if (rowsA || rowsB || rowsD)
    return Status(StatusCode::Unsupported,
                  "cell '" + cell_.name()->str() +
                      "': the CPU backend runs GEMMs over dense rows only");
  // Only the task's rows: the padding rows of A and D are left alone.
  int64_t m = rows, n = gemm.n(), k = gemm.k();
  const float *const *gathered = nullptr;
  if (int32_t input = gatheredInput_[step]; input >= 0) {
    // A's rows where they lie in the cell input's pool (foldRowGathers).
    gatherRows(inputs[static_cast<uint32_t>(input)], m, k);
    gathered = gatheredRows_.data();
  }
  auto *out = static_cast<float *>(const_cast<void *>(d.value()));
  const float *bias = nullptr;
  bool perColumn = true;
  if (gemm.c()) {
    auto c = resolve(*gemm.c(), inputs, outputs, &rowsC);
    if (!c.ok())
      return c.status();
    bias = static_cast<const float *>(c.value());
    perColumn = gemm.c()->shape() && gemm.c()->shape()->size() == 1;
  }
  if (packed.fp32 || packed.bf16) {
    GemmEpilogue epilogue;
    epilogue.alpha = gemm.alpha();
    epilogue.beta = gemm.beta();
    epilogue.bias = bias;
    epilogue.biasStride = perColumn ? 0 : n;
    if (packed.bf16)
      packedGemmBf16(static_cast<const float *>(a.value()), k, m, *packed.bf16,
                     epilogue, out, n, pool_);
    else if (gathered)
      packedGemmGathered(gathered, m, *packed.fp32, epilogue, out, n, pool_);
    else
      packedGemm(static_cast<const float *>(a.value()), k, m, *packed.fp32,
                 epilogue, out, n, pool_);
    return Status::ok();
  }
  // B is not a weight: OpenBLAS.
  float beta = 0.0f;
  if (bias) {
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n; ++j)
        out[r * n + j] = gemm.beta() * (perColumn ? bias[j] : bias[r * n + j]);
    beta = 1.0f;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans,
              gemm.trans_b() ? CblasTrans : CblasNoTrans, m, n, k, gemm.alpha(),
              static_cast<const float *>(a.value()), k,
              static_cast<const float *>(b.value()), gemm.trans_b() ? k : n,
              beta, out, n);
  return Status::ok();
}

void CpuTaskRunner::gatherRows(const PoolView &view, int64_t rows,
                               int64_t floats) {
  gatheredRows_.resize(static_cast<size_t>(rows));
  const float *base = static_cast<const float *>(view.data);
  for (int64_t r = 0; r < rows; ++r)
    gatheredRows_[r] = view.rowData
                           ? static_cast<const float *>(view.rowData[r])
                           : base + (view.rows ? view.rows[r] : r) * floats;
}

Status CpuTaskRunner::run(int64_t rows, const std::vector<PoolView> &inputs,
                          const std::vector<PoolView> &outputs) {
  if (rows < 1 || rows > plan_.batch_size())
    return Status(StatusCode::OutOfRange,
                  "a task of " + std::to_string(rows) +
                      " rows does not fit the batch-" +
                      std::to_string(plan_.batch_size()) + " plan");
  for (size_t i = 0; i < kernels_.size(); ++i) {
    const cellpack::TaskStep *step = plan_.steps()->Get(i);
    if (folded_[i])
      continue; // the next step, a GEMM, reads the rows itself
    if (const cellpack::GemmStep *gemm = step->step_as_GemmStep()) {
      if (gemmInGates_[i])
        continue; // the next step's gates make its rows
      if (Status status =
              runGemm(*gemm, i, packedGemms_[i], rows, inputs, outputs);
          !status.isOk())
        return status;
      continue;
    }
    const cellpack::KernelStep &kernel = *step->step_as_KernelStep();
    if (i > 0 && gemmInGates_[i - 1]) { // the GEMM before it: its A's rows
      gatherRows(inputs[static_cast<uint32_t>(gatheredInput_[i - 1])], rows,
                 plan_.steps()->Get(i - 1)->step_as_GemmStep()->k());
      for (auto &interpreter : kernels_[i])
        interpreter->setGemmRows(gatheredRows_.data());
    }
    std::vector<InputView> in;
    std::vector<OutputView> out;
    for (const cellpack::ValueRef *ref : *kernel.inputs()) {
      if (ref->kind() == cellpack::ValueKind::CellInput &&
          ref->index() < inputs.size() && inputs[ref->index()].rowData) {
        in.push_back({nullptr, nullptr, inputs[ref->index()].rowData});
        continue;
      }
      const int32_t *refRows;
      auto data = resolve(*ref, inputs, outputs, &refRows);
      if (!data.ok())
        return data.status();
      in.push_back({data.value(), refRows});
    }
    for (const cellpack::ValueRef *ref : *kernel.outputs()) {
      const int32_t *refRows;
      auto data = resolve(*ref, inputs, outputs, &refRows);
      if (!data.ok())
        return data.status();
      void *const *copyTo = nullptr;
      if (ref->kind() == cellpack::ValueKind::CellOutput &&
          copyBytes(ref->index()))
        copyTo = outputs[ref->index()].copyTo;
      out.push_back({const_cast<void *>(data.value()), refRows, copyTo});
    }
    if (launcher_) {
      if (Status status = launcher_(kernel, rows, in, out); !status.isOk())
        return status;
      continue;
    }
    // Few rows of little work run on this thread alone (as small GEMMs do):
    // a hand-off to the pool costs more, and wakes workers that then spin.
    constexpr int64_t kMinParallelBytes = 64 * 1024;
    if (!pool_ || kernels_[i].size() == 1 ||
        rows * kernels_[i][0]->bytesPerRow() < kMinParallelBytes) {
      if (Status status = kernels_[i][0]->run(rows, in, out); !status.isOk())
        return status;
      continue;
    }
    // Each worker runs its own interpreter over the chunks of rows it
    // takes (a worker still waking up takes fewer); its first error stays.
    std::vector<Status> statuses(pool_->size());
    pool_->parallelFor(
        rows,
        [&](unsigned worker, int64_t begin, int64_t end) {
          Status status = kernels_[i][worker]->runRows(begin, end, in, out);
          if (!status.isOk() && statuses[worker].isOk())
            statuses[worker] = std::move(status);
        },
        kRowsPerChunk);
    for (const Status &status : statuses)
      if (!status.isOk())
        return status;
  }
  return Status::ok();
}
