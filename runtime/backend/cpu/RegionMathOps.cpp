//===- RegionMathOps.cpp - Math, comparison and row-reduction ops --------===//
//
// Erf, Sqrt, Exp, Log, Softplus, Neg, Pow, the comparisons, Not, Where, the row
// reductions (ReduceMean, ReduceSum, ReduceMax) and RowMatMul: the ops of
// layer-normalised cells, GELU heads, softmaxes, masks and attention, for
// the region interpreter (RegionInterpreter.cpp dispatches here).
// Broadcasting uses the index maps prepared once (RegionPreparation.cpp);
// ReduceMean's map sends each input element to the output element it is
// summed into. Common shapes skip the maps: Pow by 2 and Where over
// operands element by element or one a row are plain loops, and a whole
// row's reduction goes through RowReductions.h's lanes.
//
//===----------------------------------------------------------------------===//
#include "RegionInterpreterImpl.h"
#include "RowReductions.h"

#include "VectorMath.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace cellrun;
using namespace cellrun::cpu;
using cellpack::OpCode;

namespace {
/// Element `k` of row `r` of `value` through broadcast map `map`, as float.
float floatAt(const Value &value, const std::vector<int64_t> &map, int64_t r,
              int64_t k) {
  int64_t at = map.empty() ? k : map[k];
  return value.isFloat ? value.floatRow(r)[at]
                       : static_cast<float>(value.intRow(r)[at]);
}

/// Lanes of partial sums in dotProduct: those of a row's sum.
constexpr int64_t kDotLanes = kRowLanes;

/// sum over i < count of x[i * xStride] * y[i * yStride], in kDotLanes
/// partial sums (lane l takes i = l mod kDotLanes, in order; the compiler
/// vectorises them, a single running sum would wait on every add) added
/// pairwise at the end: a fixed order, whatever the row's neighbours.
float dotProduct(const float *x, int64_t xStride, const float *y,
                 int64_t yStride, int64_t count) {
  float lanes[kDotLanes] = {};
  int64_t i = 0;
  if (xStride == 1 && yStride == 1)
    for (; i + kDotLanes <= count; i += kDotLanes)
      for (int64_t l = 0; l < kDotLanes; ++l)
        lanes[l] += x[i + l] * y[i + l];
  else
    for (; i + kDotLanes <= count; i += kDotLanes)
      for (int64_t l = 0; l < kDotLanes; ++l)
        lanes[l] += x[(i + l) * xStride] * y[(i + l) * yStride];
  for (int64_t l = 0; i < count; ++i, ++l)
    lanes[l] += x[i * xStride] * y[i * yStride];
  for (int64_t width = kDotLanes / 2; width > 0; width /= 2)
    for (int64_t l = 0; l < width; ++l)
      lanes[l] += lanes[l + width];
  return lanes[0];
}

/// dotProduct of `Count` (at most kDotLanes) contiguous elements, with a
/// trip count the compiler unrolls: the same lanes and the same pairwise sum,
/// so the same bits, without the loops' overhead (a row's sum over a short
/// axis, Mamba's ReduceSums).
template <int64_t Count> float shortDot(const float *x, const float *y) {
  static_assert(Count <= kDotLanes, "one pass over the lanes");
  float lanes[kDotLanes] = {};
  for (int64_t l = 0; l < Count; ++l)
    lanes[l] += x[l] * y[l];
  for (int64_t width = kDotLanes / 2; width > 0; width /= 2)
    for (int64_t l = 0; l < width; ++l)
      lanes[l] += lanes[l + width];
  return lanes[0];
}

/// The shortDot for `count`, or null where there is none.
using ShortDot = float (*)(const float *, const float *);
ShortDot shortDotFor(int64_t count) {
  switch (count) {
  case 2:
    return shortDot<2>;
  case 3:
    return shortDot<3>;
  case 4:
    return shortDot<4>;
  case 8:
    return shortDot<8>;
  case 16:
    return shortDot<16>;
  default:
    return nullptr;
  }
}

/// Whether comparison `code` (Equal, Less, LessOrEqual, Greater,
/// GreaterOrEqual) holds between `a` and `b`.
template <typename T> bool compare(OpCode code, T a, T b) {
  switch (code) {
  case OpCode::Less:
    return a < b;
  case OpCode::LessOrEqual:
    return a <= b;
  case OpCode::Greater:
    return a > b;
  case OpCode::GreaterOrEqual:
    return a >= b;
  default:
    return a == b;
  }
}

int64_t intAt(const Value &value, const std::vector<int64_t> &map, int64_t r,
              int64_t k) {
  int64_t at = map.empty() ? k : map[k];
  return value.isFloat ? static_cast<int64_t>(value.floatRow(r)[at])
                       : value.intRow(r)[at];
}
} // namespace

