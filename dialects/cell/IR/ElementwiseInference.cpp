//===- ElementwiseInference.cpp - Elementwise ops and reductions ----------===//
//
// Result types of the broadcasting binary ops (Add, Sub, Mul, Div, Pow,
// Where), the comparisons (Equal, Less, LessOrEqual, Greater,
// GreaterOrEqual: i1) and Not (i1), and the row reductions (ReduceMean,
// ReduceSum, ReduceMax), and the verifiers of the unary ops (floating point
// only).
//
//===----------------------------------------------------------------------===//
#include "ShapeHelpers.h"

using namespace mlir;
using namespace mlir::cell;
using namespace mlir::cell::shape;

#define CELL_BINARY_INFER(OpClass)                                             \
  LogicalResult OpClass::inferReturnTypes(                                     \
      MLIRContext *, Loc loc, ValueRange operands, DictionaryAttr,             \
      RegionRange, SmallVectorImpl<Type> &types) {                             \
    return inferBinary<OpClass>(loc, operands, types);                         \
  }
CELL_BINARY_INFER(AddOp)
CELL_BINARY_INFER(SubOp)
CELL_BINARY_INFER(MulOp)
CELL_BINARY_INFER(DivOp)
#undef CELL_BINARY_INFER

LogicalResult PowOp::inferReturnTypes(MLIRContext *, Loc loc,
                                      ValueRange operands, DictionaryAttr,
                                      RegionRange,
                                      SmallVectorImpl<Type> &types) {
  RankedTensorType lhs = rankedType(operands[0]);
  if (lhs && !lhs.getElementType().isa<FloatType>())
    return emitOptionalError(loc, "Pow needs floating-point operands, got ",
                             lhs);
  return inferBinary<PowOp>(loc, operands, types);
}

/// The comparisons: the operands' broadcast shape (one element type) in i1.
template <typename OpT>
static LogicalResult inferComparison(MLIRContext *context, Loc loc,
                                     ValueRange operands,
                                     SmallVectorImpl<Type> &types) {
  if (failed(inferBinary<OpT>(loc, operands, types)))
    return failure();
  types.back() =
      types.back().cast<RankedTensorType>().clone(IntegerType::get(context, 1));
  return success();
}

#define CELL_COMPARISON_INFERENCE(OpT)                                         \
  LogicalResult OpT::inferReturnTypes(                                         \
      MLIRContext *context, Loc loc, ValueRange operands, DictionaryAttr,      \
      RegionRange, SmallVectorImpl<Type> &types) {                             \
    return inferComparison<OpT>(context, loc, operands, types);                \
  }
CELL_COMPARISON_INFERENCE(EqualOp)
CELL_COMPARISON_INFERENCE(LessOp)
CELL_COMPARISON_INFERENCE(LessOrEqualOp)
CELL_COMPARISON_INFERENCE(GreaterOp)
CELL_COMPARISON_INFERENCE(GreaterOrEqualOp)
#undef CELL_COMPARISON_INFERENCE

LogicalResult NotOp::inferReturnTypes(MLIRContext *, Loc loc,
                                      ValueRange operands, DictionaryAttr,
                                      RegionRange,
                                      SmallVectorImpl<Type> &types) {
  RankedTensorType input = rankedType(operands[0]);
  if (!input || !input.getElementType().isInteger(1))
    return emitOptionalError(loc, "Not needs an i1 tensor, got ",
                             operands[0].getType());
  types.push_back(input);
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, Loc loc,
                                        ValueRange operands, DictionaryAttr,
                                        RegionRange,
                                        SmallVectorImpl<Type> &types) {
  RankedTensorType condition = rankedType(operands[0]);
  if (!condition || !condition.getElementType().isInteger(1))
    return emitOptionalError(loc, "the condition must be an i1 tensor");
  if (failed(inferBinary<WhereOp>(loc, operands.drop_front(), types)))
    return failure();
  auto value = types.back().cast<RankedTensorType>();
  FailureOr<Shape> shape =
      broadcast(loc, condition.getShape(), value.getShape());
  if (failed(shape) || failed(checkSingleBatch(loc, *shape)))
    return failure();
  types.back() = RankedTensorType::get(*shape, value.getElementType());
  return success();
}

template <typename ReduceOp>
static LogicalResult inferReduce(Loc loc, ValueRange operands,
                                 DictionaryAttr attributes, RegionRange regions,
                                 SmallVectorImpl<Type> &types) {
  typename ReduceOp::Adaptor adaptor(operands, attributes, regions);
  RankedTensorType input = rankedType(adaptor.getInput());
  if (!input || !input.getElementType().isa<FloatType>())
    return emitOptionalError(loc, "a reduction needs a floating-point tensor");
  ArrayRef<int64_t> axes = adaptor.getAxes();
  if (axes.empty())
    return emitOptionalError(loc, "a reduction needs at least one axis");
  if (failed(checkAxesSet(loc, axes, input.getRank())))
    return failure();
  Shape shape;
  for (int64_t dim = 0; dim < input.getRank(); ++dim) {
    if (!llvm::is_contained(axes, dim)) {
      shape.push_back(input.getDimSize(dim));
      continue;
    }
    if (input.isDynamicDim(dim))
      return emitOptionalError(loc, "cannot reduce the batch dimension");
    if (!adaptor.getKeepdimsAttr() || adaptor.getKeepdims())
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

#define CELL_REDUCE_INFER(OpClass)                                             \
  LogicalResult OpClass::inferReturnTypes(                                     \
      MLIRContext *, Loc loc, ValueRange operands, DictionaryAttr attributes,  \
      RegionRange regions, SmallVectorImpl<Type> &types) {                     \
    return inferReduce<OpClass>(loc, operands, attributes, regions, types);    \
  }
CELL_REDUCE_INFER(ReduceMeanOp)
CELL_REDUCE_INFER(ReduceSumOp)
CELL_REDUCE_INFER(ReduceMaxOp)
#undef CELL_REDUCE_INFER

//===----------------------------------------------------------------------===//
// Verifiers of ops whose result type is not inferred
//===----------------------------------------------------------------------===//

static LogicalResult verifyFloatOperand(Operation *op) {
  Type element =
      op->getOperand(0).getType().cast<ShapedType>().getElementType();
  if (!element.isa<FloatType>())
    return op->emitOpError() << "expects a floating-point tensor, got "
                             << op->getOperand(0).getType();
  return success();
}

LogicalResult SigmoidOp::verify() { return verifyFloatOperand(*this); }
LogicalResult ErfOp::verify() { return verifyFloatOperand(*this); }
LogicalResult SqrtOp::verify() { return verifyFloatOperand(*this); }
LogicalResult ExpOp::verify() { return verifyFloatOperand(*this); }
LogicalResult LogOp::verify() { return verifyFloatOperand(*this); }
LogicalResult SoftplusOp::verify() { return verifyFloatOperand(*this); }
LogicalResult NegOp::verify() { return verifyFloatOperand(*this); }
LogicalResult TanhOp::verify() { return verifyFloatOperand(*this); }
LogicalResult ReluOp::verify() { return verifyFloatOperand(*this); }
