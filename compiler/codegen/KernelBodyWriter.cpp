//===- KernelBodyWriter.cpp - Expressions of a fused kernel --------------===//
//
// The body of a fused op is straight-line tensor code over [batch, width]
// values. The kernel computes one element (r, c) per thread (or four in
// float4 mode): each value is asked for at an index, loads read operands at
// that index (through the row vector for gather operands), split/slice shift
// the column, concat picks a side, a GEMM inside a single-kernel step is a
// dot-product loop, and every computed value lands in a local once per index
// (a scope per branch or loop keeps their locals apart). Each op's
// expression is written by KernelOpExpressions.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelBodyWriter.h"
#include "compiler/codegen/FusedKernelWriter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <iomanip>
#include <sstream>

using namespace mlir;
using namespace mlir::cell;
using namespace cellc::codegen;

std::string cellc::codegen::cudaType(Type type) {
  if (type.isF32())
    return "float";
  if (type.isF64())
    return "double";
  if (type.isF16())
    return "__half";
  if (type.isBF16())
    return "__nv_bfloat16";
  if (type.isSignlessInteger(64))
    return "long long";
  if (type.isSignlessInteger(32))
    return "int";
  if (type.isSignlessInteger(16))
    return "short";
  if (type.isSignlessInteger(8))
    return "signed char";
  if (type.isSignlessInteger(1))
    return "bool";
  return "";
}

/// The type the kernel computes an element type in: float for the narrow
/// floats, the type itself otherwise.
std::string cellc::codegen::computeType(Type type) {
  if (type.isF16() || type.isBF16())
    return "float";
  return cudaType(type);
}

/// A C++ literal that reads back as exactly `value` (as float unless
/// `isDouble`); infinities (a masked_fill with -inf) by their bits; nullopt
/// for NaN.
std::optional<std::string> cellc::codegen::floatLiteral(double value,
                                                        bool isDouble) {
  if (std::isnan(value))
    return std::nullopt;
  if (std::isinf(value)) {
    std::string infinity = isDouble
                               ? "__longlong_as_double(0x7ff0000000000000LL)"
                               : "__int_as_float(0x7f800000)";
    return value < 0 ? "(-" + infinity + ")" : infinity;
  }
  std::ostringstream os;
  os << std::setprecision(isDouble ? 17 : 9) << value;
  std::string text = os.str();
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return isDouble ? text : text + "f";
}

RankedTensorType cellc::codegen::tensorOf(Value value) {
  return value.getType().cast<RankedTensorType>();
}

/// Columns per row of a batch value ([B] -> 1, [B, C] -> C, [B, S, C] ->
/// S * C: a row holds the dimensions after the batch in order).
int64_t cellc::codegen::rowWidth(Value value) {
  RankedTensorType type = tensorOf(value);
  int64_t width = 1;
  for (int64_t d = 1; d < type.getRank(); ++d)
    width *= type.getDimSize(d);
  return width;
}

void KernelBodyWriter::analyzeBatch() {
  Block &body = fused_.getBody().front();
  for (auto [index, arg] : llvm::enumerate(body.getArguments()))
    if (fused_.getOperandAccess()[index].cast<AccessAttr>().getValue() !=
        Access::Broadcast)
      batchValues_.insert(arg);
  for (Operation &op : body) {
    bool batch = llvm::any_of(op.getOperands(), [&](Value operand) {
      return batchValues_.contains(operand);
    });
    if (isa<GatherOp>(op))
      batch = batchValues_.contains(op.getOperand(1));
    if (batch)
      for (Value result : op.getResults())
        batchValues_.insert(result);
  }
}

std::string KernelBodyWriter::local(Value value, const std::string &expr) {
  Type element = tensorOf(value).getElementType();
  std::string name = llvm::formatv("v{0}", counter_++).str();
  os_ << indent() << "const " << computeType(element) << " " << name << " = "
      << expr << ";\n";
  return name;
}

