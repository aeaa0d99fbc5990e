//===- KernelOpExpressions.cpp - The CUDA expression of each op ----------===//
//
// KernelBodyWriter::compute and its helpers: the C++ expression of one
// element of an op's result in a fused kernel, op by op (arithmetic and
// comparisons over broadcast operands, Not, unary functions, casts, the column
// shifts of split and slice, concat's branches, embedding lookups, reshapes
// and splat constants; GEMMs are KernelBodyWriter::dotProduct).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelBodyWriter.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::cell;
using namespace cellc::codegen;

/// `a op b` for add, sub, mul and div.
static std::string binaryExpr(Operation *op, const std::string &a,
                              const std::string &b) {
  const char *symbol = isa<AddOp>(op)   ? " + "
                       : isa<SubOp>(op) ? " - "
                       : isa<MulOp>(op) ? " * "
                                        : " / ";
  return "(" + a + symbol + b + ")";
}

/// The C++ operator of a comparison op, or null for another op.
static const char *comparisonOperator(Operation *op) {
  if (isa<EqualOp>(op))
    return "==";
  if (isa<LessOp>(op))
    return "<";
  if (isa<LessOrEqualOp>(op))
    return "<=";
  if (isa<GreaterOp>(op))
    return ">";
  if (isa<GreaterOrEqualOp>(op))
    return ">=";
  return nullptr;
}

/// `x` through a unary function (sigmoid, tanh, erf, sqrt, exp, log,
/// softplus, neg, relu).
static std::string unaryExpr(Operation *op, const std::string &x,
                             bool isDouble) {
  if (isa<SigmoidOp>(op))
    return isDouble ? "(1.0 / (1.0 + exp(-" + x + ")))"
                    : "(1.0f / (1.0f + expf(-" + x + ")))";
  if (isa<TanhOp>(op))
    return (isDouble ? "tanh(" : "tanhf(") + x + ")";
  if (isa<ErfOp>(op))
    return (isDouble ? "erf(" : "erff(") + x + ")";
  if (isa<SqrtOp>(op))
    return (isDouble ? "sqrt(" : "sqrtf(") + x + ")";
  if (isa<ExpOp>(op))
    return (isDouble ? "exp(" : "expf(") + x + ")";
  if (isa<LogOp>(op))
    return (isDouble ? "log(" : "logf(") + x + ")";
  if (isa<SoftplusOp>(op))
    return isDouble
               ? "(" + x + " > 20.0 ? " + x + " : log1p(exp(" + x + ")))"
               : "(" + x + " > 20.0f ? " + x + " : log1pf(expf(" + x + ")))";
  if (isa<NegOp>(op))
    return "(-" + x + ")";
  return isDouble ? "fmax(" + x + ", 0.0)" : "fmaxf(" + x + ", 0.0f)";
}

/// `lhs ** rhs` of a pow op: a square (what LayerNorm's variance exports)
/// is `lhs * lhs`, as PyTorch computes it.
static std::string powExpr(Operation *op, const std::string &lhs,
                           const std::string &rhs, bool isDouble) {
  auto exponent = op->getOperand(1).getDefiningOp<ConstantOp>();
  auto dense = exponent ? exponent.getValue().dyn_cast<DenseElementsAttr>()
                        : DenseElementsAttr();
  if (dense && dense.isSplat() &&
      dense.getSplatValue<APFloat>().convertToDouble() == 2.0)
    return "(" + lhs + " * " + lhs + ")";
  return (isDouble ? "pow(" : "powf(") + lhs + ", " + rhs + ")";
}

/// The literal of a splat constant of element type `elementType`.
static FailureOr<std::string> constantLiteral(ConstantOp constant,
                                              Type elementType) {
  auto dense = constant.getValue().dyn_cast<DenseElementsAttr>();
  if (!dense || !dense.isSplat())
    return constant->emitError("code generation copies splat constants only");
  if (elementType.isa<FloatType>()) {
    std::optional<std::string> literal = floatLiteral(
        dense.getSplatValue<APFloat>().convertToDouble(), elementType.isF64());
    if (!literal)
      return constant->emitError("has a NaN constant, which code generation "
                                 "does not write");
    return *literal;
  }
  return std::to_string(dense.getSplatValue<APInt>().getSExtValue()) +
         (elementType.isSignlessInteger(64) ? "LL" : "");
}

