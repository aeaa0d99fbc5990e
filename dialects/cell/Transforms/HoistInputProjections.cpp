//===- HoistInputProjections.cpp - cell-hoist-input-projections ----------===//
//
// A chain cell's input projection, gemm(x, W, c) of a feature input x, does
// not depend on the state: every step of a request can compute it before
// the recurrence, as one large GEMM. This pass moves it into a cell of its
// own (x in, the product out) that the runtime runs over a request's steps
// when it admits the request; the step then takes the product's row in
// place of x and multiplies only its state by the recurrent weights. The
// product is the GEMM the step computed, so the step's result is unchanged
// where the GEMM's rows do not depend on the batch (the backends' GEMMs).
//
//===----------------------------------------------------------------------===//
#include "cell/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::cell {
#define GEN_PASS_DEF_HOISTINPUTPROJECTIONS
#include "cell/Transforms/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

namespace {

/// The projection of argument `index` of `cell`, if it has one this pass
/// can hoist: its only use is as the A of a GEMM whose B is a constant and
/// whose C is a constant per column, or none.
GemmOp hoistableProjection(CellOp cell, unsigned index) {
  if (cell.getArgumentRole(index) != Role::Input)
    return nullptr;
  BlockArgument input = cell.getBody().getArgument(index);
  auto type = input.getType().dyn_cast<RankedTensorType>();
  if (!type || type.getRank() != 2 || !type.getElementType().isF32() ||
      !input.hasOneUse())
    return nullptr;
  auto gemm = dyn_cast<GemmOp>(*input.getUsers().begin());
  if (!gemm || gemm.getA() != input || gemm.getTransA() ||
      !gemm.getB().getDefiningOp<ConstantOp>())
    return nullptr;
  auto result = gemm.getType().dyn_cast<RankedTensorType>();
  if (!result || result.getRank() != 2 || !result.getElementType().isF32())
    return nullptr;
  if (Value bias = gemm.getC()) {
    auto biasType = bias.getType().dyn_cast<RankedTensorType>();
    if (!bias.getDefiningOp<ConstantOp>() || !biasType ||
        biasType.getRank() != 1)
      return nullptr; // a bias per row would depend on the batch
  }
  return gemm;
}

/// `@<cell>_<input>_projection`: `input` in, `gemm`'s product out.
CellOp createProjectionCell(CellOp cell, unsigned index, GemmOp gemm,
                            StringRef name) {
  OpBuilder builder(cell);
  MLIRContext *context = cell.getContext();
  StringRef inputName = cell.getArgumentName(index);
  BlockArgument input = cell.getBody().getArgument(index);
  auto roleAttrs = [&](Role role) {
    return builder.getDictionaryAttr(
        {builder.getNamedAttr(CellDialect::kNameAttr,
                              builder.getStringAttr(inputName)),
         builder.getNamedAttr(CellDialect::kRoleAttr,
                              RoleAttr::get(context, role))});
  };
  auto projection = builder.create<CellOp>(
      cell.getLoc(), name,
      builder.getFunctionType({input.getType()}, {gemm.getType()}),
      builder.getArrayAttr({roleAttrs(Role::Input)}),
      builder.getArrayAttr({roleAttrs(Role::Output)}));
  for (StringRef attr : {"cell.batch_sizes", "cell.priority"})
    if (Attribute value = cell->getAttr(attr))
      projection->setAttr(attr, value);
  Block *body = new Block();
  projection.getBody().push_back(body);
  IRMapping mapping;
  mapping.map(input, body->addArgument(input.getType(), cell.getLoc()));
  builder.setInsertionPointToEnd(body);
  for (Value operand : gemm->getOperands())
    if (Operation *constant = operand.getDefiningOp<ConstantOp>())
      if (!mapping.contains(operand))
        builder.clone(*constant, mapping);
  Operation *product = builder.clone(*gemm, mapping);
  builder.create<ReturnOp>(cell.getLoc(), product->getResults());
  return projection;
}

struct HoistInputProjectionsPass
    : mlir::cell::impl::HoistInputProjectionsBase<HoistInputProjectionsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto unfolding = module->getAttrOfType<DictionaryAttr>("cell.unfolding");
    auto structure =
        unfolding ? unfolding.getAs<StringAttr>("structure") : StringAttr();
    if (!structure || structure.getValue() != "chain")
      return;
    SymbolTable symbols(module);
    SmallVector<CellOp> cells(module.getOps<CellOp>());
    for (CellOp cell : cells) {
      if (cell->hasAttr(CellDialect::kGenericAttr))
        continue; // a batch copy (none exist this early)
      for (unsigned index = 0; index < cell.getNumArguments(); ++index) {
        GemmOp gemm = hoistableProjection(cell, index);
        if (!gemm)
          continue;
        std::string name = (cell.getSymName() + "_" +
                            cell.getArgumentName(index) + "_projection")
                               .str();
        for (char &c : name)
          if (!llvm::isAlnum(c) && c != '_')
            c = '_'; // kernel names are C identifiers
        if (symbols.lookup(name)) {
          cell.emitWarning() << "input '" << cell.getArgumentName(index)
                             << "' keeps its projection in the step: the "
                                "name '"
                             << name << "' is taken";
          continue;
        }
        CellOp projection = createProjectionCell(cell, index, gemm, name);
        symbols.insert(projection);
        // The step takes the product's row where it took the input's.
        BlockArgument input = cell.getBody().getArgument(index);
        input.setType(gemm.getType());
        gemm.getResult().replaceAllUsesWith(input);
        gemm.erase();
        SmallVector<Type> argTypes(cell.getArgumentTypes());
        argTypes[index] = input.getType();
        cell.setFunctionType(FunctionType::get(cell.getContext(), argTypes,
                                               cell.getResultTypes()));
        cell.setArgAttr(index, CellDialect::kProjectedByAttr,
                        StringAttr::get(cell.getContext(), name));
      }
    }
  }
};

} // namespace
