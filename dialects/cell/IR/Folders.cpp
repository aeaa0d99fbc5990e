//===- Folders.cpp - Constant folding and trivial simplifications --------===//
//
// Folds that are always valid: no-op identities (x + 0, x * 1, an identity
// transpose, a cast to the same type, ...) and elementwise arithmetic on small
// inline constants. Weight blobs (dense resources) are never folded here.
//
//===----------------------------------------------------------------------===//
#include "cell/IR/CellOps.h"

#include "mlir/Dialect/CommonFolders.h"

using namespace mlir;
using namespace mlir::cell;

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult IdentityOp::fold(FoldAdaptor) { return getInput(); }

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // A reshape of a reshape (or squeeze, or unsqueeze: reshapes too)
  // reshapes the original, in place.
  Operation *producer = getInput().getDefiningOp();
  if (isa_and_nonnull<ReshapeOp, SqueezeOp, UnsqueezeOp>(producer)) {
    Value original = producer->getOperand(0);
    if (original.getType() == getType())
      return original;
    getInputMutable().assign(original);
    return getResult();
  }
  return {};
}

/// The value a squeeze or unsqueeze of `input` to `type` gives back when
/// `input` is itself a reshape (or squeeze, unsqueeze) of a `type` value.
static Value undoneView(Value input, Type type) {
  Operation *producer = input.getDefiningOp();
  if (isa_and_nonnull<ReshapeOp, SqueezeOp, UnsqueezeOp>(producer) &&
      producer->getOperand(0).getType() == type)
    return producer->getOperand(0);
  return {};
}

/// A row matmul reads its operands' elements in order, whatever their shape:
/// views in front of them (reshape, squeeze, unsqueeze) are looked through,
/// in place, as long as they keep the batch where it is.
OpFoldResult RowMatMulOp::fold(FoldAdaptor) {
  bool changed = false;
  for (OpOperand &operand : getOperation()->getOpOperands()) {
    Operation *producer = operand.get().getDefiningOp();
    if (!isa_and_nonnull<ReshapeOp, SqueezeOp, UnsqueezeOp>(producer))
      continue;
    auto from = producer->getOperand(0).getType().cast<RankedTensorType>();
    auto to = operand.get().getType().cast<RankedTensorType>();
    bool fromBatch = from.getRank() > 0 && from.isDynamicDim(0);
    bool toBatch = to.getRank() > 0 && to.isDynamicDim(0);
    if (fromBatch != toBatch || from.getNumDynamicDims() > 1)
      continue;
    operand.set(producer->getOperand(0));
    changed = true;
  }
  return changed ? getResult() : OpFoldResult();
}

OpFoldResult SqueezeOp::fold(FoldAdaptor) {
  if (getAxes().empty())
    return getInput();
  if (Value original = undoneView(getInput(), getType()))
    return original;
  return {};
}

OpFoldResult UnsqueezeOp::fold(FoldAdaptor) {
  if (getAxes().empty())
    return getInput();
  if (Value original = undoneView(getInput(), getType()))
    return original;
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [index, dim] : llvm::enumerate(getPerm()))
    if (static_cast<int64_t>(index) != dim)
      return {};
  return getInput();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  return {};
}

/// True when `attr` is an inline splat constant equal to `value`.
static bool isSplatOf(Attribute attr, double value) {
  auto dense = attr.dyn_cast_or_null<DenseElementsAttr>();
  if (!dense || !dense.isSplat())
    return false;
  Type element = dense.getElementType();
  if (element.isa<FloatType>())
    return dense.getSplatValue<APFloat>().convertToDouble() == value;
  if (element.isa<IntegerType>())
    return dense.getSplatValue<APInt>().getSExtValue() ==
           static_cast<int64_t>(value);
  return false;
}

/// True when adding `attr` leaves every value unchanged: an integer 0, or a
/// float -0.0 (x + +0.0 turns x = -0.0 into +0.0).
static bool isAdditiveIdentity(Attribute attr) {
  auto dense = attr.dyn_cast_or_null<DenseElementsAttr>();
  if (!dense || !dense.isSplat())
    return false;
  if (dense.getElementType().isa<FloatType>()) {
    APFloat value = dense.getSplatValue<APFloat>();
    return value.isZero() && value.isNegative();
  }
  return isSplatOf(attr, 0);
}

/// Folds `op(lhs, rhs)` when both operands are inline constants of the result
/// type (no broadcasting involved).
template <typename FloatFn, typename IntFn>
static Attribute foldConstants(Operation *op, ArrayRef<Attribute> operands,
                               FloatFn floatFn, IntFn intFn) {
  Type resultType = op->getResult(0).getType();
  for (Attribute operand : operands) {
    auto dense = operand.dyn_cast_or_null<DenseElementsAttr>();
    if (!dense || dense.getType() != resultType)
      return {};
  }
  Type element = resultType.cast<ShapedType>().getElementType();
  if (element.isa<FloatType>())
    return constFoldBinaryOpConditional<FloatAttr>(
        operands,
        [&](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
          return floatFn(a, b);
        });
  if (element.isa<IntegerType>())
    return constFoldBinaryOpConditional<IntegerAttr>(
        operands, [&](const APInt &a, const APInt &b) -> std::optional<APInt> {
          return intFn(a, b);
        });
  return {};
}

/// Returns `value` when it can stand for the op's result unchanged.
static OpFoldResult sameTypeValue(Operation *op, Value value) {
  if (value.getType() == op->getResult(0).getType())
    return value;
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (isAdditiveIdentity(adaptor.getRhs()))
    if (OpFoldResult result = sameTypeValue(*this, getLhs()))
      return result;
  if (isAdditiveIdentity(adaptor.getLhs()))
    if (OpFoldResult result = sameTypeValue(*this, getRhs()))
      return result;
  return foldConstants(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) { return a + b; },
      [](const APInt &a, const APInt &b) { return a + b; });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 0))
    if (OpFoldResult result = sameTypeValue(*this, getLhs()))
      return result;
  return foldConstants(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) { return a - b; },
      [](const APInt &a, const APInt &b) { return a - b; });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1))
    if (OpFoldResult result = sameTypeValue(*this, getLhs()))
      return result;
  if (isSplatOf(adaptor.getLhs(), 1))
    if (OpFoldResult result = sameTypeValue(*this, getRhs()))
      return result;
  return foldConstants(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) { return a * b; },
      [](const APInt &a, const APInt &b) { return a * b; });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1))
    if (OpFoldResult result = sameTypeValue(*this, getLhs()))
      return result;
  // Integer division by zero is left alone (ONNX leaves it undefined).
  bool isUnsigned =
      getType().cast<ShapedType>().getElementType().isUnsignedInteger();
  return foldConstants(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) { return a / b; },
      [&](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        return isUnsigned ? a.udiv(b) : a.sdiv(b);
      });
}
