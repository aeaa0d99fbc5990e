//===- CpuTaskFolds.cpp - Steps of a plan the CPU runs inside others -----===//
//
// Two folds of a batch plan's steps, found once when a task runner is made
// (CpuTaskRunner.h): a kernel that only gathers a cell input's rows for the
// GEMM after it (the GEMM reads the rows where they lie), and a GEMM whose
// result only a fused LSTM's sum reads (the gates' loop makes it,
// LstmGateGemm.cpp). Each keeps the bits of the steps it replaces.
//
//===----------------------------------------------------------------------===//
#include "CpuTaskRunner.h"

#include "LstmGates.h"
#include "artifact/ElementIO.h"

#include <algorithm>

using namespace cellrun;
using namespace cellrun::cpu;

bool CpuTaskRunner::othersLeaveAlone(size_t first, uint64_t begin,
                                     uint64_t end) const {
  size_t count = plan_.steps() ? plan_.steps()->size() : 0;
  for (size_t j = 0; j < count; ++j) {
    if (j == first || j == first + 1)
      continue;
    const cellpack::TaskStep *step = plan_.steps()->Get(j);
    if (const cellpack::GemmStep *other = step->step_as_GemmStep()) {
      for (const cellpack::ValueRef *ref :
           {other->a(), other->b(), other->c(), other->d()})
        if (overlapsWorkspace(ref, begin, end))
          return false;
      continue;
    }
    const cellpack::KernelStep *other = step->step_as_KernelStep();
    for (const auto *refs : {other->inputs(), other->outputs()})
      for (uint32_t r = 0; refs && r < refs->size(); ++r)
        if (overlapsWorkspace(refs->Get(r), begin, end))
          return false;
  }
  return true;
}

void CpuTaskRunner::foldRowGathers() {
  size_t count = plan_.steps() ? plan_.steps()->size() : 0;
  folded_.assign(count, 0);
  gatheredInput_.assign(count, -1);
  if (launcher_) // the launcher's kernels are what its tests run
    return;
  for (size_t i = 0; i + 1 < count; ++i) {
    const cellpack::KernelStep *kernel =
        plan_.steps()->Get(i)->step_as_KernelStep();
    const cellpack::GemmStep *gemm =
        plan_.steps()->Get(i + 1)->step_as_GemmStep();
    if (!kernel || !gemm || !packedGemms_[i + 1].fp32)
      continue;
    const cellpack::PortableRegion *region = kernel->region();
    if (!kernel->inputs() || kernel->inputs()->size() != 1 ||
        !kernel->outputs() || kernel->outputs()->size() != 1 || !region ||
        region->num_inputs() != 1 || !region->ops() ||
        region->ops()->size() != 1 || !region->results() ||
        region->results()->size() != 1)
      continue;
    const cellpack::PortableOp *op = region->ops()->Get(0);
    const cellpack::ValueRef &in = *kernel->inputs()->Get(0);
    const cellpack::ValueRef &out = *kernel->outputs()->Get(0);
    const cellpack::ValueRef &a = *gemm->a();
    // One Identity of a cell input's fp32 rows into exactly what the GEMM
    // reads as A, rows of k floats.
    if (op->opcode() != cellpack::OpCode::Identity || !op->operands() ||
        op->operands()->size() != 1 || op->operands()->Get(0) != 0 ||
        !op->results() || op->results()->size() != 1 ||
        region->results()->Get(0) != op->results()->Get(0) ||
        in.kind() != cellpack::ValueKind::CellInput ||
        in.dtype() != cellpack::DType::F32 ||
        out.kind() != cellpack::ValueKind::Workspace ||
        a.kind() != cellpack::ValueKind::Workspace ||
        a.offset() != out.offset() || valueBytes(a) != valueBytes(out) ||
        gemm->trans_a() || !in.shape() || in.shape()->size() != 2 ||
        in.shape()->Get(1) != gemm->k() || valueBytes(in) != valueBytes(out))
      continue;
    // Nothing else reads or writes those workspace bytes.
    uint64_t begin = out.offset(), end = begin + valueBytes(out);
    bool alone = !overlapsWorkspace(gemm->b(), begin, end) &&
                 !overlapsWorkspace(gemm->c(), begin, end) &&
                 !overlapsWorkspace(gemm->d(), begin, end);
    if (!alone || !othersLeaveAlone(i, begin, end))
      continue;
    folded_[i] = 1;
    gatheredInput_[i + 1] = static_cast<int32_t>(in.index());
  }
}

