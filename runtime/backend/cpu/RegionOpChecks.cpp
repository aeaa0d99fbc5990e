//===- RegionOpChecks.cpp - Each op of a region against its values -------===//
//
// Before a region's index maps are prepared (RegionPreparation.cpp), every
// op's arity, axes and shapes are checked against its values, by op family,
// so that a malformed region is an error and never an out-of-bounds access
// when the interpreter runs it.
//
//===----------------------------------------------------------------------===//
#include "RegionInterpreterImpl.h"

#include <string>

using namespace cellrun;
using namespace cellrun::cpu;
using cellpack::OpCode;

namespace {
/// The checks of one op against the region's values: whether its operands,
/// results and axis fit its opcode.
class OpFit {
public:
  /// Checks `prepared` against `values` (both must outlive the checks).
  OpFit(const std::vector<Value> &values, const PreparedOp &prepared)
      : values_(values), prepared_(prepared), op_(*prepared.op),
        operands_(prepared.operands.size()), results_(prepared.results.size()),
        axis_(prepared.op->axis()) {}

  /// Dispatches on the opcode to the check of its family (an opcode without
  /// one fits).
  bool fits() const {
    switch (op_.opcode()) {
    case OpCode::Add:
    case OpCode::Sub:
    case OpCode::Mul:
    case OpCode::Div:
      return arithmeticFits();
    case OpCode::Sigmoid:
    case OpCode::Tanh:
    case OpCode::Relu:
    case OpCode::Erf:
    case OpCode::Sqrt:
    case OpCode::Exp:
    case OpCode::Log:
    case OpCode::Softplus:
    case OpCode::Neg:
      return unaryFloatFits();
    case OpCode::Cast:
    case OpCode::Identity:
    case OpCode::Reshape:
    case OpCode::Squeeze:
    case OpCode::Unsqueeze:
    case OpCode::Transpose:
    case OpCode::Slice:
      return oneToOneFits();
    case OpCode::Split:
      return splitFits();
    case OpCode::Concat:
      return concatFits();
    case OpCode::Gather:
      return gatherFits();
    case OpCode::ArgMax:
      return argMaxFits();
    case OpCode::Gemm:
      return gemmFits();
    case OpCode::Constant:
      return arity(0, 0, 1);
    case OpCode::RowMatMul:
      return rowMatMulFits();
    case OpCode::Pow:
    case OpCode::Equal:
    case OpCode::Less:
    case OpCode::LessOrEqual:
    case OpCode::Greater:
    case OpCode::GreaterOrEqual:
    case OpCode::Where:
      return powEqualOrWhereFits();
    case OpCode::Not:
      return arity(1, 1, 1) && broadcastResult() && !operand(0).isFloat &&
             !result(0).isFloat;
    case OpCode::ReduceMean:
    case OpCode::ReduceSum:
    case OpCode::ReduceMax:
      return reductionFits();
    }
    return true;
  }

private:
  /// Between `minOperands` and `maxOperands` operands, and `wantResults`
  /// results (0: at least one).
  bool arity(size_t minOperands, size_t maxOperands, size_t wantResults) const {
    return operands_ >= minOperands && operands_ <= maxOperands &&
           (wantResults == 0 ? results_ >= 1 : results_ == wantResults);
  }
  /// The rank of value `id`.
  int64_t rank(uint32_t id) const {
    return static_cast<int64_t>(values_[id].shape.size());
  }
  /// Whether value `id` is stored as floats.
  bool isFloat(uint32_t id) const { return values_[id].isFloat; }
  /// The op's operand `n`.
  const Value &operand(size_t n) const {
    return values_[prepared_.operands[n]];
  }
  /// The op's result `n`.
  const Value &result(size_t n) const { return values_[prepared_.results[n]]; }

  /// The result's shape is exactly the operands' under numpy broadcasting.
  bool broadcastResult() const {
    const std::vector<int64_t> &to = values_[prepared_.results[0]].shape;
    for (uint32_t id : prepared_.operands)
      if (values_[id].shape.size() > to.size())
        return false;
    for (size_t d = 0; d < to.size(); ++d) {
      int64_t want = 1;
      for (uint32_t id : prepared_.operands) {
        const std::vector<int64_t> &from = values_[id].shape;
        size_t offset = to.size() - from.size();
        int64_t dim = d < offset ? 1 : from[d - offset];
        if (dim != 1 && want != 1 && dim != want)
          return false;
        if (dim != 1)
          want = dim;
      }
      if (to[d] != want)
        return false;
    }
    return true;
  }

