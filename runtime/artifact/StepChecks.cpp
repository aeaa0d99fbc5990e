//===- StepChecks.cpp - Semantic checks of a plan's steps -----------------===//
//
// The checks of one batch plan's GEMM and kernel steps: every ValueRef
// inside its buffer (workspace range, weight/input/output index), GEMM
// shapes matching m/n/k, kernels present in the cell's code, kernel
// parameters naming existing operands with the right access, and portable
// regions whose value indices are in range.
//
//===----------------------------------------------------------------------===//
#include "ArtifactChecks.h"
#include "CheckHelpers.h"

#include "KernelGrid.h"
#include "SkinnyGemmKernel.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace cellrun::detail {
namespace {

using namespace cellpack;
using namespace checks;

class StepChecker {
public:
  StepChecker(const CellType &cell, const BatchPlan &plan,
              const KernelNameSet &kernelNames)
      : cell_(&cell), plan_(&plan), kernelNames_(kernelNames) {}

  Status checkStep(const TaskStep &step, const std::string &where) {
    // The Verifier skips the table of an unknown union member: never
    // touch step() before the type is known.
    switch (step.step_type()) {
    case Step::GemmStep:
      return checkGemm(*step.step_as_GemmStep(), where + " (gemm)");
    case Step::KernelStep: {
      const KernelStep &kernel = *step.step_as_KernelStep();
      return checkKernel(kernel,
                         where + " (kernel " + quoted(kernel.name()) + ")");
    }
    case Step::NONE:
      return fail(where + ": the step is empty");
    }
    return fail(where + ": unknown step kind " + enumNumber(step.step_type()));
  }

private:
  Status checkRef(const ValueRef *ref, const std::string &where) {
    if (!ref)
      return fail(where + ": missing");
    uint64_t bytes;
    std::string problem;
    if (!denseBytes(ref->shape(), ref->dtype(), bytes, problem))
      return fail(where + ": " + problem);
    auto outOfRange = [&](const char *what, uint32_t count) {
      return fail(
          where + ": " + what + " index " + std::to_string(ref->index()) +
          " is out of range (the cell has " + std::to_string(count) + ")");
    };
    switch (ref->kind()) {
    case ValueKind::Workspace: {
      uint64_t end;
      if (__builtin_add_overflow(ref->offset(), bytes, &end) ||
          end > plan_->workspace_bytes())
        return fail(where + ": workspace offset " +
                    std::to_string(ref->offset()) + " + " +
                    std::to_string(bytes) + " bytes exceeds workspace_bytes " +
                    std::to_string(plan_->workspace_bytes()));
      workspaceEnd_ = std::max(workspaceEnd_, end);
      return Status::ok();
    }
    case ValueKind::Weight: {
      if (ref->index() >= sizeOf(cell_->weights()))
        return outOfRange("weight", sizeOf(cell_->weights()));
      const Weight *weight = cell_->weights()->Get(ref->index());
      if (ref->dtype() != weight->dtype() || bytes > sizeOf(weight->data()))
        return fail(where + ": " + describe(ref, bytes) + " but weight " +
                    quoted(weight->name()) + " is " +
                    EnumNameDType(weight->dtype()) + " of " +
                    std::to_string(sizeOf(weight->data())) + " bytes");
      // The same elements in another shape would index a table wrongly.
      if (formatShape(ref->shape()) != formatShape(weight->shape()))
        return fail(where + ": " + describe(ref, bytes) + " but weight " +
                    quoted(weight->name()) + " has the shape " +
                    formatShape(weight->shape()));
      return Status::ok();
    }
    case ValueKind::CellInput:
      if (ref->index() >= sizeOf(cell_->inputs()))
        return outOfRange("cell input", sizeOf(cell_->inputs()));
      return checkRows(ref, bytes, *cell_->inputs()->Get(ref->index()),
                       "cell input", where);
    case ValueKind::CellOutput:
      if (ref->index() >= sizeOf(cell_->outputs()))
        return outOfRange("cell output", sizeOf(cell_->outputs()));
      return checkRows(ref, bytes, *cell_->outputs()->Get(ref->index()),
                       "cell output", where);
    }
    return fail(where + ": unknown value kind " + enumNumber(ref->kind()));
  }

  static std::string describe(const ValueRef *ref, uint64_t bytes) {
    return std::string("it reads ") + EnumNameDType(ref->dtype()) + " " +
           formatShape(ref->shape()) + " (" + std::to_string(bytes) + " bytes)";
  }