/// Erf, Sqrt, Exp, Log, Softplus and Neg: float operand and result of equal
/// counts.
Status RegionInterpreter::Impl::executeUnaryMath(PreparedOp &prepared,
                                                 int64_t rows) {
  Value &out = values[prepared.results[0]];
  int64_t count = (out.hasBatch ? rows : 1) * out.count;
  const float *in = values[prepared.operands[0]].floats();
  float *result = out.f.data();
  switch (prepared.op->opcode()) {
  case OpCode::Erf:
    for (int64_t k = 0; k < count; ++k)
      result[k] = std::erf(in[k]);
    break;
  case OpCode::Sqrt:
    for (int64_t k = 0; k < count; ++k)
      result[k] = std::sqrt(in[k]);
    break;
  case OpCode::Exp:
    expArray(in, result, count); // vector code, the same bits in any batch
    break;
  case OpCode::Softplus:
    // PyTorch's default threshold: above 20, log1p(exp(x)) is x in fp32.
    for (int64_t k = 0; k < count; ++k)
      result[k] = in[k] > 20.0f ? in[k] : std::log1p(std::exp(in[k]));
    break;
  case OpCode::Neg:
    for (int64_t k = 0; k < count; ++k)
      result[k] = -in[k];
    break;
  default:
    for (int64_t k = 0; k < count; ++k)
      result[k] = std::log(in[k]);
    break;
  }
  return Status::ok();
}

/// Pow through the operands' broadcast maps (x ** 2 as x * x).
Status RegionInterpreter::Impl::executePow(PreparedOp &prepared, int64_t rows) {
  auto operand = [&](size_t n) -> const Value & {
    return values[prepared.operands[n]];
  };
  Value &out = values[prepared.results[0]];
  int64_t outRows = out.hasBatch ? rows : 1;
  const Value &base = operand(0), &exponent = operand(1);
  if (base.isFloat && exponent.isFloat && prepared.broadcast[0].empty() &&
      base.count == out.count && !exponent.hasBatch && exponent.count == 1 &&
      exponent.floatRow(0)[0] == 2.0f) {
    // A layer norm's square: one multiply a value, in a plain loop.
    for (int64_t r = 0; r < outRows; ++r) {
      const float *x = base.floatRow(r);
      float *y = out.f.data() + r * out.count;
      for (int64_t k = 0; k < out.count; ++k)
        y[k] = x[k] * x[k];
    }
    return Status::ok();
  }
  for (int64_t r = 0; r < outRows; ++r)
    for (int64_t k = 0; k < out.count; ++k) {
      float base = floatAt(operand(0), prepared.broadcast[0], r, k);
      float exponent = floatAt(operand(1), prepared.broadcast[1], r, k);
      // x ** 2 is x * x, as PyTorch computes it.
      out.f[r * out.count + k] =
          exponent == 2.0f ? base * base : std::pow(base, exponent);
    }
  return Status::ok();
}

/// Equal, Less, LessOrEqual, Greater and GreaterOrEqual through the
/// operands' broadcast maps: 1 where the comparison holds, else 0; Not: 1
/// where its operand is 0.
Status RegionInterpreter::Impl::executeComparison(PreparedOp &prepared,
                                                  int64_t rows) {
  OpCode code = prepared.op->opcode();
  auto operand = [&](size_t n) -> const Value & {
    return values[prepared.operands[n]];
  };
  Value &out = values[prepared.results[0]];
  int64_t outRows = out.hasBatch ? rows : 1;
  if (code == OpCode::Not) {
    for (int64_t r = 0; r < outRows; ++r)
      for (int64_t k = 0; k < out.count; ++k)
        out.i[r * out.count + k] =
            intAt(operand(0), prepared.broadcast[0], r, k) == 0;
    return Status::ok();
  }
  const Value &a = operand(0), &b = operand(1);
  for (int64_t r = 0; r < outRows; ++r)
    for (int64_t k = 0; k < out.count; ++k)
      out.i[r * out.count + k] =
          a.isFloat ? compare(code, floatAt(a, prepared.broadcast[0], r, k),
                              floatAt(b, prepared.broadcast[1], r, k))
                    : compare(code, intAt(a, prepared.broadcast[0], r, k),
                              intAt(b, prepared.broadcast[1], r, k));
  return Status::ok();
}

/// Where through the operands' broadcast maps: the second operand where
/// the condition (the first) is nonzero, else the third.
Status RegionInterpreter::Impl::executeWhere(PreparedOp &prepared,
                                             int64_t rows) {
  auto operand = [&](size_t n) -> const Value & {
    return values[prepared.operands[n]];
  };
  Value &out = values[prepared.results[0]];
  int64_t outRows = out.hasBatch ? rows : 1;
  // Each operand element by element or one a row (a skip flag choosing
  // between a new state and the old): plain loops, no index maps.
  auto stride = [&](size_t n) -> int64_t {
    const Value &value = operand(n);
    if (prepared.broadcast[n].empty() && value.count == out.count)
      return 1;
    return value.count == 1 ? 0 : -1;
  };
  int64_t condition = stride(0), first = stride(1), second = stride(2);
  // The condition is an integer value (RegionOpChecks.cpp).
  if (out.isFloat && !operand(0).isFloat && operand(1).isFloat &&
      operand(2).isFloat && condition >= 0 && first >= 0 && second >= 0) {
    const Value &flags = operand(0);
    for (int64_t r = 0; r < outRows; ++r) {
      const float *a = operand(1).floatRow(r), *b = operand(2).floatRow(r);
      const int64_t *c = flags.intRow(r);
      float *y = out.f.data() + r * out.count;
      for (int64_t k = 0; k < out.count; ++k)
        y[k] = c[k * condition] != 0 ? a[k * first] : b[k * second];
    }
    return Status::ok();
  }
  for (int64_t r = 0; r < outRows; ++r)
    for (int64_t k = 0; k < out.count; ++k) {
      bool take = intAt(operand(0), prepared.broadcast[0], r, k) != 0;
      size_t from = take ? 1 : 2;
      if (out.isFloat)
        out.f[r * out.count + k] =
            floatAt(operand(from), prepared.broadcast[from], r, k);
      else
        out.i[r * out.count + k] =
            intAt(operand(from), prepared.broadcast[from], r, k);
    }
  return Status::ok();
}