  /// The dimensions of two values agree except (maybe) on `axis`.
  bool sameExceptAxis(uint32_t a, uint32_t b, int64_t axis) const {
    const std::vector<int64_t> &x = values_[a].shape, &y = values_[b].shape;
    if (x.size() != y.size())
      return false;
    for (size_t d = 0; d < x.size(); ++d)
      if (static_cast<int64_t>(d) != axis && x[d] != y[d])
        return false;
    return true;
  }

  /// Every dimension of a broadcast operand is 1 or the result's.
  bool broadcastsTo(uint32_t operandId, uint32_t resultId) const {
    const std::vector<int64_t> &from = values_[operandId].shape,
                               &to = values_[resultId].shape;
    if (from.size() > to.size())
      return false;
    size_t offset = to.size() - from.size();
    for (size_t d = 0; d < from.size(); ++d)
      if (from[d] != 1 && from[d] != to[d + offset])
        return false;
    return true;
  }

  /// Add, Sub, Mul and Div: two operands broadcast to the result, of its
  /// kind (float or integer).
  bool arithmeticFits() const {
    return arity(2, 2, 1) && broadcastResult() &&
           isFloat(prepared_.results[0]) == isFloat(prepared_.operands[0]);
  }

  /// Sigmoid, Tanh, Relu, Erf, Sqrt, Exp, Log, Softplus and Neg: a float
  /// operand and a float result of as many elements.
  bool unaryFloatFits() const {
    return arity(1, 1, 1) && isFloat(prepared_.operands[0]) &&
           isFloat(prepared_.results[0]) && operand(0).count == result(0).count;
  }

  /// Cast, Identity, Reshape, Squeeze, Unsqueeze, Transpose and Slice: one
  /// operand, one result, of as many elements except for Slice.
  bool oneToOneFits() const {
    bool ok = arity(1, 1, 1);
    if (ok && op_.opcode() != OpCode::Slice)
      ok = operand(0).count == result(0).count;
    return ok;
  }

  /// Split along the axis: results like the operand except there, whose
  /// sizes there add up to the operand's.
  bool splitFits() const {
    bool ok =
        arity(1, 1, 0) && axis_ >= 0 && axis_ < rank(prepared_.operands[0]);
    if (ok) {
      int64_t total = 0;
      for (uint32_t id : prepared_.results) {
        ok &= sameExceptAxis(id, prepared_.operands[0], axis_);
        if (ok)
          total += values_[id].shape[axis_];
      }
      ok &= ok && total == operand(0).shape[axis_];
    }
    return ok;
  }

  /// Concat along the axis: operands like the result except there, whose
  /// sizes there add up to the result's.
  bool concatFits() const {
    bool ok = operands_ >= 1 && results_ == 1 && axis_ >= 0 &&
              axis_ < rank(prepared_.results[0]);
    if (ok) {
      int64_t total = 0;
      for (uint32_t id : prepared_.operands) {
        ok &= sameExceptAxis(id, prepared_.results[0], axis_);
        if (ok)
          total += values_[id].shape[axis_];
      }
      ok &= ok && total == result(0).shape[axis_];
    }
    return ok;
  }

  /// Gather along an axis of the data that is not the batch, into a result
  /// of the data's other elements per index.
  bool gatherFits() const {
    bool ok =
        arity(2, 2, 1) && axis_ >= 0 && axis_ < rank(prepared_.operands[0]);
    // Axis 0 of a value with rows is the batch: nothing gathers across it.
    ok = ok && !(axis_ == 0 && operand(0).hasBatch);
    if (ok) {
      const Value &data = operand(0);
      int64_t rows = product(data.shape, 0, axis_) *
                     product(data.shape, axis_ + 1, data.shape.size());
      ok = result(0).count == rows * operand(1).count;
    }
    return ok;
  }

  /// ArgMax along a non-empty axis, into an integer result without it.
  bool argMaxFits() const {
    bool ok = arity(1, 1, 1) && axis_ >= 0 &&
              axis_ < rank(prepared_.operands[0]) && !result(0).isFloat;
    if (ok) {
      const Value &input = operand(0);
      ok = input.shape[axis_] > 0 &&
           result(0).count * input.shape[axis_] == input.count;
    }
    return ok;
  }

