//===- CudaGemmEpilogue.cpp - A GEMM and the kernel after it, one launch --===//
//
// CudaTaskRunner's use of the GEMM-and-epilogue kernels cellc writes for
// small batches (cellpack::GemmEpilogue): where a kernel step lists one, the
// GEMM step right before it won its contest with the skinny kernels, the
// step reads that GEMM's D, and none of the step's workspace outputs
// overlaps the GEMM's A, C or D (blocks that finish early write their
// outputs while others still read), the runner times the kernel at the
// GEMM's k splits, half and twice them, against the two launches it
// replaces, on scratch pools of the plan's rows (values in [-1, 1), tokens
// 0), and keeps the faster if its outputs there are the two launches'. At the
// same k splits the GEMM adds in the same order either way; a different split
// count (as the skinny GEMM's own contest may choose) adds in a different
// order.
//
//===----------------------------------------------------------------------===//
#include "CudaTaskRunner.h"

#include "CudaCheck.h"
#include "CudaLaunch.h"
#include "CudaTiming.h"

#include "artifact/ElementIO.h"

#include "SkinnyGemmKernel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

using namespace cellrun;
using namespace cellrun::cuda;

namespace {

/// Device pools of a plan's rows for every cell input and output, and row
/// indices 0..batch-1 for each: what a timing or checking run reads and
/// writes. Float rows hold values in [-1, 1), the same on every load;
/// integer rows (tokens) zeros.
struct ScratchPools {
  std::vector<DeviceBuffer> buffers;
  DeviceBuffer rows;
  DeviceTaskViews views;
};

Result<ScratchPools> makeScratchPools(const cellpack::CellType &cell,
                                      uint32_t batch) {
  ScratchPools scratch;
  uint32_t state = 88172645u;
  auto addPools = [&](const auto *specs, std::vector<void *> &into) -> Status {
    if (!specs)
      return Status::ok();
    for (const cellpack::TensorSpec *spec : *specs) {
      size_t bytes = cpu::rowBytes(*spec);
      auto buffer = DeviceBuffer::allocate(bytes * batch);
      if (!buffer.ok())
        return buffer.status();
      if (spec->dtype() == cellpack::DType::F32) {
        std::vector<float> values(bytes * batch / sizeof(float));
        for (float &value : values)
          value = contestValue(state);
        CELL_TRY(uploadNow(buffer.value().data(), values.data(),
                           values.size() * sizeof(float)));
      }
      into.push_back(buffer.value().data());
      scratch.buffers.push_back(std::move(buffer).value());
    }
    return Status::ok();
  };
  CELL_TRY(addPools(cell.inputs(), scratch.views.inputs));
  CELL_TRY(addPools(cell.outputs(), scratch.views.outputs));
  size_t lists = scratch.views.inputs.size() + scratch.views.outputs.size();
  std::vector<int32_t> indices(std::max<size_t>(lists, 1) * batch);
  for (size_t i = 0; i < indices.size(); ++i)
    indices[i] = static_cast<int32_t>(i % batch);
  auto rows = DeviceBuffer::allocate(indices.size() * sizeof(int32_t));
  if (!rows.ok())
    return rows.status();
  scratch.rows = std::move(rows).value();
  CELL_TRY(uploadNow(scratch.rows.data(), indices.data(),
                     indices.size() * sizeof(int32_t)));
  auto *first = reinterpret_cast<const int32_t *>(scratch.rows.data());
  scratch.views.inputRows = first;
  scratch.views.outputRows = first + scratch.views.inputs.size() * batch;
  return scratch;
}

/// Why `kernel`, run as the epilogue of `gemm`, would write what the GEMM
/// still reads or writes (empty when it would not). A read where it lies
/// (`aFolded`) is not read in the workspace.
std::string workspaceClash(const cellpack::GemmStep &gemm,
                           const cellpack::KernelStep &kernel, bool aFolded) {
  if (!kernel.outputs())
    return "";
  for (const cellpack::ValueRef *output : *kernel.outputs()) {
    if (!output || output->kind() != cellpack::ValueKind::Workspace)
      continue;
    uint64_t begin = output->offset(), end = begin + cpu::valueBytes(*output);
    for (const cellpack::ValueRef *operand :
         {aFolded ? nullptr : gemm.a(), gemm.b(), gemm.c(), gemm.d()})
      if (cpu::overlapsWorkspace(operand, begin, end))
        return "its outputs share workspace with the GEMM's operands";
  }
  return "";
}

} // namespace

