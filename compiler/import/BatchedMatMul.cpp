//===- BatchedMatMul.cpp - ONNX MatMul, including per-row matrices --------===//
//
// MatMul of a [batch, ...] value by a weight matrix is the ordinary product
// (cell.matmul, a GEMM later). MatMul where a batch row holds a matrix, as
// torch.bmm and torch.matmul of [batch, m, k] by [batch, k, n] export it
// (attention over a per-request memory: scores = memory x query, context =
// weights x memory), becomes cell.row_matmul: a product per row, either
// operand possibly a weight, either possibly transposed (a Transpose that
// swaps the two matrix dimensions is folded into the product). A sum or mean
// over one matrix dimension of a [batch, m, n] value (the context of additive
// attention, (weights.unsqueeze(2) * memory).sum(1)) is a product by a
// vector of ones (or of 1/count) the same way.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/GraphImporter.h"

using namespace mlir;
using namespace cellc;

static bool hasBatch(RankedTensorType type) {
  return type.getRank() > 0 && type.isDynamicDim(0);
}

namespace {
/// One operand as a matrix: its rows and columns, the value holding it and
/// whether that value holds the transposed matrix.
struct MatrixOperand {
  Value value;
  int64_t rows = 1, cols = 1;
  bool transposed = false;
  bool vector = false; // 1-D: the dimension ONNX drops from the result
};
} // namespace

static FailureOr<MatrixOperand> matrixOperand(NodeContext &ctx, size_t index,
                                              bool isLhs) {
  FailureOr<Value> value = ctx.input(index);
  if (failed(value))
    return failure();
  auto type = value->getType().cast<RankedTensorType>();
  MatrixOperand operand;
  operand.value = *value;
  int64_t rank = type.getRank();
  if (hasBatch(type)) {
    if (rank != 3)
      return ctx.emitError()
             << "multiplies a " << describeShape(type.getShape())
             << " value; a product of per-row matrices takes [batch, m, k] "
                "and [batch, k, n] (torch.bmm)";
    operand.rows = type.getDimSize(1);
    operand.cols = type.getDimSize(2);
    // A transpose of the two matrix dimensions is read as such.
    if (auto transpose = value->getDefiningOp<cell::TransposeOp>())
      if (transpose.getPerm() == ArrayRef<int64_t>{0, 2, 1}) {
        operand.value = transpose.getInput();
        operand.transposed = true;
      }
    return operand;
  }
  if (rank == 1) {
    operand.vector = true;
    (isLhs ? operand.cols : operand.rows) = type.getDimSize(0);
    return operand;
  }
  if (rank != 2)
    return ctx.emitError() << "multiplies by a " << type
                           << " weight; a per-row product takes a weight "
                              "matrix or vector";
  operand.rows = type.getDimSize(0);
  operand.cols = type.getDimSize(1);
  return operand;
}

LogicalResult cellc::convertMatMul(NodeContext &ctx) {
  FailureOr<RankedTensorType> lhsType = ctx.inputType(0);
  FailureOr<RankedTensorType> rhsType = ctx.inputType(1);
  if (failed(lhsType) || failed(rhsType))
    return failure();
  bool perRow =
      (hasBatch(*lhsType) && lhsType->getRank() >= 3) || hasBatch(*rhsType);
  if (!perRow) {
    FailureOr<Value> lhs = ctx.input(0), rhs = ctx.input(1);
    if (failed(lhs) || failed(rhs))
      return failure();
    FailureOr<Operation *> op = ctx.create<cell::MatMulOp>({*lhs, *rhs});
    if (failed(op))
      return failure();
    return ctx.setOutputs((*op)->getResults());
  }
  if (!lhsType->getElementType().isa<FloatType>())
    return ctx.emitError() << "multiplies " << *lhsType
                           << " matrices; a product of per-row matrices is of "
                              "floats";
  FailureOr<MatrixOperand> lhs = matrixOperand(ctx, 0, true);
  if (failed(lhs))
    return failure();
  FailureOr<MatrixOperand> rhs = matrixOperand(ctx, 1, false);
  if (failed(rhs))
    return failure();
  if (lhs->cols != rhs->rows)
    return ctx.emitError() << "multiplies " << lhs->rows << " x " << lhs->cols
                           << " matrices by " << rhs->rows << " x " << rhs->cols
                           << " ones";
  Builder &b = ctx.builder();
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("m", b.getI64IntegerAttr(lhs->rows)),
      b.getNamedAttr("k", b.getI64IntegerAttr(lhs->cols)),
      b.getNamedAttr("n", b.getI64IntegerAttr(rhs->cols)),
      b.getNamedAttr("trans_lhs", b.getBoolAttr(lhs->transposed)),
      b.getNamedAttr("trans_rhs", b.getBoolAttr(rhs->transposed))};
  FailureOr<Operation *> op =
      ctx.create<cell::RowMatMulOp>({lhs->value, rhs->value}, attrs);
  if (failed(op))
    return failure();
  // The ONNX result: [batch, m, n] without the dimensions of 1-D operands.
  SmallVector<int64_t> shape = {ShapedType::kDynamic};
  if (!lhs->vector)
    shape.push_back(lhs->rows);
  if (!rhs->vector)
    shape.push_back(rhs->cols);
  FailureOr<Value> result =
      ctx.reshape((*op)->getResult(0),
                  RankedTensorType::get(shape, lhsType->getElementType()));
  if (failed(result))
    return failure();
  return ctx.setOutputs({*result});
}

FailureOr<Value> cellc::reduceRowMatrices(NodeContext &ctx, Value input,
                                          int64_t axis, bool mean,
                                          bool keepdims) {
  auto type = input.getType().cast<RankedTensorType>();
  int64_t rows = type.getDimSize(1), cols = type.getDimSize(2);
  int64_t count = axis == 1 ? rows : cols;
  auto vectorType = RankedTensorType::get({count}, type.getElementType());
  Builder &b = ctx.builder();
  FailureOr<Operation *> ones = ctx.create<cell::ConstantOp>(
      {},
      b.getNamedAttr("value",
                     DenseElementsAttr::get(
                         vectorType, b.getFloatAttr(type.getElementType(),
                                                    mean ? 1.0 / count : 1.0)
                                         .getValue())),
      {vectorType});
  if (failed(ones))
    return failure();
  // Over the rows: ones[1 x m] * x[m x n]; over the columns: x[m x n] *
  // ones[n x 1].
  Value vector = (*ones)->getResult(0);
  bool overRows = axis == 1;
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("m", b.getI64IntegerAttr(overRows ? 1 : rows)),
      b.getNamedAttr("k", b.getI64IntegerAttr(count)),
      b.getNamedAttr("n", b.getI64IntegerAttr(overRows ? cols : 1)),
      b.getNamedAttr("trans_lhs", b.getBoolAttr(false)),
      b.getNamedAttr("trans_rhs", b.getBoolAttr(false))};
  FailureOr<Operation *> op = ctx.create<cell::RowMatMulOp>(
      overRows ? ValueRange{vector, input} : ValueRange{input, vector}, attrs);
  if (failed(op))
    return failure();
  SmallVector<int64_t> shape = {ShapedType::kDynamic};
  if (!overRows || keepdims)
    shape.push_back(overRows ? 1 : rows);
  if (overRows || keepdims)
    shape.push_back(overRows ? cols : 1);
  return ctx.reshape((*op)->getResult(0),
                     RankedTensorType::get(shape, type.getElementType()));
}