  /// Gemm: float rows of A times a float matrix B (transposed or not) into
  /// float rows of D, plus a float C that broadcasts to D.
  bool gemmFits() const {
    bool ok = arity(2, 3, 1) && rank(prepared_.operands[0]) >= 1 &&
              rank(prepared_.operands[1]) == 2;
    if (ok) {
      const std::vector<int64_t> &b = operand(1).shape;
      const Value &a = operand(0), &out = result(0);
      int64_t depth = a.shape.back(), columns = b[op_.trans_b() ? 0 : 1];
      ok = depth > 0 && b[op_.trans_b() ? 1 : 0] == depth &&
           a.count % depth == 0 && !out.shape.empty() &&
           out.shape.back() == columns &&
           out.count == a.count / depth * columns && a.isFloat &&
           isFloat(prepared_.operands[1]) && out.isFloat;
      if (ok && operands_ == 3)
        ok = isFloat(prepared_.operands[2]) &&
             broadcastsTo(prepared_.operands[2], prepared_.results[0]);
    }
    return ok;
  }

  /// RowMatMul: float operands of m x k and k x n elements and a float
  /// result of m x n with the batch, for the op's sizes m, k, n.
  bool rowMatMulFits() const {
    std::vector<int64_t> mkn = toVector(op_.sizes());
    bool ok = arity(2, 2, 1) && mkn.size() == 3 && operand(0).isFloat &&
              operand(1).isFloat && result(0).isFloat && result(0).hasBatch;
    ok &= ok && mkn[0] > 0 && mkn[1] > 0 && mkn[2] > 0 &&
          operand(0).count == mkn[0] * mkn[1] &&
          operand(1).count == mkn[1] * mkn[2] &&
          result(0).count == mkn[0] * mkn[2];
    return ok;
  }

  /// Pow, the comparisons and Where: operands broadcast to the result; Pow
  /// on floats, comparisons into integers, Where with an integer condition
  /// and alternatives of the result's kind.
  bool powEqualOrWhereFits() const {
    size_t count = op_.opcode() == OpCode::Where ? 3 : 2;
    bool ok = arity(count, count, 1);
    ok = ok && broadcastResult();
    bool floatResult = result(0).isFloat;
    if (ok && op_.opcode() == OpCode::Pow)
      ok = floatResult && operand(0).isFloat;
    if (ok && op_.opcode() != OpCode::Pow && op_.opcode() != OpCode::Where)
      ok = !floatResult;
    if (ok && op_.opcode() == OpCode::Where)
      ok = !operand(0).isFloat && operand(1).isFloat == floatResult &&
           operand(2).isFloat == floatResult;
    return ok;
  }

  /// ReduceMean, ReduceSum and ReduceMax: floats over axes that are not the
  /// batch, into a float result of the other elements.
  bool reductionFits() const {
    bool ok = arity(1, 1, 1) && operand(0).isFloat && result(0).isFloat &&
              op_.axes() && op_.axes()->size() > 0;
    const Value &input = operand(0);
    int64_t reduced = 1;
    for (int64_t a : toVector(op_.axes())) {
      ok &= ok && a >= 0 && a < rank(prepared_.operands[0]) &&
            !(a == 0 && input.hasBatch);
      if (ok)
        reduced *= input.shape[a];
    }
    ok &= ok && reduced * result(0).count == input.count;
    return ok;
  }

  const std::vector<Value> &values_;
  const PreparedOp &prepared_;
  const cellpack::PortableOp &op_;
  size_t operands_, results_; // how many
  int64_t axis_;
};
} // namespace

/// Checks an op's arity, axes and shapes against its values, so that a
/// malformed region is an error and never an out-of-bounds access.
Status RegionInterpreter::Impl::validate(const PreparedOp &prepared) {
  const cellpack::PortableOp &op = *prepared.op;
  std::string what = std::string("op ") + cellpack::EnumNameOpCode(op.opcode());
  if (!OpFit(values, prepared).fits())
    return invalidRegion(what +
                         " has operands, results or an axis that do not fit");
  for (uint32_t id : prepared.operands)
    if (values[id].isFloat != values[prepared.operands[0]].isFloat &&
        op.opcode() != OpCode::Gather && op.opcode() != OpCode::Cast &&
        op.opcode() != OpCode::Where)
      return invalidRegion(what + " mixes float and integer operands");
  return Status::ok();
}