Status CudaTaskRunner::fuseEpilogues(cudaStream_t stream) {
  const char *forced = std::getenv("CELL_CUDA_EPILOGUE");
  bool forceFused = forced && std::strcmp(forced, "fused") == 0;
  bool forceSeparate = forced && std::strcmp(forced, "separate") == 0;
  std::optional<ScratchPools> scratch; // made when first timed
  uint32_t batch = plan_.batch_size();
  for (size_t index = 1; index < steps_.size(); ++index) {
    Step &step = steps_[index];
    Step &gemm = steps_[index - 1];
    const cellpack::GemmEpilogue *spec =
        step.launch.step ? step.launch.step->gemm_epilogue() : nullptr;
    if (!spec || step.folded || !gemm.gemm || !gemm.gemm->usesSkinny())
      continue; // none, or cuBLASLt runs the GEMM
    const cellpack::KernelStep &kernelStep = *step.launch.step;
    const cellpack::GemmStep &gemmStep =
        *plan_.steps()
             ->Get(static_cast<uint32_t>(index - 1))
             ->step_as_GemmStep();
    CudaGemm::SkinnyOperands operands = gemm.gemm->skinnyOperands();
    std::string why;
    void *stepD = nullptr;
    if (kernelStep.inputs() &&
        spec->gemm_input() < kernelStep.inputs()->size()) {
      auto address =
          resolve(*kernelStep.inputs()->Get(spec->gemm_input()), nullptr);
      if (address.ok())
        stepD = address.value();
    }
    if (forceSeparate)
      why = "CELL_CUDA_EPILOGUE=separate";
    else if (stepD != operands.d)
      why = "the step does not read the GEMM's result where it said";
    else if (!cellpack::skinnyGemmSegmentsFit(operands.n, spec->segments()) ||
             kernelStep.shape() != cellpack::KernelShape::Elementwise ||
             kernelStep.row_width() * 4 !=
                 operands.n / static_cast<int>(spec->segments()))
      why = "its segments do not fit the GEMM's columns";
    else
      why = workspaceClash(gemmStep, kernelStep, gemm.gatherInput >= 0);
    auto kernel = cell_.kernel(spec->kernel()->str());
    if (why.empty() && !kernel.ok())
      why = kernel.status().message();
    if (!why.empty()) {
      gemm.gemm->describe(", not with the step after it (" + why + ")");
      continue;
    }
    auto epilogue = std::make_unique<Epilogue>();
    epilogue->kernel = kernel.value();
    int segments = static_cast<int>(spec->segments());
    std::vector<cellpack::SkinnyGemmLaunch> candidates;
    for (int splits : {operands.splits, operands.splits * 2,
                       std::max(1, operands.splits / 2)}) {
      auto geometry =
          cellpack::skinnyGemmLaunch(operands.n, operands.k, splits, segments);
      if (std::none_of(candidates.begin(), candidates.end(),
                       [&](auto &c) { return c.splits == geometry.splits; }))
        candidates.push_back(geometry);
    }
    int maxSplits = 1;
    for (const auto &candidate : candidates)
      maxSplits = std::max(maxSplits, candidate.splits);
    auto partial =
        DeviceBuffer::allocate(static_cast<size_t>(maxSplits) * operands.m *
                               operands.n * sizeof(float));
    auto counters =
        DeviceBuffer::allocate(candidates[0].tiles * sizeof(unsigned));
    if (!partial.ok() || !counters.ok()) { // the two launches need neither
      gemm.gemm->describe(
          ", not with the step after it (" +
          (partial.ok() ? counters : partial).status().message() + ")");
      continue;
    }
    epilogue->partial = std::move(partial).value();
    epilogue->counters = std::move(counters).value();
    epilogue->geometry = candidates[0];
    step.epilogue = std::move(epilogue);
    std::string name = spec->kernel()->str();
    // Timed and checked on scratch pools of the plan's rows.
    if (!scratch) {
      auto made = makeScratchPools(cell_.cell(), batch);
      if (!made.ok()) {
        step.epilogue.reset();
        gemm.gemm->describe(", not with the step after it (no scratch pools "
                            "to try it on: " +
                            made.status().message() + ")");
        continue;
      }
      scratch = std::move(made).value();
    }
    const DeviceTaskViews &views = scratch->views;
    // The two launches the kernel replaces, and the kernel.
    auto apart = [&]() -> Status {
      auto gathered = gatheredA(gemm, batch, views);
      if (!gathered.ok())
        return gathered.status();
      CELL_TRY(gathered.value().data
                   ? gemm.gemm->enqueue(stream, &gathered.value())
                   : gemm.gemm->enqueue(stream));
      return launch(step.launch, batch, views, stream);
    };
    auto together = [&]() -> Status {
      return launchEpilogue(index, batch, views, stream);
    };
    Status tried = [&]() -> Status {
      std::string chosen = " (CELL_CUDA_EPILOGUE=fused)";
      if (!forceFused) {
        auto separate = timeEnqueuedMicros(stream, apart);
        if (!separate.ok())
          return separate.status();
        float best = -1.0f;
        cellpack::SkinnyGemmLaunch fastest = candidates[0];
        for (const auto &candidate : candidates) {
          step.epilogue->geometry = candidate;
          auto micros = timeEnqueuedMicros(stream, together);
          if (!micros.ok())
            return micros.status();
          if (best < 0.0f || micros.value() < best) {
            best = micros.value();
            fastest = candidate;
          }
        }
        step.epilogue->geometry = fastest;
        char text[200];
        std::snprintf(text, sizeof text,
                      " (%d k splits): %.1f us against %.1f us for the two "
                      "apart",
                      fastest.splits, best, separate.value());
        chosen = text;
        if (best >= separate.value()) {
          gemm.gemm->describe(", not with the step after it in " + name +
                              chosen);
          step.epilogue.reset();
          return Status::ok();
        }
      }
      // What it writes against what the two apart write, from NaN in its
      // outputs and in the GEMM's D (so an element it fails to write shows).
      auto want = stepOutputs(kernelStep, views, apart, stream, false);
      if (!want.ok())
        return want.status();
      auto poisonedTogether = [&]() -> Status {
        CELL_CUDA_TRY(cudaMemsetAsync(operands.d, 0xFF,
                                      static_cast<size_t>(operands.m) *
                                          operands.n * sizeof(float),
                                      stream));
        return together();
      };
      auto differs = [&]() -> Result<std::string> {
        auto got =
            stepOutputs(kernelStep, views, poisonedTogether, stream, true);
        if (!got.ok())
          return got.status();
        for (size_t o = 0; o < want.value().size(); ++o)
          for (size_t i = 0; i < want.value()[o].size(); ++i) {
            float expected = want.value()[o][i], value = got.value()[o][i];
            bool same = std::isnan(expected)
                            ? std::isnan(value)
                            : value == expected ||
                                  std::fabs(value - expected) <=
                                      1e-4f * (1.0f + std::fabs(expected));
            if (same)
              continue;
            char text[160];
            std::snprintf(text, sizeof text,
                          "output %zu element %zu: %g where the two apart "
                          "give %g",
                          o, i, value, expected);
            return std::string(text);
          }
        return std::string();
      };
      auto difference = differs();
      if (!difference.ok())
        return difference.status();
      if (!difference.value().empty() &&
          step.epilogue->geometry.splits != candidates[0].splits) {
        // Other k splits add D's products in another order: at the GEMM's
        // own, the sums are the two launches'.
        step.epilogue->geometry = candidates[0];
        difference = differs();
        if (!difference.ok())
          return difference.status();
        chosen += ", at the GEMM's " + std::to_string(candidates[0].splits) +
                  " k splits after a difference at others";
      }
      if (!difference.value().empty())
        return Status(StatusCode::Internal, difference.value());
      gemm.gemm->describe(", with the step after it in " + name + chosen);
      return Status::ok();
    }();
    if (!tried.isOk()) {
      cudaError_t sticky = cudaGetLastError();
      step.epilogue.reset();
      gemm.gemm->describe(", not with the step after it (" + name +
                          " failed: " + tried.message() + ")");
      if (sticky != cudaSuccess && cudaGetLastError() != cudaSuccess)
        return tried; // the device itself is broken
    }
  }
  return Status::ok();
}