std::string KernelBodyWriter::vectorComponent(const std::string &address,
                                              int lane) {
  std::string key = "float4@" + address;
  std::string name;
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend() && name.empty();
       ++scope)
    if (auto found = scope->find(key); found != scope->end())
      name = found->second;
  if (name.empty()) {
    name = llvm::formatv("v{0}", counter_++).str();
    os_ << indent() << "const float4 " << name
        << " = *reinterpret_cast<const float4 *>(" << address << ");\n";
    scopes_.back()[key] = name;
  }
  return name + "." + kLaneNames[lane];
}

FailureOr<std::string> KernelBodyWriter::element(Value value,
                                                 const Index &index) {
  if (auto found = defined_.find(value); found != defined_.end())
    return found->second;
  std::string key;
  if (!ids_.count(value))
    ids_[value] = ids_.size();
  key = llvm::formatv("{0}@{1},{2}#{3}", ids_[value], index.row, index.col,
                      index.lane)
            .str();
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope)
    if (auto found = scope->find(key); found != scope->end())
      return found->second;
  FailureOr<std::string> expr =
      value.isa<BlockArgument>() ? load(value.cast<BlockArgument>(), index)
                                 : compute(value.getDefiningOp(), value, index);
  if (failed(expr))
    return failure();
  // Loads and shifted views are cheap to repeat; computed values are kept.
  bool isView = value.isa<BlockArgument>() ||
                isa<SplitOp, SliceOp, IdentityOp, ReshapeOp, SqueezeOp,
                    UnsqueezeOp, ConstantOp>(value.getDefiningOp());
  std::string name = isView ? *expr : local(value, *expr);
  scopes_.back()[key] = name;
  return name;
}

FailureOr<std::string> KernelBodyWriter::load(BlockArgument arg,
                                              const Index &index) {
  unsigned i = arg.getArgNumber();
  Access access = fused_.getOperandAccess()[i].cast<AccessAttr>().getValue();
  RankedTensorType type = tensorOf(arg);
  bool columns =
      access == Access::Broadcast ? type.getRank() >= 1 : type.getRank() == 2;
  if (index.lane >= 0 && columns) {
    // Vector mode: one float4 load serves the four lanes.
    FailureOr<std::string> scalar = load(arg, {index.row, index.col});
    if (failed(scalar))
      return failure();
    return vectorComponent("&" + *scalar, index.lane);
  }
  std::string value;
  if (access == Access::Broadcast) {
    // A weight: a vector read at the column, a matrix at (row, column).
    if (type.getRank() == 0)
      value = llvm::formatv("in{0}[0]", i).str();
    else if (type.getRank() == 1)
      value = llvm::formatv("in{0}[{1}]", i, index.col).str();
    else if (type.getRank() == 2)
      value = llvm::formatv("in{0}[(size_t)({1}) * {2} + {3}]", i, index.row,
                            type.getDimSize(1), index.col)
                  .str();
    else if (index.row == "0") // broadcast into rows of matrices: flat
      value = llvm::formatv("in{0}[{1}]", i, index.col).str();
    else
      return fused_.emitError()
             << "operand #" << i << " of type " << type
             << " has more dimensions than code generation reads";
  } else {
    std::string row = access == Access::Gather
                          ? llvm::formatv("rows{0}[{1}]", i, index.row).str()
                          : index.row;
    value = type.getRank() < 2
                ? llvm::formatv("in{0}[{1}]", i, row).str()
                : llvm::formatv("in{0}[(size_t)({1}) * {2} + {3}]", i, row,
                                rowWidth(arg), index.col)
                      .str();
  }
  Type element = type.getElementType();
  if (element.isF16() || element.isBF16())
    return "(float)(" + value + ")";
  return value;
}

