//===- CellFunction.cpp - `cell.cell` and `cell.return` ------------------===//
//
// The cell function: its textual form and the rules that tie the roles of its
// arguments and results together (batch-leading types, state pairing,
// children).
//
//===----------------------------------------------------------------------===//
#include "cell/IR/CellOps.h"

#include "mlir/IR/FunctionImplementation.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::cell;

ParseResult CellOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildFuncType =
      [](Builder &builder, ArrayRef<Type> argTypes, ArrayRef<Type> results,
         function_interface_impl::VariadicFlag,
         std::string &) { return builder.getFunctionType(argTypes, results); };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      getFunctionTypeAttrName(result.name), buildFuncType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void CellOp::print(OpAsmPrinter &printer) {
  function_interface_impl::printFunctionOp(
      printer, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
      getArgAttrsAttrName(), getResAttrsAttrName());
}

/// Names the entry block arguments after their ONNX names (`%h`, `%token`).
void CellOp::getAsmBlockArgumentNames(Region &region,
                                      OpAsmSetValueNameFn setNameFn) {
  if (region.empty())
    return;
  for (BlockArgument arg : region.front().getArguments()) {
    StringRef name = getArgumentName(arg.getArgNumber());
    if (!name.empty())
      setNameFn(arg, name);
  }
}

static Role roleOf(DictionaryAttr attrs, Role fallback) {
  if (auto role =
          attrs ? attrs.getAs<RoleAttr>(CellDialect::kRoleAttr) : RoleAttr())
    return role.getValue();
  return fallback;
}

static StringRef stringOf(DictionaryAttr attrs, StringRef name) {
  if (auto value = attrs ? attrs.getAs<StringAttr>(name) : StringAttr())
    return value.getValue();
  return {};
}

Role CellOp::getArgumentRole(unsigned index) {
  return roleOf(getArgAttrDict(index), Role::Input);
}
Role CellOp::getResultRole(unsigned index) {
  return roleOf(getResultAttrDict(index), Role::Output);
}
StringRef CellOp::getArgumentName(unsigned index) {
  return stringOf(getArgAttrDict(index), CellDialect::kNameAttr);
}
StringRef CellOp::getResultName(unsigned index) {
  return stringOf(getResultAttrDict(index), CellDialect::kNameAttr);
}

/// Every argument and result is a ranked tensor whose leading dimension is the
/// dynamic batch and whose other dimensions are static.
static LogicalResult verifyBatchLeading(CellOp op, Type type, StringRef what,
                                        unsigned index) {
  auto tensor = type.dyn_cast<RankedTensorType>();
  if (!tensor)
    return op.emitOpError()
           << what << " #" << index << " must be a ranked tensor, got " << type;
  // A batch-specialized copy has the constant batch size instead.
  if (auto batch =
          op->getAttrOfType<IntegerAttr>(CellDialect::kBatchSizeAttr)) {
    if (tensor.getRank() == 0 || tensor.getDimSize(0) != batch.getInt() ||
        !tensor.hasStaticShape())
      return op.emitOpError()
             << what << " #" << index
             << " of a cell specialized for batch size " << batch.getInt()
             << " must be static with " << batch.getInt()
             << " leading rows, got " << type;
    return success();
  }
  if (tensor.getRank() == 0 || !tensor.isDynamicDim(0))
    return op.emitOpError()
           << what << " #" << index
           << " must have the dynamic batch as its leading dimension, got "
           << type;
  for (int64_t dim = 1; dim < tensor.getRank(); ++dim)
    if (tensor.isDynamicDim(dim))
      return op.emitOpError() << what << " #" << index
                              << " may only be dynamic in its leading (batch) "
                                 "dimension, got "
                              << type;
  return success();
}

LogicalResult CellOp::verify() {
  ArrayRef<Type> argTypes = getArgumentTypes();
  ArrayRef<Type> resultTypes = getResultTypes();
  if (getBody().front().getNumArguments() != argTypes.size())
    return emitOpError("entry block must have one argument per input");

  llvm::StringMap<unsigned> argByName;
  for (unsigned i = 0; i < argTypes.size(); ++i) {
    if (failed(verifyBatchLeading(*this, argTypes[i], "argument", i)))
      return failure();
    if (getArgumentRole(i) == Role::Output)
      return emitOpError() << "argument #" << i << " cannot have role 'output'";
    StringRef name = getArgumentName(i);
    if (!name.empty() && !argByName.try_emplace(name, i).second)
      return emitOpError() << "two arguments are named '" << name << "'";
    DictionaryAttr attrs = getArgAttrDict(i);
    bool isChild = getArgumentRole(i) == Role::Child;
    bool isMemory = getArgumentRole(i) == Role::Memory;
    if (isMemory && !(attrs && attrs.get(CellDialect::kFromAttr)))
      return emitOpError() << "memory argument #" << i << " needs 'cell.from'";
    bool hasChildAttrs =
        attrs && (attrs.get(CellDialect::kChildAttr) ||
                  (!isMemory && attrs.get(CellDialect::kFromAttr)));
    if (isChild && !(attrs && attrs.get(CellDialect::kChildAttr) &&
                     attrs.get(CellDialect::kFromAttr)))
      return emitOpError() << "child argument #" << i
                           << " needs 'cell.child' and 'cell.from'";
    if (!isChild && hasChildAttrs)
      return emitOpError()
             << "argument #" << i
             << " has 'cell.child'/'cell.from' but is not a child";
  }

  llvm::StringMap<unsigned> updated, resultByName;
  for (unsigned i = 0; i < resultTypes.size(); ++i) {
    if (failed(verifyBatchLeading(*this, resultTypes[i], "result", i)))
      return failure();
    StringRef resultName = getResultName(i);
    if (!resultName.empty() && !resultByName.try_emplace(resultName, i).second)
      return emitOpError() << "two results are named '" << resultName << "'";
    Role role = getResultRole(i);
    if (role != Role::State && role != Role::Output)
      return emitOpError() << "result #" << i
                           << " must have role 'state' or 'output'";
    DictionaryAttr attrs = getResultAttrDict(i);
    StringRef updates = stringOf(attrs, CellDialect::kUpdatesAttr);
    if (attrs && attrs.get(CellDialect::kEmitAttr) && role != Role::State)
      return emitOpError() << "result #" << i
                           << ": only a state result can be emitted; an "
                              "output is returned anyway";
    if (updates.empty())
      continue;
    if (role != Role::State)
      return emitOpError() << "result #" << i << " updates '" << updates
                           << "' but is not a state";
    auto arg = argByName.find(updates);
    if (arg == argByName.end())
      return emitOpError() << "result #" << i << " updates '" << updates
                           << "', which names no argument";
    if (getArgumentRole(arg->second) != Role::State)
      return emitOpError() << "result #" << i << " updates '" << updates
                           << "', which is not a state argument";
    if (argTypes[arg->second] != resultTypes[i])
      return emitOpError() << "state result #" << i << " has type "
                           << resultTypes[i] << " but the state '" << updates
                           << "' it updates has type " << argTypes[arg->second];
    if (!updated.try_emplace(updates, i).second)
      return emitOpError() << "state '" << updates
                           << "' is updated by two results";
  }
  return success();
}

