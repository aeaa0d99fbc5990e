//===- SpecializeBatch.cpp - cell-specialize-batch -----------------------===//
//
// Clones each cell once per supported batch size with the batch dimension
// made static, so that every later stage sees fixed shapes.
//
//===----------------------------------------------------------------------===//
#include "cell/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace mlir::cell {
#define GEN_PASS_DEF_SPECIALIZEBATCH
#include "cell/Transforms/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

/// `type` with its dynamic (batch) dimension set to `batch`.
static Type withBatch(Type type, int64_t batch) {
  auto tensor = type.dyn_cast<RankedTensorType>();
  if (!tensor)
    return type;
  SmallVector<int64_t> shape(tensor.getShape());
  for (int64_t &dim : shape)
    if (ShapedType::isDynamic(dim))
      dim = batch;
  return RankedTensorType::get(shape, tensor.getElementType());
}

static CellOp specialize(CellOp generic, int64_t batch, OpBuilder &builder) {
  auto clone = cast<CellOp>(builder.clone(*generic));
  std::string name =
      (generic.getSymName() + "_b" + std::to_string(batch)).str();
  clone.setSymName(name);
  clone->walk([&](Operation *op) {
    for (OpResult result : op->getResults())
      result.setType(withBatch(result.getType(), batch));
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          arg.setType(withBatch(arg.getType(), batch));
  });
  auto convert = [&](TypeRange types) {
    SmallVector<Type> converted;
    for (Type type : types)
      converted.push_back(withBatch(type, batch));
    return converted;
  };
  clone.setFunctionType(builder.getFunctionType(
      convert(generic.getArgumentTypes()), convert(generic.getResultTypes())));
  clone->removeAttr("cell.batch_sizes");
  clone->setAttr(CellDialect::kBatchSizeAttr, builder.getI64IntegerAttr(batch));
  clone->setAttr(CellDialect::kGenericAttr,
                 FlatSymbolRefAttr::get(generic.getSymNameAttr()));
  return clone;
}

namespace {
struct SpecializeBatchPass
    : mlir::cell::impl::SpecializeBatchBase<SpecializeBatchPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<CellOp> generics;
    for (CellOp cell : module.getOps<CellOp>())
      if (!cell->hasAttr(CellDialect::kBatchSizeAttr) &&
          cell->hasAttr("cell.batch_sizes"))
        generics.push_back(cell);
    for (CellOp generic : generics) {
      auto sizes =
          generic->getAttrOfType<DenseI64ArrayAttr>("cell.batch_sizes");
      if (!sizes) {
        generic.emitOpError("cell.batch_sizes must be an array of i64");
        return signalPassFailure();
      }
      OpBuilder builder(module.getContext());
      builder.setInsertionPointAfter(generic);
      for (int64_t batch : llvm::reverse(sizes.asArrayRef())) {
        if (batch < 1) {
          generic.emitOpError() << "batch size " << batch << " is not positive";
          return signalPassFailure();
        }
        if (SymbolTable::lookupSymbolIn(
                module,
                (generic.getSymName() + "_b" + std::to_string(batch)).str())) {
          generic.emitOpError() << "a symbol named like its batch-" << batch
                                << " copy exists already";
          return signalPassFailure();
        }
        specialize(generic, batch, builder);
        builder.setInsertionPointAfter(generic);
      }
    }
  }
};
} // namespace