Status CudaTaskRunner::launchEpilogue(size_t index, int64_t rows,
                                      const DeviceTaskViews &views,
                                      cudaStream_t stream) const {
  const Step &step = steps_[index];
  const Epilogue &epilogue = *step.epilogue;
  const Step &gemm = steps_[index - 1]; // its GEMM, right before it
  CudaGemm::SkinnyOperands operands = gemm.gemm->skinnyOperands();
  auto gathered = gatheredA(gemm, rows, views);
  if (!gathered.ok())
    return gathered.status();
  // With A's rows in a pool, only the task's rows (the padding rows'
  // indices are whatever the staging slot held).
  const void *a = gathered.value().data ? gathered.value().data : operands.a;
  const int32_t *aRows = gathered.value().rows;
  int m = gathered.value().data ? static_cast<int>(rows) : operands.m;
  void *partial = epilogue.partial.data(), *counters = epilogue.counters.data();
  int splits = epilogue.geometry.splits,
      kPerSplit = epilogue.geometry.kPerSplit;
  std::vector<const void *> pointers;
  std::vector<void *> stepArgs;
  int rowCount = 0;
  CELL_TRY(
      stepArguments(step.launch, rows, views, pointers, stepArgs, rowCount));
  // The skinny kernels' arguments (those that gather A), then the step's.
  std::vector<void *> args = {
      &a,          &aRows,          &operands.b,   &operands.bias,
      &operands.c, &operands.d,     &partial,      &counters,
      &m,          &operands.n,     &operands.k,   &splits,
      &kPerSplit,  &operands.alpha, &operands.beta};
  args.insert(args.end(), stepArgs.begin(), stepArgs.end());
  CELL_CUDA_TRY(launchKernel(epilogue.kernel, dim3(epilogue.geometry.grid()),
                             dim3(cellpack::kSkinnyGemmBlockSize), args.data(),
                             stream, cell_.launchesProgrammatically()));
  return Status::ok();
}