/// The index of `operand` when the result of a broadcasting op is read at
/// `index`: dimensions of size 1 read element 0.
FailureOr<std::string> KernelBodyWriter::broadcastOperand(Value operand,
                                                          Value result,
                                                          const Index &index) {
  RankedTensorType type = tensorOf(operand);
  Index at = index;
  bool batch = hasBatch(operand);
  RankedTensorType resultType = tensorOf(result);
  if (resultType.getRank() > 2) {
    // [batch, m, n] rows: the operand's row shape, right-aligned (a weight's
    // leading dimension may stand for the batch if it is 1).
    ArrayRef<int64_t> to = resultType.getShape().drop_front();
    ArrayRef<int64_t> shape = type.getShape();
    if (batch)
      shape = shape.drop_front();
    else if (shape.size() > to.size() && shape.front() == 1)
      shape = shape.drop_front();
    if ((batch && type.getRank() != resultType.getRank()) ||
        shape.size() > to.size())
      return fused_.emitError()
             << "cannot broadcast " << type << " to " << resultType;
    SmallVector<int64_t> from(to.size() - shape.size(), 1);
    from.append(shape.begin(), shape.end());
    bool same = from == SmallVector<int64_t>(to.begin(), to.end());
    if (batch && same)
      return element(operand, at);
    at.lane = -1;
    at.col = same ? index.col : broadcastColumn(from, to, index.col);
    if (!batch) // a weight, the same for every row: read at its element
      at.row = "0";
    return element(operand, at);
  }
  if (!batch) {
    // [C], [1, C], [] or [1]: no row; a size-1 column is column 0.
    int64_t cols = type.getRank() == 0 ? 1 : type.getShape().back();
    at.row = "0";
    at.col = cols == 1 ? "0" : index.col;
    if (cols == 1)
      at.lane = -1;
    if (type.getRank() == 2 && type.getDimSize(0) != 1)
      return fused_.emitError()
             << "cannot broadcast " << type << " over the batch";
  } else if (type.getRank() == 2 && type.getDimSize(1) == 1 &&
             rowWidth(result) != 1) {
    at.col = "0";
    at.lane = -1;
  }
  return element(operand, at);
}

/// One element of a GEMM inside a kernel (the single-kernel steps of small
/// batches): a loop over the contracted dimension, the operand A computed
/// in the loop at (row, k) and B read from the weights.
FailureOr<std::string> KernelBodyWriter::dotProduct(GemmOp gemm,
                                                    const Index &index) {
  RankedTensorType b = tensorOf(gemm.getB());
  if (gemm.getTransA() || b.getRank() != 2 || hasBatch(gemm.getB()))
    return gemm.emitError("code generation computes GEMMs with an "
                          "untransposed row operand and a weight matrix");
  bool transB = gemm.getTransB();
  int64_t depth = b.getDimSize(transB ? 1 : 0);
  std::string sum = llvm::formatv("v{0}", counter_++).str();
  std::string k = llvm::formatv("k{0}", counter_++).str();
  os_ << indent() << "float " << sum << " = 0.0f;\n"
      << indent() << "for (int " << k << " = 0; " << k << " < " << depth
      << "; ++" << k << ") {\n";
  scopes_.emplace_back();
  auto a = element(gemm.getA(), {index.row, k});
  auto weight = transB ? element(gemm.getB(), {index.col, k})
                       : element(gemm.getB(), {k, index.col});
  if (failed(a) || failed(weight))
    return failure();
  os_ << indent() << sum << " += " << *a << " * " << *weight << ";\n";
  scopes_.pop_back();
  os_ << indent() << "}\n";
  std::string result = sum;
  float alpha = gemm.getAlpha().convertToFloat();
  if (alpha != 1.0f)
    result = "(" + *floatLiteral(alpha, false) + " * " + result + ")";
  if (Value c = gemm.getC()) {
    auto bias = broadcastOperand(c, gemm.getResult(), index);
    if (failed(bias))
      return failure();
    float beta = gemm.getBeta().convertToFloat();
    std::string scaled =
        beta == 1.0f ? *bias : *floatLiteral(beta, false) + " * " + *bias;
    result = "(" + result + " + " + scaled + ")";
  }
  return result;
}