/// ReduceMean, ReduceSum and ReduceMax over a row: each input element into
/// the output element its prepared map names.
Status RegionInterpreter::Impl::executeReduction(PreparedOp &prepared,
                                                 int64_t rows) {
  const cellpack::PortableOp &op = *prepared.op;
  auto operand = [&](size_t n) -> const Value & {
    return values[prepared.operands[n]];
  };
  Value &out = values[prepared.results[0]];
  int64_t outRows = out.hasBatch ? rows : 1;
  const Value &in = operand(0);
  const std::vector<int64_t> &into = prepared.broadcast[0];
  OpCode code = op.opcode();
  if (out.count == 1) {
    // The whole row into one value (a layer norm's means, a softmax's max
    // and sum): in lanes that do not wait on each other (RowReductions.h).
    for (int64_t r = 0; r < outRows; ++r) {
      const float *row = in.floatRow(r);
      float total = code == OpCode::ReduceMax ? rowMax(row, in.count)
                                              : rowSum(row, in.count);
      if (code == OpCode::ReduceMean)
        total /= static_cast<float>(in.count);
      out.f[r] = total;
    }
    return Status::ok();
  }
  for (int64_t r = 0; r < outRows; ++r) {
    float *acc = out.f.data() + r * out.count;
    std::fill(acc, acc + out.count,
              code == OpCode::ReduceMax
                  ? -std::numeric_limits<float>::infinity()
                  : 0.0f);
    const float *row = in.floatRow(r);
    for (int64_t k = 0; k < in.count; ++k) {
      float &target = acc[into.empty() ? k : into[k]];
      // The largest element propagates NaN, as torch.max does.
      if (code != OpCode::ReduceMax)
        target += row[k];
      else if (!(target != target || target > row[k]))
        target = row[k];
    }
    if (code == OpCode::ReduceMean)
      for (int64_t k = 0; k < out.count; ++k)
        acc[k] /= static_cast<float>(in.count / out.count);
  }
  return Status::ok();
}

/// RowMatMul: per row, an m x k by k x n product (attention over a
/// memory): for wide untransposed B as axpys along its rows (vectorised
/// along n), else as dot products over k in lanes (dotProduct).
Status RegionInterpreter::Impl::executeRowMatMul(PreparedOp &prepared,
                                                 int64_t rows) {
  const cellpack::PortableOp &op = *prepared.op;
  auto operand = [&](size_t n) -> const Value & {
    return values[prepared.operands[n]];
  };
  Value &out = values[prepared.results[0]];
  const Value &a = operand(0), &b = operand(1);
  int64_t m = op.sizes()->Get(0), k = op.sizes()->Get(1),
          n = op.sizes()->Get(2);
  bool transA = op.trans_a(), transB = op.trans_b();
  bool axpys = !transB && n >= kDotLanes;
  // A sum over each line's k contiguous elements (n == 1: a ReduceSum or
  // ReduceMean over the last axis, the dot with a vector).
  ShortDot lineDot = !transA && n == 1 ? shortDotFor(k) : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    const float *lhs = a.floatRow(r), *rhs = b.floatRow(r);
    float *result = out.f.data() + r * out.count;
    if (lineDot) {
      for (int64_t i = 0; i < m; ++i)
        result[i] = lineDot(lhs + i * k, rhs);
      continue;
    }
    for (int64_t i = 0; i < m; ++i) {
      float *line = result + i * n;
      const float *lhsLine = transA ? lhs + i : lhs + i * k;
      int64_t lhsStride = transA ? m : 1;
      if (!axpys) {
        for (int64_t j = 0; j < n; ++j)
          line[j] = transB ? dotProduct(lhsLine, lhsStride, rhs + j * k, 1, k)
                           : dotProduct(lhsLine, lhsStride, rhs + j, n, k);
        continue;
      }
      std::fill(line, line + n, 0.0f);
      for (int64_t kk = 0; kk < k; ++kk) {
        float weight = lhsLine[kk * lhsStride];
        const float *rhsLine = rhs + kk * n;
        for (int64_t j = 0; j < n; ++j)
          line[j] += weight * rhsLine[j];
      }
    }
  }
  return Status::ok();
}
