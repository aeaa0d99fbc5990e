//===- FuseStep.cpp - cell-fuse-step -------------------------------------===//
//
// Merges the kernels and GEMMs of a small-batch step into one cell.fused:
// the prologue bodies, the GEMMs and the epilogue body are cloned, in that
// order, into a single body over the union of their external operands.
//
//===----------------------------------------------------------------------===//
#include "cell/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::cell {
#define GEN_PASS_DEF_FUSESTEP
#include "cell/Transforms/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

namespace {
/// The parts of a step that fits one kernel.
struct StepShape {
  SmallVector<FusedOp> prologues;
  SmallVector<GemmOp> gemms;
  FusedOp epilogue;
};
} // namespace

static Access accessOf(ArrayAttr list, unsigned index) {
  return list[index].cast<AccessAttr>().getValue();
}

/// Recognizes `prologue* -> gemm+ -> epilogue` where every value that
/// crosses between them stays inside the step.
static std::optional<StepShape> matchStep(CellOp cell) {
  StepShape shape;
  for (Operation &op : cell.getBody().front().without_terminator()) {
    if (isa<ConstantOp>(op))
      continue;
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      if (shape.epilogue || gemm.getTransA() ||
          !gemm.getB().getDefiningOp<ConstantOp>() ||
          (gemm.getC() && !gemm.getC().getDefiningOp<ConstantOp>()))
        return std::nullopt;
      shape.gemms.push_back(gemm);
      continue;
    }
    auto fused = dyn_cast<FusedOp>(op);
    if (!fused || shape.epilogue)
      return std::nullopt;
    if (shape.gemms.empty())
      shape.prologues.push_back(fused);
    else
      shape.epilogue = fused;
  }
  if (!shape.epilogue || shape.gemms.empty())
    return std::nullopt;
  for (unsigned i = 0; i < shape.epilogue.getNumResults(); ++i)
    if (accessOf(shape.epilogue.getResultAccess(), i) != Access::Scatter)
      return std::nullopt;
  // A kernel that reduces rows runs a block a row in passes (a layer norm
  // before or after the GEMM): with the GEMM inside, each pass would compute
  // its dot products again. Such steps keep their GEMMs.
  bool reduces = false;
  auto findReductions = [&](FusedOp fused) {
    fused.getBody().walk([&](Operation *op) {
      reduces |= isa<ReduceMeanOp, ReduceSumOp, ReduceMaxOp>(op);
    });
  };
  findReductions(shape.epilogue);
  for (FusedOp prologue : shape.prologues)
    findReductions(prologue);
  if (reduces)
    return std::nullopt;
  // Prologue results feed GEMMs only; GEMM results feed the epilogue only.
  for (FusedOp prologue : shape.prologues)
    for (Operation *user : prologue->getUsers())
      if (!isa<GemmOp>(user))
        return std::nullopt;
  for (GemmOp gemm : shape.gemms)
    for (Operation *user : gemm->getUsers())
      if (user != shape.epilogue)
        return std::nullopt;
  return shape;
}

static void fuseStep(CellOp cell, StepShape shape) {
  MLIRContext *context = cell.getContext();
  llvm::SetVector<Value> inputs;
  SmallVector<Attribute> access;
  auto addInput = [&](Value value, Access kind) {
    if (inputs.insert(value))
      access.push_back(AccessAttr::get(context, kind));
  };
  auto addFusedInputs = [&](FusedOp fused) {
    for (auto [index, input] : llvm::enumerate(fused.getInputs())) {
      Access kind = accessOf(fused.getOperandAccess(), index);
      if (kind != Access::Dense) // dense inputs come from inside the step
        addInput(input, kind);
    }
  };
  for (FusedOp prologue : shape.prologues)
    addFusedInputs(prologue);
  for (GemmOp gemm : shape.gemms) {
    if (auto argument = gemm.getA().dyn_cast<BlockArgument>())
      addInput(argument, Access::Gather);
    addInput(gemm.getB(), Access::Broadcast);
    if (gemm.getC())
      addInput(gemm.getC(), Access::Broadcast);
  }
  addFusedInputs(shape.epilogue);

  OpBuilder builder(shape.epilogue);
  auto step = builder.create<FusedOp>(
      shape.epilogue.getLoc(), shape.epilogue.getResultTypes(),
      inputs.getArrayRef(), builder.getArrayAttr(access),
      shape.epilogue.getResultAccess());
  Block &body = step.getBody().front();
  IRMapping outer; // values of the cell -> values of the new body
  for (auto [input, argument] : llvm::zip(inputs, body.getArguments()))
    outer.map(input, argument);
  OpBuilder inner = OpBuilder::atBlockBegin(&body);
  // Clones a kernel's body, its arguments bound to what feeds them; returns
  // what it yields.
  auto inlineBody = [&](FusedOp fused) {
    IRMapping mapping;
    for (auto [input, argument] :
         llvm::zip(fused.getInputs(), fused.getBody().getArguments()))
      mapping.map(argument, outer.lookup(input));
    for (Operation &op : fused.getBody().front().without_terminator())
      inner.clone(op, mapping);
    SmallVector<Value> yielded;
    for (Value value : fused.getBody().front().getTerminator()->getOperands())
      yielded.push_back(mapping.lookup(value));
    return yielded;
  };
  for (FusedOp prologue : shape.prologues)
    for (auto [result, value] :
         llvm::zip(prologue.getResults(), inlineBody(prologue)))
      outer.map(result, value);
  for (GemmOp gemm : shape.gemms)
    outer.map(gemm.getResult(), inner.clone(*gemm, outer)->getResult(0));
  SmallVector<Value> results = inlineBody(shape.epilogue);
  inner.create<YieldOp>(step.getLoc(), results);

  shape.epilogue.replaceAllUsesWith(step.getResults());
  shape.epilogue.erase();
  for (GemmOp gemm : llvm::reverse(shape.gemms))
    gemm.erase();
  for (FusedOp prologue : llvm::reverse(shape.prologues))
    prologue.erase();
}

/// Bytes of the weights (B operands) of the step's GEMMs.
static int64_t weightBytes(const StepShape &shape) {
  int64_t bytes = 0;
  for (GemmOp gemm : shape.gemms) {
    auto type = gemm.getB().getType().cast<RankedTensorType>();
    bytes += type.getNumElements() *
             std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  }
  return bytes;
}

namespace {
struct FuseStepPass : mlir::cell::impl::FuseStepBase<FuseStepPass> {
  using FuseStepBase::FuseStepBase;
  void runOnOperation() override {
    for (CellOp cell : getOperation().getOps<CellOp>()) {
      auto batch =
          cell->getAttrOfType<IntegerAttr>(CellDialect::kBatchSizeAttr);
      if (!batch || batch.getInt() > maxBatch)
        continue;
      std::optional<StepShape> shape = matchStep(cell);
      if (shape && weightBytes(*shape) <= maxWeightBytes)
        fuseStep(cell, *shape);
    }
  }
};
} // namespace
