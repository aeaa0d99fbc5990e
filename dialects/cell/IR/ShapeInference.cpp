//===- ShapeInference.cpp - Result types and shape checks of `cell` ops --===//
//
// inferReturnTypes for the matrix products and shape ops, whose result type
// follows from their operands and attributes (the verifier compares it with
// the declared type), and the verifiers of Cast and Reshape. Elementwise ops
// and reductions are in ElementwiseInference.cpp. Dynamic dimensions stand
// for the batch.
//
//===----------------------------------------------------------------------===//
#include "ShapeHelpers.h"

using namespace mlir;
using namespace mlir::cell;
using namespace mlir::cell::shape;

static LogicalResult checkContraction(Loc loc, int64_t lhsK, int64_t rhsK) {
  if (ShapedType::isDynamic(lhsK) || ShapedType::isDynamic(rhsK))
    return emitOptionalError(
        loc, "the contracted dimension must be static, not the batch");
  if (lhsK != rhsK)
    return emitOptionalError(loc, "contracted dimensions differ: ", lhsK,
                             " vs ", rhsK);
  return success();
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, Loc loc,
                                         ValueRange operands, DictionaryAttr,
                                         RegionRange,
                                         SmallVectorImpl<Type> &types) {
  RankedTensorType lhs = rankedType(operands[0]);
  RankedTensorType rhs = rankedType(operands[1]);
  if (!lhs || !rhs || lhs.getRank() < 1 || rhs.getRank() != 2)
    return emitOptionalError(
        loc, "expects a left operand of rank >= 1 and a matrix on the right");
  if (failed(sameElementType(loc, lhs, rhs)))
    return failure();
  if (failed(checkContraction(loc, lhs.getShape().back(), rhs.getDimSize(0))))
    return failure();
  Shape shape(lhs.getShape().drop_back());
  shape.push_back(rhs.getDimSize(1));
  if (failed(checkSingleBatch(loc, shape)))
    return failure();
  types.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

LogicalResult RowMatMulOp::inferReturnTypes(MLIRContext *, Loc loc,
                                            ValueRange operands,
                                            DictionaryAttr attributes,
                                            RegionRange regions,
                                            SmallVectorImpl<Type> &types) {
  RowMatMulOp::Adaptor adaptor(operands, attributes, regions);
  RankedTensorType lhs = rankedType(adaptor.getLhs());
  RankedTensorType rhs = rankedType(adaptor.getRhs());
  if (!lhs || !rhs)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (failed(sameElementType(loc, lhs, rhs)))
    return failure();
  int64_t m = adaptor.getM(), k = adaptor.getK(), n = adaptor.getN();
  if (m < 1 || k < 1 || n < 1)
    return emitOptionalError(loc, "m, k and n must be positive");
  // The rows an operand holds: `?` when its leading dimension is the
  // dynamic batch, else its elements over the matrix's (1 for a weight;
  // after batch specialisation the batch is static).
  auto rowsOf = [&](RankedTensorType type, int64_t perMatrix,
                    StringRef which) -> FailureOr<int64_t> {
    bool dynamic = type.getRank() > 0 && type.isDynamicDim(0);
    int64_t count = 1;
    for (int64_t d = dynamic ? 1 : 0; d < type.getRank(); ++d) {
      if (type.isDynamicDim(d))
        return emitOptionalError(loc, "the ", which,
                                 " operand has a dynamic dimension after the "
                                 "batch");
      count *= type.getDimSize(d);
    }
    if (dynamic ? count != perMatrix : count % perMatrix != 0)
      return emitOptionalError(loc, "the ", which, " operand ", type,
                               " does not hold ", perMatrix,
                               "-element matrices a row");
    return dynamic ? ShapedType::kDynamic : count / perMatrix;
  };
  FailureOr<int64_t> lhsRows = rowsOf(lhs, m * k, "left");
  FailureOr<int64_t> rhsRows =
      succeeded(lhsRows) ? rowsOf(rhs, k * n, "right") : FailureOr<int64_t>();
  if (failed(lhsRows) || failed(rhsRows))
    return failure();
  bool lhsDynamic = ShapedType::isDynamic(*lhsRows);
  bool rhsDynamic = ShapedType::isDynamic(*rhsRows);
  int64_t rows;
  if (lhsDynamic || rhsDynamic) {
    if ((!lhsDynamic && *lhsRows != 1) || (!rhsDynamic && *rhsRows != 1))
      return emitOptionalError(loc, "an operand without the batch must hold "
                                    "one matrix (a weight)");
    rows = ShapedType::kDynamic;
  } else {
    rows = std::max(*lhsRows, *rhsRows);
    if ((*lhsRows != 1 && *lhsRows != rows) ||
        (*rhsRows != 1 && *rhsRows != rows))
      return emitOptionalError(loc, "the operands hold ", *lhsRows, " and ",
                               *rhsRows, " matrices");
  }
  types.push_back(RankedTensorType::get({rows, m * n}, lhs.getElementType()));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, Loc loc,
                                       ValueRange operands,
                                       DictionaryAttr attributes,
                                       RegionRange regions,
                                       SmallVectorImpl<Type> &types) {
  GemmOp::Adaptor adaptor(operands, attributes, regions);
  RankedTensorType a = rankedType(adaptor.getA());
  RankedTensorType b = rankedType(adaptor.getB());
  if (!a || !b || a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(loc, "A and B must be matrices (rank 2), got ",
                             adaptor.getA().getType(), " and ",
                             adaptor.getB().getType());
  if (failed(sameElementType(loc, a, b)))
    return failure();
  int64_t m = a.getDimSize(adaptor.getTransA() ? 1 : 0);
  int64_t aK = a.getDimSize(adaptor.getTransA() ? 0 : 1);
  int64_t bK = b.getDimSize(adaptor.getTransB() ? 1 : 0);
  int64_t n = b.getDimSize(adaptor.getTransB() ? 0 : 1);
  if (failed(checkContraction(loc, aK, bK)))
    return failure();
  Shape shape{m, n};
  if (failed(checkSingleBatch(loc, shape)))
    return failure();
  if (Value cValue = adaptor.getC()) {
    RankedTensorType c = rankedType(cValue);
    if (!c || c.getRank() > 2)
      return emitOptionalError(loc, "C must have rank <= 2");
    if (failed(sameElementType(loc, a, c)))
      return failure();
    FailureOr<Shape> combined = broadcast(loc, shape, c.getShape());
    if (failed(combined))
      return failure();
    if (*combined != shape)
      return emitOptionalError(loc, "C of type ", c,
                               " does not broadcast to the product's shape");
  }
  types.push_back(RankedTensorType::get(shape, a.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, Loc loc,
                                         ValueRange operands,
                                         DictionaryAttr attributes,
                                         RegionRange regions,
                                         SmallVectorImpl<Type> &types) {
  ConcatOp::Adaptor adaptor(operands, attributes, regions);
  if (operands.empty())
    return emitOptionalError(loc, "needs at least one input");
  RankedTensorType first = rankedType(operands[0]);
  if (!first)
    return emitOptionalError(loc, "inputs must be ranked tensors");
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, first.getRank(), "axis")))
    return failure();
  if (first.isDynamicDim(axis))
    return emitOptionalError(
        loc, "concat along the dynamic batch dimension is not supported");
  Shape shape(first.getShape());
  for (Value operand : operands.drop_front()) {
    RankedTensorType type = rankedType(operand);
    if (!type || type.getRank() != first.getRank())
      return emitOptionalError(loc, "all inputs must have rank ",
                               first.getRank());
    if (failed(sameElementType(loc, first, type)))
      return failure();
    if (type.isDynamicDim(axis))
      return emitOptionalError(
          loc, "concat along the dynamic batch dimension is not supported");
    for (int64_t dim = 0; dim < type.getRank(); ++dim) {
      if (dim == axis)
        continue;
      if (type.getDimSize(dim) != shape[dim])
        return emitOptionalError(loc, "inputs differ in dimension ", dim,
                                 " (other than the axis ", axis, ")");
    }
    shape[axis] += type.getDimSize(axis);
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

/// Checks that `axis` of `type` is in range and static, for ops that cut or
/// index along it.
static LogicalResult checkStaticAxis(Loc loc, RankedTensorType type,
                                     int64_t axis, StringRef opName) {
  if (failed(checkAxis(loc, axis, type.getRank(), "axis")))
    return failure();
  if (type.isDynamicDim(axis))
    return emitOptionalError(loc, opName,
                             " along the dynamic batch dimension is not "
                             "supported");
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *, Loc loc,
                                        ValueRange operands,
                                        DictionaryAttr attributes,
                                        RegionRange regions,
                                        SmallVectorImpl<Type> &types) {
  SplitOp::Adaptor adaptor(operands, attributes, regions);
  RankedTensorType input = rankedType(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  int64_t axis = adaptor.getAxis();
  if (failed(checkStaticAxis(loc, input, axis, "split")))
    return failure();
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  if (sizes.empty())
    return emitOptionalError(loc, "needs at least one piece");
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0)
      return emitOptionalError(loc, "piece sizes must be non-negative");
    total += size;
  }
  if (total != input.getDimSize(axis))
    return emitOptionalError(loc, "piece sizes add up to ", total,
                             " but dimension ", axis, " has size ",
                             input.getDimSize(axis));
  for (int64_t size : sizes) {
    Shape shape(input.getShape());
    shape[axis] = size;
    types.push_back(RankedTensorType::get(shape, input.getElementType()));
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, Loc loc,
                                        ValueRange operands,
                                        DictionaryAttr attributes,
                                        RegionRange regions,
                                        SmallVectorImpl<Type> &types) {
  SliceOp::Adaptor adaptor(operands, attributes, regions);
  RankedTensorType input = rankedType(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  ArrayRef<int64_t> axes = adaptor.getAxes(), starts = adaptor.getStarts(),
                    ends = adaptor.getEnds(), steps = adaptor.getSteps();
  if (starts.size() != axes.size() || ends.size() != axes.size() ||
      steps.size() != axes.size())
    return emitOptionalError(loc,
                             "axes, starts, ends and steps differ in length");
  Shape shape(input.getShape());
  llvm::SmallSet<int64_t, 4> seen;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (failed(checkStaticAxis(loc, input, axes[i], "slice")))
      return failure();
    if (!seen.insert(axes[i]).second)
      return emitOptionalError(loc, "axis ", axes[i], " is sliced twice");
    if (steps[i] <= 0)
      return emitOptionalError(loc, "steps must be positive");
    int64_t dim = input.getDimSize(axes[i]);
    if (starts[i] < 0 || starts[i] > ends[i] || ends[i] > dim)
      return emitOptionalError(loc, "slice [", starts[i], ", ", ends[i],
                               ") is not within dimension ", axes[i],
                               " of size ", dim);
    shape[axes[i]] = (ends[i] - starts[i] + steps[i] - 1) / steps[i];
  }
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, Loc loc,
                                         ValueRange operands,
                                         DictionaryAttr attributes,
                                         RegionRange regions,
                                         SmallVectorImpl<Type> &types) {
  GatherOp::Adaptor adaptor(operands, attributes, regions);
  RankedTensorType data = rankedType(adaptor.getData());
  RankedTensorType indices = rankedType(adaptor.getIndices());
  if (!data || !indices)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (!indices.getElementType().isSignlessInteger(32) &&
      !indices.getElementType().isSignlessInteger(64))
    return emitOptionalError(loc, "indices must be i32 or i64, got ",
                             indices.getElementType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkStaticAxis(loc, data, axis, "gather")))
    return failure();
  Shape shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  if (failed(checkSingleBatch(loc, shape)))
    return failure();
  types.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *context, Loc loc,
                                         ValueRange operands,
                                         DictionaryAttr attributes,
                                         RegionRange regions,
                                         SmallVectorImpl<Type> &types) {
  ArgMaxOp::Adaptor adaptor(operands, attributes, regions);
  RankedTensorType input = rankedType(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  int64_t axis = adaptor.getAxis();
  if (failed(checkStaticAxis(loc, input, axis, "argmax")))
    return failure();
  Shape shape(input.getShape());
  if (adaptor.getKeepdims())
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  types.push_back(RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *, Loc loc,
                                          ValueRange operands,
                                          DictionaryAttr attributes,
                                          RegionRange regions,
                                          SmallVectorImpl<Type> &types) {
  SqueezeOp::Adaptor adaptor(operands, attributes, regions);
  RankedTensorType input = rankedType(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  ArrayRef<int64_t> axes = adaptor.getAxes();
  if (failed(checkAxesSet(loc, axes, input.getRank())))
    return failure();
  Shape shape;
  for (int64_t dim = 0; dim < input.getRank(); ++dim) {
    if (!llvm::is_contained(axes, dim)) {
      shape.push_back(input.getDimSize(dim));
      continue;
    }
    if (input.getDimSize(dim) != 1)
      return emitOptionalError(loc, "cannot squeeze dimension ", dim,
                               " of type ", input, ": its size is not 1");
  }
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *, Loc loc,
                                            ValueRange operands,
                                            DictionaryAttr attributes,
                                            RegionRange regions,
                                            SmallVectorImpl<Type> &types) {
  UnsqueezeOp::Adaptor adaptor(operands, attributes, regions);
  RankedTensorType input = rankedType(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  ArrayRef<int64_t> axes = adaptor.getAxes();
  int64_t rank = input.getRank() + static_cast<int64_t>(axes.size());
  if (failed(checkAxesSet(loc, axes, rank)))
    return failure();
  Shape shape;
  ArrayRef<int64_t> remaining = input.getShape();
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (llvm::is_contained(axes, dim)) {
      shape.push_back(1);
    } else {
      shape.push_back(remaining.front());
      remaining = remaining.drop_front();
    }
  }
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, Loc loc,
                                            ValueRange operands,
                                            DictionaryAttr attributes,
                                            RegionRange regions,
                                            SmallVectorImpl<Type> &types) {
  TransposeOp::Adaptor adaptor(operands, attributes, regions);
  RankedTensorType input = rankedType(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (static_cast<int64_t>(perm.size()) != input.getRank() ||
      failed(checkAxesSet(std::nullopt, perm, input.getRank())))
    return emitOptionalError(loc, "perm must be a permutation of 0..",
                             input.getRank() - 1);
  Shape shape;
  for (int64_t dim : perm)
    shape.push_back(input.getDimSize(dim));
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Verifiers of ops whose result type is not inferred
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  auto input = getInput().getType().cast<RankedTensorType>();
  auto result = getResult().getType().cast<RankedTensorType>();
  if (input.getShape() != result.getShape())
    return emitOpError() << "changes the shape from " << input << " to "
                         << result;
  return success();
}

/// Product of the static dimensions and the number of dynamic ones.
static std::pair<int64_t, int64_t> staticVolume(RankedTensorType type) {
  int64_t volume = 1, dynamic = 0;
  for (int64_t dim : type.getShape()) {
    if (ShapedType::isDynamic(dim))
      ++dynamic;
    else
      volume *= dim;
  }
  return {volume, dynamic};
}

LogicalResult ReshapeOp::verify() {
  auto input = getInput().getType().cast<RankedTensorType>();
  auto result = getResult().getType().cast<RankedTensorType>();
  if (input.getElementType() != result.getElementType())
    return emitOpError("changes the element type");
  auto [inVolume, inDynamic] = staticVolume(input);
  auto [outVolume, outDynamic] = staticVolume(result);
  if (inDynamic > 1 || outDynamic > 1)
    return emitOpError("supports at most one dynamic (batch) dimension");
  if (inDynamic != outDynamic)
    return emitOpError() << "cannot " << (inDynamic ? "remove" : "create")
                         << " the batch dimension: " << input << " to "
                         << result;
  if (inVolume != outVolume)
    return emitOpError() << "changes the number of elements per batch row: "
                         << input << " to " << result;
  return success();
}
