//===- CellDialect.cpp - Dialect registration and attribute checks --------===//
//
// Registers the ops and the role attribute, materializes folded constants, and
// checks the `cell.*` attributes attached to cell arguments and results.
//
//===----------------------------------------------------------------------===//
#include "cell/IR/CellDialect.h"
#include "cell/IR/CellOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::cell;

#include "cell/IR/CellDialect.cpp.inc"
#include "cell/IR/CellEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "cell/IR/CellAttrs.cpp.inc"

void CellDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "cell/IR/CellOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "cell/IR/CellAttrs.cpp.inc"
      >();
}

Operation *CellDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = value.dyn_cast<ElementsAttr>();
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}

/// Checks one `cell.*` attribute of a cell argument or result. Which roles are
/// allowed where, and how they relate to each other, is checked by the cell's
/// verifier; here only the attribute's own kind is checked.
static LogicalResult verifyCellAttribute(Operation *op, NamedAttribute attr,
                                         bool isResult) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (!isa<CellOp>(op))
    return op->emitOpError()
           << "'" << name << "' is only meaningful on a 'cell.cell'";
  if (name == CellDialect::kRoleAttr) {
    if (!value.isa<RoleAttr>())
      return op->emitOpError() << "'" << name << "' must be a #cell.role";
    return success();
  }
  if (name == CellDialect::kNameAttr || name == CellDialect::kFromAttr ||
      name == CellDialect::kUpdatesAttr) {
    if (!value.isa<StringAttr>())
      return op->emitOpError() << "'" << name << "' must be a string";
    if ((name == CellDialect::kUpdatesAttr) != isResult &&
        name != CellDialect::kNameAttr)
      return op->emitOpError() << "'" << name << "' belongs on "
                               << (isResult ? "an argument" : "a result");
    return success();
  }
  if (name == CellDialect::kChildAttr) {
    if (isResult)
      return op->emitOpError() << "'" << name << "' belongs on an argument";
    auto index = value.dyn_cast<IntegerAttr>();
    if (!index || index.getInt() < 0)
      return op->emitOpError()
             << "'" << name << "' must be a non-negative integer";
    return success();
  }
  if (name == CellDialect::kProjectedByAttr) {
    if (isResult || !value.isa<StringAttr>())
      return op->emitOpError()
             << "'" << name << "' is a string attribute of an argument";
    return success();
  }
  if (name == CellDialect::kEmitAttr) {
    if (!isResult || !value.isa<UnitAttr>())
      return op->emitOpError()
             << "'" << name << "' is a unit attribute of a result";
    return success();
  }
  return op->emitOpError() << "unknown attribute '" << name << "'";
}

LogicalResult CellDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                    unsigned,
                                                    NamedAttribute attr) {
  return verifyCellAttribute(op, attr, /*isResult=*/false);
}

LogicalResult CellDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                       unsigned,
                                                       NamedAttribute attr) {
  return verifyCellAttribute(op, attr, /*isResult=*/true);
}
