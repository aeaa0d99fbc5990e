//===- GatherFolds.cpp - Gathers a GEMM could read in place -------------===//
#include "artifact/GatherFolds.h"

#include "artifact/ElementIO.h"

using namespace cellrun;

namespace {
using cpu::overlapsWorkspace;

bool sameShape(const cellpack::ValueRef &x, const cellpack::ValueRef &y) {
  if (!x.shape() || !y.shape() || x.shape()->size() != 2 ||
      y.shape()->size() != 2)
    return false;
  return x.shape()->Get(0) == y.shape()->Get(0) &&
         x.shape()->Get(1) == y.shape()->Get(1);
}

/// The cell input `step` only gathers into `target`, or -1.
int64_t pureGatherInto(const cellpack::KernelStep &step,
                       const cellpack::ValueRef &target) {
  const cellpack::PortableRegion *region = step.region();
  if (!region || !region->ops() || region->ops()->size() != 1 ||
      region->num_inputs() != 1 || !step.inputs() ||
      step.inputs()->size() != 1 || !step.outputs() ||
      step.outputs()->size() != 1 || !step.input_access() ||
      step.input_access()->size() != 1 || !step.output_access() ||
      step.output_access()->size() != 1)
    return -1;
  const cellpack::PortableOp &op = *region->ops()->Get(0);
  bool identity = op.opcode() == cellpack::OpCode::Identity && op.operands() &&
                  op.operands()->size() == 1 && op.operands()->Get(0) == 0 &&
                  op.results() && op.results()->size() == 1 &&
                  region->results() && region->results()->size() == 1 &&
                  region->results()->Get(0) == op.results()->Get(0);
  const cellpack::ValueRef &in = *step.inputs()->Get(0);
  const cellpack::ValueRef &out = *step.outputs()->Get(0);
  if (!identity || in.kind() != cellpack::ValueKind::CellInput ||
      step.input_access()->Get(0) != cellpack::Access::Gather ||
      in.dtype() != cellpack::DType::F32 ||
      out.kind() != cellpack::ValueKind::Workspace ||
      step.output_access()->Get(0) != cellpack::Access::Dense ||
      out.dtype() != cellpack::DType::F32 ||
      target.kind() != cellpack::ValueKind::Workspace ||
      target.dtype() != cellpack::DType::F32 ||
      out.offset() != target.offset() || !sameShape(in, out) ||
      !sameShape(out, target))
    return -1;
  return in.index();
}

/// Whether a step other than `skipA` and `skipB` reads a byte of
/// [begin, end), or the GEMM `gemm` reads it as B or C.
bool readElsewhere(const cellpack::BatchPlan &plan, size_t skipA, size_t skipB,
                   const cellpack::GemmStep &gemm, uint64_t begin,
                   uint64_t end) {
  if (overlapsWorkspace(gemm.b(), begin, end) ||
      overlapsWorkspace(gemm.c(), begin, end))
    return true;
  for (size_t j = 0; j < plan.steps()->size(); ++j) {
    if (j == skipA || j == skipB)
      continue;
    const cellpack::TaskStep *other =
        plan.steps()->Get(static_cast<unsigned>(j));
    if (const cellpack::GemmStep *g = other->step_as_GemmStep()) {
      if (overlapsWorkspace(g->a(), begin, end) ||
          overlapsWorkspace(g->b(), begin, end) ||
          overlapsWorkspace(g->c(), begin, end))
        return true;
    } else if (const cellpack::KernelStep *k = other->step_as_KernelStep()) {
      if (k->inputs())
        for (const cellpack::ValueRef *ref : *k->inputs())
          if (overlapsWorkspace(ref, begin, end))
            return true;
    }
  }
  return false;
}
} // namespace

std::vector<GatherFold> cellrun::gatherFolds(const cellpack::BatchPlan &plan) {
  std::vector<GatherFold> folds;
  if (!plan.steps())
    return folds;
  for (size_t i = 1; i < plan.steps()->size(); ++i) {
    const cellpack::GemmStep *gemm =
        plan.steps()->Get(static_cast<unsigned>(i))->step_as_GemmStep();
    const cellpack::KernelStep *before =
        plan.steps()->Get(static_cast<unsigned>(i - 1))->step_as_KernelStep();
    if (!gemm || !before || gemm->trans_a() || !gemm->a())
      continue;
    int64_t input = pureGatherInto(*before, *gemm->a());
    uint64_t begin = gemm->a()->offset();
    if (input < 0 || readElsewhere(plan, i - 1, i, *gemm, begin,
                                   begin + cpu::valueBytes(*gemm->a())))
      continue;
    folds.push_back({i - 1, i, static_cast<uint32_t>(input)});
  }
  return folds;
}
