//===- CudaTaskRunner.cpp - One batch plan of a cell on a stream ----------===//
#include "CudaTaskRunner.h"

#include "CudaCheck.h"

#include "KernelGrid.h"
#include "artifact/GatherFolds.h"

#include "SkinnyGemmKernel.h"

#include <string>

using namespace cellrun;
using namespace cellrun::cuda;

Result<std::unique_ptr<CudaTaskRunner>>
CudaTaskRunner::create(const CudaCell &cell, const cellpack::BatchPlan &plan,
                       cublasLtHandle_t handle, void *gemmWorkspace,
                       size_t gemmWorkspaceBytes, cudaStream_t stream,
                       int multiprocessors) {
  std::unique_ptr<CudaTaskRunner> runner(new CudaTaskRunner(cell, plan));
  std::string where = "cell '" + cell.cell().name()->str() + "' at batch " +
                      std::to_string(plan.batch_size()) + ": ";
  auto workspace = DeviceBuffer::allocate(plan.workspace_bytes());
  if (!workspace.ok())
    return workspace.status();
  runner->workspace_ = std::move(workspace).value();
  if (!plan.steps())
    return runner;
  // Artifacts from before the skinny kernels run every GEMM on cuBLASLt;
  // those from before its variants have only the first.
  SkinnyGemmKernel skinny;
  skinny.multiprocessors = multiprocessors;
  skinny.programmatic = cell.launchesProgrammatically();
  for (const cellpack::SkinnyGemmVariant &variant :
       cellpack::kSkinnyGemmVariants)
    if (auto kernel = cell.kernel(variant.name); kernel.ok())
      skinny.variants.push_back({variant, kernel.value()});
  for (const cellpack::TaskStep *taskStep : *plan.steps()) {
    Step step;
    if (const cellpack::GemmStep *gemm = taskStep->step_as_GemmStep()) {
      GemmOperands operands;
      const cellpack::ValueRef *refs[] = {gemm->a(), gemm->b(), gemm->c(),
                                          gemm->d()};
      void *resolved[4] = {};
      for (int i = 0; i < 4; ++i) {
        if (!refs[i])
          continue;
        if (refs[i]->kind() == cellpack::ValueKind::CellInput ||
            refs[i]->kind() == cellpack::ValueKind::CellOutput)
          return Status(StatusCode::Unsupported,
                        where + "a GEMM operand is a state pool (GEMMs run "
                                "on dense rows)");
        auto address = runner->resolve(*refs[i], nullptr);
        if (!address.ok())
          return address.status();
        resolved[i] = address.value();
      }
      operands.a = resolved[0];
      operands.b = resolved[1];
      operands.c = resolved[2];
      operands.d = resolved[3];
      operands.aIsScratch = gemm->a()->kind() == cellpack::ValueKind::Workspace;
      if (gemm->c() && gemm->c()->kind() == cellpack::ValueKind::Weight)
        operands.hostBias = reinterpret_cast<const float *>(
            cell.cell().weights()->Get(gemm->c()->index())->data()->data());
      auto prepared =
          CudaGemm::create(handle, *gemm, plan.batch_size(), operands,
                           gemmWorkspace, gemmWorkspaceBytes, stream, skinny);
      if (!prepared.ok())
        return Status(prepared.status().code(),
                      where + prepared.status().message());
      step.gemm = std::move(prepared).value();
    } else {
      const cellpack::KernelStep *kernelStep = taskStep->step_as_KernelStep();
      auto kernel = cell.kernel(kernelStep->name()->str());
      if (!kernel.ok())
        return kernel.status();
      step.launch = {kernelStep, kernel.value()};
    }
    runner->steps_.push_back(std::move(step));
  }
  runner->foldGathers();
  CELL_TRY(runner->fuseEpilogues(stream));
  return runner;
}

void CudaTaskRunner::foldGathers() {
  for (const GatherFold &fold : gatherFolds(plan_)) {
    Step &gemm = steps_[fold.gemmStep];
    if (!gemm.gemm || !gemm.gemm->gathersA())
      continue; // cuBLASLt or a skinny kernel that reads A dense
    steps_[fold.gatherStep].folded = true;
    gemm.gatherInput = static_cast<int>(fold.cellInput);
  }
}

Result<void *> CudaTaskRunner::resolve(const cellpack::ValueRef &ref,
                                       const DeviceTaskViews *views) const {
  switch (ref.kind()) {
  case cellpack::ValueKind::Workspace:
    return static_cast<void *>(workspace_.data() + ref.offset());
  case cellpack::ValueKind::Weight:
    return const_cast<void *>(
        static_cast<const void *>(cell_.weight(ref.index())));
  case cellpack::ValueKind::CellInput:
    if (views && ref.index() < views->inputs.size())
      return views->inputs[ref.index()];
    break;
  case cellpack::ValueKind::CellOutput:
    if (views && ref.index() < views->outputs.size())
      return views->outputs[ref.index()];
    break;
  }
  return Status(StatusCode::InvalidArgument,
                "cell '" + cell_.cell().name()->str() +
                    "': a step refers to a cell input or output the task "
                    "did not provide");
}