  /// A ValueRef into a state pool: the plan's batch of rows of exactly the
  /// pool's rows (type and bytes a row), so that no step reads or writes
  /// past a row.
  Status checkRows(const ValueRef *ref, uint64_t bytes, const TensorSpec &spec,
                   const char *what, const std::string &where) {
    uint64_t rowBytes;
    std::string problem;
    if (!denseBytes(spec.row_shape(), spec.dtype(), rowBytes, problem))
      return fail(where + ": " + what + " " + quoted(spec.name()) + ": " +
                  problem);
    uint64_t batch = plan_->batch_size(), poolBytes;
    bool fits = ref->dtype() == spec.dtype() && sizeOf(ref->shape()) >= 1 &&
                static_cast<uint64_t>(ref->shape()->Get(0)) == batch &&
                !__builtin_mul_overflow(batch, rowBytes, &poolBytes) &&
                bytes == poolBytes;
    if (!fits)
      return fail(where + ": " + describe(ref, bytes) + " but " + what + " " +
                  quoted(spec.name()) + " holds " + std::to_string(batch) +
                  " rows of " + EnumNameDType(spec.dtype()) + " " +
                  formatShape(spec.row_shape()));
    return Status::ok();
  }

  Status checkGemm(const GemmStep &gemm, const std::string &where) {
    if (!isKnown(gemm.precision(), EnumValuesPrecision()))
      return fail(where + ": unknown precision " +
                  enumNumber(gemm.precision()));
    const std::pair<const char *, const ValueRef *> operands[] = {
        {"a", gemm.a()}, {"b", gemm.b()}, {"c", gemm.c()}, {"d", gemm.d()}};
    for (auto [name, ref] : operands) {
      bool optional = name[0] == 'c';
      if (ref || !optional)
        if (Status s = checkRef(ref, where + ": " + name); !s.isOk())
          return s;
    }
    int64_t m = gemm.m(), n = gemm.n(), k = gemm.k();
    auto mismatch = [&](const char *name, const ValueRef *ref,
                        const std::string &dims, const std::string &need) {
      return fail(where + ": " + name + " has shape " +
                  formatShape(ref->shape()) + " but " + dims + " need " + need);
    };
    std::string ta = gemm.trans_a() ? "true" : "false";
    std::string tb = gemm.trans_b() ? "true" : "false";
    Dims needA = gemm.trans_a() ? Dims{k, m} : Dims{m, k};
    Dims needB = gemm.trans_b() ? Dims{n, k} : Dims{k, n};
    if (!shapeIs(gemm.a()->shape(), needA))
      return mismatch("a", gemm.a(),
                      "m=" + std::to_string(m) + ", k=" + std::to_string(k) +
                          ", trans_a=" + ta,
                      formatDims(needA));
    if (!shapeIs(gemm.b()->shape(), needB))
      return mismatch("b", gemm.b(),
                      "k=" + std::to_string(k) + ", n=" + std::to_string(n) +
                          ", trans_b=" + tb,
                      formatDims(needB));
    if (gemm.c() && !shapeIs(gemm.c()->shape(), {n}) &&
        !shapeIs(gemm.c()->shape(), {m, n}))
      return mismatch("c", gemm.c(),
                      "m=" + std::to_string(m) + ", n=" + std::to_string(n),
                      formatDims({n}) + " or " + formatDims({m, n}));
    if (!shapeIs(gemm.d()->shape(), {m, n}))
      return mismatch("d", gemm.d(),
                      "m=" + std::to_string(m) + ", n=" + std::to_string(n),
                      formatDims({m, n}));
    return Status::ok();
  }