FailureOr<std::string> KernelBodyWriter::compute(Operation *op, Value value,
                                                 const Index &index) {
  Type elementType = tensorOf(value).getElementType();
  if (isa<AddOp, SubOp, MulOp, DivOp, PowOp, EqualOp, LessOp, LessOrEqualOp,
          GreaterOp, GreaterOrEqualOp, WhereOp>(op))
    return broadcastingExpr(op, value, index);
  if (auto negation = dyn_cast<NotOp>(op)) {
    auto x = element(negation.getInput(), index);
    if (failed(x))
      return failure();
    return "(!" + *x + ")";
  }
  if (isa<SigmoidOp, TanhOp, ReluOp, ErfOp, SqrtOp, ExpOp, LogOp, SoftplusOp,
          NegOp>(op)) {
    auto x = element(op->getOperand(0), index);
    if (failed(x))
      return failure();
    return unaryExpr(op, *x, elementType.isF64());
  }
  if (isa<IdentityOp>(op))
    return this->element(op->getOperand(0), index);
  if (auto cast = dyn_cast<CastOp>(op)) {
    auto x = this->element(cast.getInput(), index);
    if (failed(x))
      return failure();
    return "(" + computeType(elementType) + ")(" + *x + ")";
  }
  if (auto split = dyn_cast<SplitOp>(op))
    return splitElement(split, value, index);
  if (auto slice = dyn_cast<SliceOp>(op))
    return sliceElement(slice, index);
  if (auto concat = dyn_cast<ConcatOp>(op))
    return concatElement(concat, elementType, index);
  if (auto gather = dyn_cast<GatherOp>(op))
    return gatherElement(gather, index);
  if (isa<ReshapeOp, SqueezeOp, UnsqueezeOp>(op))
    return reshapeElement(op, index);
  if (auto gemm = dyn_cast<GemmOp>(op))
    return dotProduct(gemm, index);
  if (auto constant = dyn_cast<ConstantOp>(op))
    return constantLiteral(constant, elementType);
  return op->emitError() << "'" << op->getName().getStringRef()
                         << "' has no CUDA code generation yet";
}

FailureOr<std::string> KernelBodyWriter::broadcastingExpr(Operation *op,
                                                          Value value,
                                                          const Index &index) {
  if (auto where = dyn_cast<WhereOp>(op)) {
    auto condition = broadcastOperand(where.getCondition(), value, index);
    auto lhs = broadcastOperand(where.getLhs(), value, index);
    auto rhs = broadcastOperand(where.getRhs(), value, index);
    if (failed(condition) || failed(lhs) || failed(rhs))
      return failure();
    return "(" + *condition + " ? " + *lhs + " : " + *rhs + ")";
  }
  auto lhs = broadcastOperand(op->getOperand(0), value, index);
  auto rhs = broadcastOperand(op->getOperand(1), value, index);
  if (failed(lhs) || failed(rhs))
    return failure();
  if (isa<AddOp, SubOp, MulOp, DivOp>(op))
    return binaryExpr(op, *lhs, *rhs);
  if (const char *comparison = comparisonOperator(op))
    return "(" + *lhs + " " + comparison + " " + *rhs + ")";
  return powExpr(op, *lhs, *rhs, tensorOf(value).getElementType().isF64());
}

/// The shape of a row of `value` (its dimensions after the batch).
static ArrayRef<int64_t> rowShape(Value value) {
  return tensorOf(value).getShape().drop_front();
}

/// The flat column of an input of a view (slice, split, concat) of a row
/// shaped `from` into a row shaped `to`, for column `col` of the result:
/// `map(d, x)` gives the input's coordinate on dimension d (after the batch)
/// from the result's coordinate x. A row of one dimension reads `map(0, col)`.
static std::string
viewColumn(ArrayRef<int64_t> from, ArrayRef<int64_t> to, const std::string &col,
           llvm::function_ref<std::string(size_t, const std::string &)> map) {
  if (to.size() <= 1)
    return map(0, col);
  std::string flat;
  int64_t toStride = 1, fromStride = 1;
  for (size_t d = to.size(); d-- > 0;) {
    std::string coordinate =
        toStride == 1 ? col : llvm::formatv("({0} / {1})", col, toStride).str();
    if (d > 0)
      coordinate = llvm::formatv("({0} % {1})", coordinate, to[d]).str();
    std::string term = map(d, coordinate);
    if (fromStride != 1)
      term = llvm::formatv("{0} * {1}", term, fromStride).str();
    flat = flat.empty() ? term : term + " + " + flat;
    toStride *= to[d];
    fromStride *= from[d];
  }
  return "(" + flat + ")";
}

/// The result's coordinate on dimension `axis` (after the batch) at `col`.
static std::string coordinateOf(ArrayRef<int64_t> shape, size_t axis,
                                const std::string &col) {
  if (shape.size() <= 1)
    return col;
  int64_t stride = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d)
    stride *= shape[d];
  std::string coordinate =
      stride == 1 ? col : llvm::formatv("({0} / {1})", col, stride).str();
  return axis == 0
             ? coordinate
             : llvm::formatv("({0} % {1})", coordinate, shape[axis]).str();
}