Status CudaTaskRunner::stepArguments(const Launch &launch, int64_t rows,
                                     const DeviceTaskViews &views,
                                     std::vector<const void *> &pointers,
                                     std::vector<void *> &args,
                                     int &rowCount) const {
  const cellpack::KernelStep &step = *launch.step;
  uint32_t batch = plan_.batch_size();
  size_t count = step.params() ? step.params()->size() : 0;
  // cudaLaunchKernel takes the address of each parameter's value.
  pointers.assign(count, nullptr);
  args.assign(count, nullptr);
  rowCount = static_cast<int>(rows);
  for (size_t p = 0; p < count; ++p) {
    const cellpack::KernelParam *param = step.params()->Get(p);
    bool isInput = param->kind() == cellpack::ParamKind::Input ||
                   param->kind() == cellpack::ParamKind::InputRows;
    if (param->kind() == cellpack::ParamKind::RowCount) {
      args[p] = &rowCount;
      continue;
    }
    const auto *refs = isInput ? step.inputs() : step.outputs();
    if (!refs || param->index() >= refs->size())
      return Status(StatusCode::DataLoss,
                    "kernel " + step.name()->str() +
                        ": a parameter names a tensor the step lacks");
    const cellpack::ValueRef &ref = *refs->Get(param->index());
    if (param->kind() == cellpack::ParamKind::Input ||
        param->kind() == cellpack::ParamKind::Output) {
      auto address = resolve(ref, &views);
      if (!address.ok())
        return address.status();
      pointers[p] = address.value();
    } else if (ref.kind() == cellpack::ValueKind::CellInput) {
      pointers[p] = views.inputRows + static_cast<size_t>(ref.index()) * batch;
    } else if (ref.kind() == cellpack::ValueKind::CellOutput) {
      pointers[p] = views.outputRows + static_cast<size_t>(ref.index()) * batch;
    } else {
      return Status(StatusCode::DataLoss,
                    "kernel " + step.name()->str() +
                        ": row indices asked for a tensor that is not a "
                        "state pool");
    }
    args[p] = &pointers[p];
  }
  return Status::ok();
}

Status CudaTaskRunner::launch(const Launch &launch, int64_t rows,
                              const DeviceTaskViews &views,
                              cudaStream_t stream) const {
  std::vector<const void *> pointers;
  std::vector<void *> args;
  int rowCount = 0;
  CELL_TRY(stepArguments(launch, rows, views, pointers, args, rowCount));
  dim3 grid(
      static_cast<unsigned>(cellpack::kernelGridSize(*launch.step, rows)));
  dim3 block(launch.step->block_size());
  CELL_CUDA_TRY(launchKernel(launch.kernel, grid, block, args.data(), stream,
                             cell_.launchesProgrammatically()));
  return Status::ok();
}

Result<GatheredRows>
CudaTaskRunner::gatheredA(const Step &gemm, int64_t rows,
                          const DeviceTaskViews &views) const {
  if (gemm.gatherInput < 0)
    return GatheredRows{};
  size_t input = static_cast<size_t>(gemm.gatherInput);
  if (input >= views.inputs.size())
    return Status(StatusCode::InvalidArgument,
                  "cell '" + cell_.cell().name()->str() +
                      "': a GEMM reads a cell input the task did not provide");
  return GatheredRows{views.inputs[input],
                      views.inputRows + input * plan_.batch_size(), rows};
}

Status CudaTaskRunner::enqueue(int64_t rows, const DeviceTaskViews &views,
                               cudaStream_t stream) const {
  if (rows < 1 || rows > plan_.batch_size())
    return Status(StatusCode::OutOfRange,
                  "a task of " + std::to_string(rows) +
                      " rows does not fit the batch-" +
                      std::to_string(plan_.batch_size()) + " plan");
  for (size_t index = 0; index < steps_.size(); ++index) {
    const Step &step = steps_[index];
    if (step.folded ||
        (index + 1 < steps_.size() && steps_[index + 1].epilogue))
      continue; // the GEMM after it reads the rows where they lie; the
                // kernel after it runs the GEMM
    if (step.epilogue) {
      CELL_TRY(launchEpilogue(index, rows, views, stream));
    } else if (step.gemm && step.gatherInput >= 0) {
      auto gathered = gatheredA(step, rows, views);
      if (!gathered.ok())
        return gathered.status();
      CELL_TRY(step.gemm->enqueue(stream, &gathered.value()));
    } else if (step.gemm) {
      CELL_TRY(step.gemm->enqueue(stream));
    } else {
      CELL_TRY(launch(step.launch, rows, views, stream));
    }
  }
  return Status::ok();
}

std::vector<std::string> CudaTaskRunner::gemmDescriptions() const {
  std::vector<std::string> descriptions;
  for (const Step &step : steps_)
    if (step.gemm)
      descriptions.push_back(step.gemm->description());
  return descriptions;
}