void CpuTaskRunner::foldGemmsIntoGates() {
  size_t count = plan_.steps() ? plan_.steps()->size() : 0;
  gemmInGates_.assign(count, 0);
  // The loop's fast forms are AVX-512's and AVX2's (the portable one packs
  // A like the GEMM step: no gain).
  CpuIsa isa = detectCpuIsa();
  if (launcher_ || (isa != CpuIsa::Avx512 && isa != CpuIsa::Avx2))
    return;
  for (size_t i = 0; i + 1 < count; ++i) {
    const cellpack::GemmStep *gemm = plan_.steps()->Get(i)->step_as_GemmStep();
    const cellpack::KernelStep *kernel =
        plan_.steps()->Get(i + 1)->step_as_KernelStep();
    // A the rows of a cell input (foldRowGathers), B a packed fp32 weight,
    // narrow rows of D: the loop holds a part's rows in registers.
    if (!gemm || !kernel || !packedGemms_[i].fp32 || gatheredInput_[i] < 0 ||
        kernels_[i + 1].empty() || gemm->n() % kPanelColumns != 0 ||
        gemm->n() > kMaxGateGemmColumns || gemm->k() < 1 || gemm->k() > 256 ||
        !kernel->inputs() || !kernel->input_access())
      continue;
    const float *bias = nullptr;
    if (const cellpack::ValueRef *c = gemm->c()) {
      if (!c->shape() || c->shape()->size() != 1 ||
          c->shape()->Get(0) != gemm->n())
        continue; // a bias per row of D: not in the loop
      bias = weightFloats(*c, 1, gemm->n());
      if (!bias)
        continue;
    }
    // D: workspace bytes the kernel reads as one dense input and nothing
    // else touches.
    const cellpack::ValueRef &d = *gemm->d();
    if (d.kind() != cellpack::ValueKind::Workspace)
      continue;
    uint64_t begin = d.offset(), end = begin + valueBytes(d);
    int32_t input = -1;
    bool alone = true;
    for (uint32_t r = 0; alone && r < kernel->inputs()->size(); ++r) {
      const cellpack::ValueRef *ref = kernel->inputs()->Get(r);
      if (!overlapsWorkspace(ref, begin, end))
        continue;
      alone = input < 0 && ref->offset() == begin &&
              valueBytes(*ref) == valueBytes(d) &&
              r < kernel->input_access()->size() &&
              kernel->input_access()->Get(r) == cellpack::Access::Dense;
      input = static_cast<int32_t>(r);
    }
    for (uint32_t r = 0;
         alone && kernel->outputs() && r < kernel->outputs()->size(); ++r)
      alone = !overlapsWorkspace(kernel->outputs()->Get(r), begin, end);
    alone = alone && input >= 0 && !overlapsWorkspace(gemm->a(), begin, end);
    if (!alone || !othersLeaveAlone(i, begin, end))
      continue;
    uint32_t region = static_cast<uint32_t>(input);
    bool every = true;
    for (const auto &interpreter : kernels_[i + 1])
      every = every && interpreter->canFoldGemmInto(region, gemm->n());
    if (!every)
      continue;
    for (const auto &interpreter : kernels_[i + 1])
      interpreter->foldGemm(region, packedGemms_[i].fp32, gemm->alpha(),
                            gemm->beta(), bias);
    gemmInGates_[i] = 1;
  }
}

int CpuTaskRunner::gemmsInGates() const {
  return static_cast<int>(
      std::count(gemmInGates_.begin(), gemmInGates_.end(), 1));
}
