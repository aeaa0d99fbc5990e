//===- ShapeHelpers.h - Shared checks of the shape inference ----*- C++ -*-===//
//
// Broadcasting, axis checks and the binary-op inference shared by
// ShapeInference.cpp and ElementwiseInference.cpp (private to the IR
// library).
//
//===----------------------------------------------------------------------===//
#ifndef CELL_IR_SHAPEHELPERS_H
#define CELL_IR_SHAPEHELPERS_H

#include "cell/IR/CellOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <optional>

namespace mlir::cell::shape {

using Shape = SmallVector<int64_t>;
using Loc = std::optional<Location>;

inline RankedTensorType rankedType(Value value) {
  return value.getType().dyn_cast<RankedTensorType>();
}

inline LogicalResult checkAxis(Loc loc, int64_t axis, int64_t rank,
                               StringRef what) {
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, what, " ", axis, " is out of range for rank ",
                             rank);
  return success();
}

inline LogicalResult sameElementType(Loc loc, RankedTensorType a,
                                     RankedTensorType b) {
  if (a.getElementType() != b.getElementType())
    return emitOptionalError(loc, "element types differ: ", a.getElementType(),
                             " and ", b.getElementType());
  return success();
}

/// Numpy broadcasting where a dynamic (batch) dimension only meets 1 or
/// another dynamic dimension.
inline FailureOr<Shape> broadcast(Loc loc, ArrayRef<int64_t> lhs,
                                  ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t b = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (a == b || b == 1) {
      result[i] = a;
    } else if (a == 1) {
      result[i] = b;
    } else if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b)) {
      return emitOptionalError(
          loc, "the dynamic batch dimension cannot broadcast against size ",
          ShapedType::isDynamic(a) ? b : a);
    } else {
      return emitOptionalError(loc, "dimensions ", a, " and ", b,
                               " do not broadcast");
    }
  }
  return result;
}

/// The batch is the only dynamic dimension: a result with two (e.g. [B,1,8] *
/// [B,8] -> [B,B,8], or rows x rows^T) would mix the rows of the batch.
inline LogicalResult checkSingleBatch(Loc loc, ArrayRef<int64_t> shape) {
  if (llvm::count_if(shape, ShapedType::isDynamic) > 1)
    return emitOptionalError(
        loc, "the result would have more than one dynamic (batch) dimension");
  return success();
}

template <typename BinaryOp>
inline LogicalResult inferBinary(Loc loc, ValueRange operands,
                                 SmallVectorImpl<Type> &types) {
  RankedTensorType lhs = rankedType(operands[0]);
  RankedTensorType rhs = rankedType(operands[1]);
  if (!lhs || !rhs)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (failed(sameElementType(loc, lhs, rhs)))
    return failure();
  FailureOr<Shape> shape = broadcast(loc, lhs.getShape(), rhs.getShape());
  if (failed(shape) || failed(checkSingleBatch(loc, *shape)))
    return failure();
  types.push_back(RankedTensorType::get(*shape, lhs.getElementType()));
  return success();
}

/// Checks that `axes` are distinct and within [0, rank).
inline LogicalResult checkAxesSet(Loc loc, ArrayRef<int64_t> axes,
                                  int64_t rank) {
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t axis : axes) {
    if (failed(checkAxis(loc, axis, rank, "axis")))
      return failure();
    if (!seen.insert(axis).second)
      return emitOptionalError(loc, "axis ", axis, " is listed twice");
  }
  return success();
}

} // namespace mlir::cell::shape

#endif // CELL_IR_SHAPEHELPERS_H