  Status checkKernel(const KernelStep &kernel, const std::string &where) {
    if (!kernelNames_.count(kernel.name()->string_view()))
      return fail(where + ": the kernel is not among the kernel_names of " +
                  "the cell's code");
    if (!isKnown(kernel.shape(), EnumValuesKernelShape()))
      return fail(where + ": unknown kernel shape " +
                  enumNumber(kernel.shape()));
    if (kernel.block_size() == 0)
      return fail(where + ": block_size is 0");
    // A block a row reduces through a 256-slot shared buffer, halving the
    // active threads each round: a power of two, whole warps.
    uint32_t blockSize = kernel.block_size();
    if (kernel.shape() == cellpack::KernelShape::RowReduction &&
        (blockSize > 256 || blockSize < 32 || (blockSize & (blockSize - 1))))
      return fail(where + ": a row kernel's block_size " +
                  std::to_string(blockSize) +
                  " is not a power of two from 32 to 256");
    // A row's blocks; the grid (rows times them) stays far below CUDA's
    // limit at any batch size an artifact holds.
    uint32_t blocksPerRow = kernel.blocks_per_row();
    if (kernel.shape() == cellpack::KernelShape::RowReduction
            ? blocksPerRow < 1 || blocksPerRow > cellpack::kMaxBlocksPerRow
            : blocksPerRow != 1)
      return fail(where + ": blocks_per_row " + std::to_string(blocksPerRow) +
                  (kernel.shape() == cellpack::KernelShape::RowReduction
                       ? " is not from 1 to " +
                             std::to_string(cellpack::kMaxBlocksPerRow)
                       : " for an element-wise kernel (1)"));
    // CUDA takes at most 2^31 - 1 blocks a grid.
    if (uint64_t(plan_->batch_size()) * blocksPerRow > uint64_t(INT32_MAX))
      return fail(where + ": " + std::to_string(blocksPerRow) +
                  " blocks a row at batch size " +
                  std::to_string(plan_->batch_size()) +
                  " are more than a CUDA grid takes (2^31 - 1)");
    if (Status s = checkOperands(kernel.inputs(), kernel.input_access(),
                                 "input", where);
        !s.isOk())
      return s;
    if (Status s = checkOperands(kernel.outputs(), kernel.output_access(),
                                 "output", where);
        !s.isOk())
      return s;
    if (Status s = checkParams(kernel, where); !s.isOk())
      return s;
    if (const GemmEpilogue *epilogue = kernel.gemm_epilogue()) {
      // What the CUDA backend checks against the GEMM before the step when
      // it considers the kernel; here, what it names.
      if (!kernelNames_.count(epilogue->kernel()->string_view()))
        return fail(where + ": its GEMM epilogue kernel " +
                    quoted(epilogue->kernel()) +
                    " is not among the kernel_names of the cell's code");
      if (epilogue->segments() < 1 ||
          epilogue->segments() > static_cast<uint32_t>(kSkinnyGemmMaxSegments))
        return fail(where + ": its GEMM epilogue has " +
                    std::to_string(epilogue->segments()) + " segments (1 to " +
                    std::to_string(kSkinnyGemmMaxSegments) + ")");
      if (epilogue->gemm_input() >= sizeOf(kernel.inputs()))
        return fail(where + ": its GEMM epilogue reads input " +
                    std::to_string(epilogue->gemm_input()) + " of " +
                    std::to_string(sizeOf(kernel.inputs())));
    }
    return checkRegion(*kernel.region(), where + ": region");
  }

  Status checkOperands(const TableVector<ValueRef> *refs,
                       const flatbuffers::Vector<Access> *access,
                       const std::string &what, const std::string &where) {
    if (sizeOf(access) != sizeOf(refs))
      return fail(where + ": " + std::to_string(sizeOf(refs)) + " " + what +
                  "s but " + std::to_string(sizeOf(access)) + " " + what +
                  "_access entries");
    for (uint32_t i = 0; i < sizeOf(refs); ++i) {
      std::string operand = where + ": " + what + " " + std::to_string(i);
      if (!isKnown(access->Get(i), EnumValuesAccess()))
        return fail(operand + ": unknown access " + enumNumber(access->Get(i)));
      if (Status s = checkRef(refs->Get(i), operand); !s.isOk())
        return s;
    }
    return Status::ok();
  }