Result<std::vector<std::vector<float>>> CudaTaskRunner::stepOutputs(
    const cellpack::KernelStep &step, const DeviceTaskViews &views,
    FunctionRef<Status()> enqueue, cudaStream_t stream, bool poison) const {
  // Each fp32 output for the plan's rows: pool rows 0..batch-1 of a scratch
  // pool, or the workspace value.
  struct Region {
    void *address;
    size_t count;
  };
  std::vector<Region> regions;
  for (uint32_t o = 0; step.outputs() && o < step.outputs()->size(); ++o) {
    const cellpack::ValueRef &ref = *step.outputs()->Get(o);
    if (ref.dtype() != cellpack::DType::F32 || !ref.shape())
      continue;
    size_t count = 1;
    for (int64_t dim : *ref.shape())
      count *= static_cast<size_t>(std::max<int64_t>(dim, 0));
    auto address = resolve(ref, &views);
    if (!address.ok())
      return address.status();
    regions.push_back({address.value(), count});
  }
  if (poison)
    for (const Region &region : regions)
      CELL_CUDA_TRY(cudaMemsetAsync(region.address, 0xFF,
                                    region.count * sizeof(float), stream));
  CELL_TRY(enqueue());
  CELL_CUDA_TRY(cudaStreamSynchronize(stream));
  std::vector<std::vector<float>> outputs;
  for (const Region &region : regions) {
    std::vector<float> values(region.count);
    CELL_CUDA_TRY(cudaMemcpy(values.data(), region.address,
                             region.count * sizeof(float),
                             cudaMemcpyDeviceToHost));
    outputs.push_back(std::move(values));
  }
  return outputs;
}