LogicalResult ReturnOp::verify() {
  auto cell = cast<CellOp>((*this)->getParentOp());
  ArrayRef<Type> expected = cell.getResultTypes();
  if (getNumOperands() != expected.size())
    return emitOpError() << "returns " << getNumOperands()
                         << " values but the cell has " << expected.size()
                         << " results";
  for (auto [index, operand] : llvm::enumerate(getOperands()))
    if (operand.getType() != expected[index])
      return emitOpError() << "operand #" << index << " has type "
                           << operand.getType() << " but cell result #" << index
                           << " has type " << expected[index];
  return success();
}

SmallVector<CellOp> mlir::cell::batchCopiesOf(Operation *module,
                                              StringRef generic) {
  SmallVector<CellOp> copies;
  for (Region &region : module->getRegions())
    for (CellOp cell : region.getOps<CellOp>()) {
      auto of =
          cell->getAttrOfType<FlatSymbolRefAttr>(CellDialect::kGenericAttr);
      if (of && of.getValue() == generic)
        copies.push_back(cell);
    }
  auto batchOf = [](CellOp cell) {
    return cell->getAttrOfType<IntegerAttr>(CellDialect::kBatchSizeAttr)
        .getInt();
  };
  llvm::sort(copies,
             [&](CellOp a, CellOp b) { return batchOf(a) < batchOf(b); });
  return copies;
}

//===----------------------------------------------------------------------===//
// cell.fused
//===----------------------------------------------------------------------===//

void FusedOp::build(OpBuilder &builder, OperationState &state,
                    TypeRange resultTypes, ValueRange inputs,
                    ArrayAttr operandAccess, ArrayAttr resultAccess) {
  state.addOperands(inputs);
  state.addTypes(resultTypes);
  state.addAttribute(getOperandAccessAttrName(state.name), operandAccess);
  state.addAttribute(getResultAccessAttrName(state.name), resultAccess);
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Value input : inputs)
    block->addArgument(input.getType(), state.location);
}

/// Checks that `list` holds `count` access kinds, each among `allowed`.
static LogicalResult verifyAccessList(FusedOp op, ArrayAttr list, size_t count,
                                      StringRef what,
                                      ArrayRef<Access> allowed) {
  if (list.size() != count)
    return op.emitOpError() << "has " << count << " " << what << "s but "
                            << list.size() << " " << what << " access kinds";
  for (auto [index, attr] : llvm::enumerate(list)) {
    auto access = attr.dyn_cast<AccessAttr>();
    if (!access || !llvm::is_contained(allowed, access.getValue()))
      return op.emitOpError()
             << what << " #" << index
             << " has an access kind that does not apply to "
             << (what == "operand" ? "an " : "a ") << what << ": " << attr;
  }
  return success();
}

LogicalResult FusedOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("needs one block argument per operand");
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(getInputs(), body.getArguments())))
    if (std::get<0>(pair).getType() != std::get<1>(pair).getType())
      return emitOpError() << "block argument #" << index
                           << " does not have the type of its operand";
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getOperands().getTypes() != getResultTypes())
    return emitOpError("yields values whose types differ from its results");
  if (failed(verifyAccessList(
          *this, getOperandAccess(), getInputs().size(), "operand",
          {Access::Gather, Access::Dense, Access::Broadcast})) ||
      failed(verifyAccessList(*this, getResultAccess(), getNumResults(),
                              "result", {Access::Scatter, Access::Dense})))
    return failure();
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    auto access = getOperandAccess()[index].cast<AccessAttr>().getValue();
    bool hasBatch =
        llvm::any_of(input.getType().cast<RankedTensorType>().getShape(),
                     ShapedType::isDynamic);
    if (access == Access::Broadcast && hasBatch)
      return emitOpError() << "operand #" << index
                           << " has a batch dimension and cannot be broadcast";
  }
  return success();
}