  Status checkParams(const KernelStep &kernel, const std::string &where) {
    uint32_t inputs = sizeOf(kernel.inputs());
    uint32_t outputs = sizeOf(kernel.outputs());
    for (uint32_t i = 0; i < sizeOf(kernel.params()); ++i) {
      const KernelParam *param = kernel.params()->Get(i);
      std::string paramWhere = where + ": param " + std::to_string(i);
      ParamKind kind = param->kind();
      if (!isKnown(kind, EnumValuesParamKind()))
        return fail(paramWhere + ": unknown kind " + enumNumber(kind));
      if (kind == ParamKind::RowCount)
        continue;
      bool isInput = kind == ParamKind::Input || kind == ParamKind::InputRows;
      uint32_t count = isInput ? inputs : outputs;
      const char *what = isInput ? "input" : "output";
      std::string paramName = std::string(EnumNameParamKind(kind)) + " of " +
                              what + " " + std::to_string(param->index());
      if (param->index() >= count)
        return fail(paramWhere + " (" + paramName +
                    ") is out of range (the kernel has " +
                    std::to_string(count) + " " + what + "s)");
      if (kind == ParamKind::InputRows &&
          kernel.input_access()->Get(param->index()) != Access::Gather)
        return fail(paramWhere + " (" + paramName + "): the input is " +
                    EnumNameAccess(kernel.input_access()->Get(param->index())) +
                    ", not Gather");
      if (kind == ParamKind::OutputRows &&
          kernel.output_access()->Get(param->index()) != Access::Scatter)
        return fail(
            paramWhere + " (" + paramName + "): the output is " +
            EnumNameAccess(kernel.output_access()->Get(param->index())) +
            ", not Scatter");
    }
    return Status::ok();
  }

  Status checkRegion(const PortableRegion &region, const std::string &where) {
    uint32_t values = sizeOf(region.values());
    std::string valuesText =
        " (the region has " + std::to_string(values) + " values)";
    if (region.num_inputs() > values)
      return fail(where + ": num_inputs " +
                  std::to_string(region.num_inputs()) + " exceeds" +
                  valuesText);
    for (uint32_t i = 0; i < values; ++i) {
      const PortableValue *value = region.values()->Get(i);
      uint64_t bytes;
      std::string problem;
      if (!denseBytes(value->shape(), value->dtype(), bytes, problem))
        return fail(where + ": value " + std::to_string(i) + ": " + problem);
    }
    auto checkIndices = [&](const flatbuffers::Vector<uint32_t> *indices,
                            const std::string &what) {
      for (uint32_t j = 0; j < sizeOf(indices); ++j)
        if (indices->Get(j) >= values)
          return fail(where + ": " + what + " " + std::to_string(j) +
                      " is value " + std::to_string(indices->Get(j)) +
                      ", out of range" + valuesText);
      return Status::ok();
    };
    for (uint32_t i = 0; i < sizeOf(region.ops()); ++i) {
      const PortableOp *op = region.ops()->Get(i);
      std::string opWhere = "op " + std::to_string(i);
      if (!isKnown(op->opcode(), EnumValuesOpCode()))
        return fail(where + ": " + opWhere + ": unknown opcode " +
                    enumNumber(op->opcode()));
      opWhere += std::string(" (") + EnumNameOpCode(op->opcode()) + ")";
      for (const I64Vector *attribute : {op->sizes(), op->axes(), op->starts(),
                                         op->ends(), op->steps(), op->perm()})
        if (!isAligned(attribute))
          return fail(where + ": " + opWhere +
                      ": an attribute is not 8-byte aligned in the file");
      if (Status s = checkIndices(op->operands(), opWhere + " operand");
          !s.isOk())
        return s;
      if (Status s = checkIndices(op->results(), opWhere + " result");
          !s.isOk())
        return s;
    }
    return checkIndices(region.results(), "result");
  }

public:
  /// The end of the last workspace byte a step uses.
  uint64_t workspaceEnd() const { return workspaceEnd_; }

private:
  const CellType *cell_;
  const BatchPlan *plan_;
  uint64_t workspaceEnd_ = 0;
  const KernelNameSet &kernelNames_;
};

} // namespace

Status checkPlanSteps(const CellType &cell, const BatchPlan &plan,
                      const KernelNameSet &kernelNames,
                      const std::string &where) {
  StepChecker checker(cell, plan, kernelNames);
  for (uint32_t i = 0; plan.steps() && i < plan.steps()->size(); ++i)
    if (Status s = checker.checkStep(*plan.steps()->Get(i),
                                     where + ", step " + std::to_string(i));
        !s.isOk())
      return s;
  // The executor allocates workspace_bytes per plan: no more than the steps
  // use, rounded up to cellc's 256-byte buffer alignment.
  constexpr uint64_t kSlack = 256;
  if (plan.workspace_bytes() > checker.workspaceEnd() + kSlack)
    return fail(where + ": workspace_bytes " +
                std::to_string(plan.workspace_bytes()) + " exceeds the " +
                std::to_string(checker.workspaceEnd()) +
                " bytes its steps use (plus " + std::to_string(kSlack) +
                " of alignment)");
  return Status::ok();
}

} // namespace cellrun::detail
