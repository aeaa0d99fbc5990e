//===- CpuTaskRunner.cpp - One batched task of a cell on the CPU ---------===//
#include "CpuTaskRunner.h"

#include "ElementIO.h"

#include <cblas.h>
#include <string>

using namespace cellrun;
using namespace cellrun::cpu;

static constexpr size_t kWorkspaceAlignment = 256;

Result<std::unique_ptr<CpuTaskRunner>>
CpuTaskRunner::create(const cellpack::CellType &cell,
                      const cellpack::BatchPlan &plan, KernelLauncher launcher,
                      ThreadPool *pool) {
  std::unique_ptr<CpuTaskRunner> runner(new CpuTaskRunner(cell, plan));
  runner->launcher_ = std::move(launcher);
  runner->pool_ = pool;
  unsigned workers = pool ? pool->size() : 1;
  runner->workspaceStorage_.resize(plan.workspace_bytes() +
                                   kWorkspaceAlignment);
  auto address = reinterpret_cast<uintptr_t>(runner->workspaceStorage_.data());
  runner->workspace_ = runner->workspaceStorage_.data() +
                       (kWorkspaceAlignment - address % kWorkspaceAlignment) %
                           kWorkspaceAlignment;
  if (plan.steps())
    for (const cellpack::TaskStep *step : *plan.steps()) {
      if (const cellpack::GemmStep *gemm = step->step_as_GemmStep())
        if (gemm->trans_a() || gemm->a()->dtype() != cellpack::DType::F32 ||
            gemm->b()->dtype() != cellpack::DType::F32 ||
            gemm->d()->dtype() != cellpack::DType::F32)
          return Status(StatusCode::Unsupported,
                        "cell '" + cell.name()->str() +
                            "': the CPU backend runs fp32 GEMMs with an "
                            "untransposed A");
      const cellpack::KernelStep *kernelStep = step->step_as_KernelStep();
      std::vector<std::unique_ptr<RegionInterpreter>> perWorker;
      for (unsigned w = 0; kernelStep && !runner->launcher_ && w < workers;
           ++w) {
        auto prepared = RegionInterpreter::create(*kernelStep);
        if (!prepared.ok())
          return prepared.status();
        perWorker.push_back(std::move(prepared).value());
      }
      runner->kernels_.push_back(std::move(perWorker));
    }
  return runner;
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
    if (ref.index() >= inputs.size())
      break;
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

Status CpuTaskRunner::runGemm(const cellpack::GemmStep &gemm, int64_t rows,
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
  auto *out = static_cast<float *>(const_cast<void *>(d.value()));
  float beta = 0.0f;
  if (gemm.c()) {
    auto c = resolve(*gemm.c(), inputs, outputs, &rowsC);
    if (!c.ok())
      return c.status();
    const auto *bias = static_cast<const float *>(c.value());
    bool perColumn = gemm.c()->shape() && gemm.c()->shape()->size() == 1;
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

Status CpuTaskRunner::run(int64_t rows, const std::vector<PoolView> &inputs,
                          const std::vector<PoolView> &outputs) {
  if (rows < 1 || rows > plan_.batch_size())
    return Status(StatusCode::OutOfRange,
                  "a task of " + std::to_string(rows) +
                      " rows does not fit the batch-" +
                      std::to_string(plan_.batch_size()) + " plan");
  for (size_t i = 0; i < kernels_.size(); ++i) {
    const cellpack::TaskStep *step = plan_.steps()->Get(i);
    if (const cellpack::GemmStep *gemm = step->step_as_GemmStep()) {
      if (Status status = runGemm(*gemm, rows, inputs, outputs); !status.isOk())
        return status;
      continue;
    }
    const cellpack::KernelStep &kernel = *step->step_as_KernelStep();
    std::vector<InputView> in;
    std::vector<OutputView> out;
    for (const cellpack::ValueRef *ref : *kernel.inputs()) {
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
      out.push_back({const_cast<void *>(data.value()), refRows});
    }
    if (launcher_) {
      if (Status status = launcher_(kernel, rows, in, out); !status.isOk())
        return status;
      continue;
    }
    if (!pool_) {
      if (Status status = kernels_[i][0]->run(rows, in, out); !status.isOk())
        return status;
      continue;
    }
    // Each worker runs its own interpreter over its share of the rows.
    std::vector<Status> statuses(pool_->size());
    pool_->parallelFor(rows, [&](unsigned worker, int64_t begin, int64_t end) {
      statuses[worker] = kernels_[i][worker]->runRows(begin, end, in, out);
    });
    for (const Status &status : statuses)
      if (!status.isOk())
        return status;
  }
  return Status::ok();
}