FailureOr<std::string>
KernelBodyWriter::splitElement(SplitOp split, Value value, const Index &index) {
  int64_t offset = 0;
  for (auto [i, size] : llvm::enumerate(split.getSizes())) {
    if (split.getResult(i) == value)
      break;
    offset += size;
  }
  if (split.getAxis() < 1)
    return split->emitError("code generation splits within a row only");
  size_t axis = split.getAxis() - 1;
  std::string col = viewColumn(
      rowShape(split.getInput()), rowShape(value), index.col,
      [&](size_t d, const std::string &x) {
        return d == axis ? llvm::formatv("({0} + {1})", x, offset).str() : x;
      });
  return this->element(split.getInput(), {index.row, col, index.lane});
}

FailureOr<std::string> KernelBodyWriter::sliceElement(SliceOp slice,
                                                      const Index &index) {
  if (llvm::is_contained(slice.getAxes(), 0))
    return slice->emitError("code generation slices within a row only");
  std::string col = viewColumn(
      rowShape(slice.getInput()), rowShape(slice.getResult()), index.col,
      [&](size_t d, const std::string &x) {
        for (auto [axis, start, step] :
             llvm::zip(slice.getAxes(), slice.getStarts(), slice.getSteps()))
          if (axis == int64_t(d) + 1)
            return llvm::formatv("({0} + {1} * {2})", start, x, step).str();
        return x;
      });
  return this->element(slice.getInput(), {index.row, col, index.lane});
}

FailureOr<std::string> KernelBodyWriter::concatElement(ConcatOp concat,
                                                       Type elementType,
                                                       const Index &index) {
  if (concat.getAxis() < 1)
    return concat->emitError("code generation concatenates within a row only");
  size_t axis = concat.getAxis() - 1;
  ArrayRef<int64_t> shape = rowShape(concat.getResult());
  std::string at = coordinateOf(shape, axis, index.col);
  std::string name = llvm::formatv("v{0}", counter_++).str();
  os_ << indent() << computeType(elementType) << " " << name << ";\n";
  int64_t start = 0;
  for (auto [i, input] : llvm::enumerate(concat.getInputs())) {
    int64_t width = rowShape(input)[axis];
    bool last = i + 1 == concat.getInputs().size();
    os_ << indent() << (i ? "else " : "")
        << (last ? std::string("{\n")
                 : llvm::formatv("if ({0} < {1}) {{\n", at, start + width)
                       .str());
    scopes_.emplace_back();
    std::string col = viewColumn(
        rowShape(input), shape, index.col, [&](size_t d, const std::string &x) {
          return d == axis ? llvm::formatv("({0} - {1})", x, start).str() : x;
        });
    auto x = this->element(input, {index.row, col, index.lane});
    if (failed(x))
      return failure();
    os_ << indent() << name << " = " << *x << ";\n";
    scopes_.pop_back();
    os_ << indent() << "}\n";
    start += width;
  }
  return name;
}

FailureOr<std::string> KernelBodyWriter::gatherElement(GatherOp gather,
                                                       const Index &index) {
  RankedTensorType data = tensorOf(gather.getData());
  if (gather.getAxis() != 0 || data.getRank() != 2 ||
      tensorOf(gather.getIndices()).getRank() != 1 ||
      hasBatch(gather.getData()))
    return gather->emitError("code generation supports embedding lookups: "
                             "rows of a [V, E] table by one index per row");
  auto table = gather.getData().dyn_cast<BlockArgument>();
  if (!table)
    return gather->emitError("code generation looks up tables that are "
                             "operands of the kernel");
  auto token = this->element(gather.getIndices(), {index.row, ""});
  if (failed(token))
    return failure();
  // The runtime rejects out-of-range tokens; the clamp keeps a bad one
  // from reading outside the table all the same.
  // Negative indices count from the end (ONNX).
  std::string wrapped =
      llvm::formatv("((long long)({0}) < 0 ? (long long)({0}) + {1}LL : "
                    "(long long)({0}))",
                    *token, data.getDimSize(0));
  std::string row = llvm::formatv("min(max({0}, 0LL), {1}LL)", wrapped,
                                  data.getDimSize(0) - 1);
  std::string value =
      llvm::formatv("in{0}[(size_t)({1}) * {2} + {3}]", table.getArgNumber(),
                    row, data.getDimSize(1), index.col);
  if (index.lane >= 0)
    return vectorComponent("&" + value, index.lane);
  Type tableElement = data.getElementType();
  if (tableElement.isF16() || tableElement.isBF16())
    return "(float)(" + value + ")";
  return value;
}

FailureOr<std::string> KernelBodyWriter::reshapeElement(Operation *op,
                                                        const Index &index) {
  // A reshape keeping the batch leading keeps a row's elements in order:
  // the same column of the input (a per-row scalar [B] reads no column).
  // [B] <-> [B, 1]: a per-row value read with no column becomes column 0
  // of its [B, 1] input, and the other way round.
  Value input = op->getOperand(0);
  Index at = index;
  if (tensorOf(input).getRank() >= 2 && at.col.empty())
    at.col = "0";
  else if (tensorOf(input).getRank() < 2)
    at.col = "";
  return this->element(input, at);
}
