//===- RegionPreparation.cpp - Checking a region, index maps ------------===//
//
// Before a kernel region runs: every op's arity, axes and shapes are checked
// against its values (a malformed artifact is an error, never an
// out-of-bounds access), which values have the batch is propagated, and the
// index maps of broadcasting and data movement are computed once.
//
//===----------------------------------------------------------------------===//
#include "RegionInterpreterImpl.h"

#include "ElementIO.h"

#include <algorithm>

using namespace cellrun;
using namespace cellrun::cpu;
using cellpack::OpCode;

/// The runs of consecutive elements of a move map (a split or concat of
/// rows is a few long runs).
static std::vector<MoveRun> moveRuns(const MoveMap &map) {
  std::vector<MoveRun> runs;
  for (int64_t k = 0; k < static_cast<int64_t>(map.size()); ++k) {
    if (!runs.empty()) {
      MoveRun &last = runs.back();
      if (last.operand == map[k].first &&
          last.from + last.length == map[k].second) {
        ++last.length;
        continue;
      }
    }
    runs.push_back({map[k].first, map[k].second, k, 1});
  }
  return runs;
}

Status RegionInterpreter::Impl::prepare() {
  const cellpack::PortableRegion *region = step.region();
  if (!region || !region->values())
    return invalidRegion("missing region");
  uint32_t numInputs = region->num_inputs();
  if (numInputs > region->values()->size() || !step.input_access() ||
      step.input_access()->size() != numInputs)
    return invalidRegion("inputs and access kinds disagree");
  for (const cellpack::PortableValue *value : *region->values()) {
    if (Status status = checkShape(values.size(), value->shape());
        !status.isOk())
      return status;
    Value v;
    v.dtype = value->dtype();
    v.isFloat = isFloatType(v.dtype);
    v.shape = toVector(value->shape());
    values.push_back(std::move(v));
  }
  for (uint32_t i = 0; i < numInputs; ++i)
    values[i].hasBatch =
        step.input_access()->Get(i) != cellpack::Access::Broadcast;
  for (const cellpack::PortableOp *op : *region->ops()) {
    PreparedOp prepared;
    prepared.op = op;
    if (op->operands())
      prepared.operands.assign(op->operands()->begin(), op->operands()->end());
    if (op->results())
      prepared.results.assign(op->results()->begin(), op->results()->end());
    bool batch = false;
    for (uint32_t operand : prepared.operands) {
      if (operand >= values.size())
        return invalidRegion("operand index out of range");
      batch |= values[operand].hasBatch;
    }
    if (op->opcode() == OpCode::Gather && prepared.operands.size() == 2)
      batch = values[prepared.operands[1]].hasBatch;
    if (op->opcode() == OpCode::Constant)
      batch = false;
    for (uint32_t result : prepared.results) {
      if (result >= values.size())
        return invalidRegion("result index out of range");
      values[result].hasBatch = batch;
    }
    ops.push_back(std::move(prepared));
  }
  for (Value &value : values) {
    if (value.hasBatch && !value.shape.empty())
      value.shape[0] = 1;
    value.count = product(value.shape, 0, value.shape.size());
  }
  if (Status status = checkValueSizes(); !status.isOk())
    return status;
  if (Status status = checkDefinitions(numInputs); !status.isOk())
    return status;
  if (region->results())
    results.assign(region->results()->begin(), region->results()->end());
  for (uint32_t result : results)
    if (result >= values.size())
      return invalidRegion("region result index out of range");
  if (Status status = checkBoundary(numInputs); !status.isOk())
    return status;
  for (PreparedOp &prepared : ops) {
    if (Status status = validate(prepared); !status.isOk())
      return status;
    if (Status status = prepareMoves(prepared); !status.isOk())
      return status;
    for (const MoveMap &map : prepared.moves)
      prepared.runs.push_back(moveRuns(map));
    hasGemm |= prepared.op->opcode() == OpCode::Gemm;
  }
  if (!options.packedInputs.empty() && options.packedInputs.size() != numInputs)
    return invalidRegion("packed weights do not match the inputs");
  allocate();
  return Status::ok();
}

/// Rows per block: every row of the task when the region holds a GEMM (its
/// weights are then read once per task), otherwise as many as keep the
/// block's values within about 128 KB (in L2 while the ops run).
void RegionInterpreter::Impl::allocate() {
  constexpr int64_t kBlockBytes = 128 * 1024;
  rowBytes = 0;
  for (const Value &value : values)
    if (value.hasBatch)
      rowBytes += value.count * (value.isFloat ? 4 : 8);
  int64_t maxRows = std::max<int64_t>(options.maxRows, 1);
  blockRows =
      hasGemm ? maxRows
              : std::clamp<int64_t>(
                    kBlockBytes / std::max<int64_t>(rowBytes, 1), 1, maxRows);
  uint32_t numInputs = step.region()->num_inputs();
  for (uint32_t id = 0; id < values.size(); ++id) {
    Value &value = values[id];
    if (id < numInputs && readInPlace(value))
      continue; // runRows points it at the weight
    int64_t elements = value.count * (value.hasBatch ? blockRows : 1);
    if (value.isFloat)
      value.f.assign(elements, 0.0f);
    else
      value.i.assign(elements, 0);
  }
}

/// Checks an op's arity, axes and shapes against its values, so that a
/// malformed region is an error and never an out-of-bounds access.
Status RegionInterpreter::Impl::validate(const PreparedOp &prepared) {
  const cellpack::PortableOp &op = *prepared.op;
  std::string what = std::string("op ") + cellpack::EnumNameOpCode(op.opcode());
  size_t operands = prepared.operands.size(), results = prepared.results.size();
  auto arity = [&](size_t minOperands, size_t maxOperands, size_t wantResults) {
    return operands >= minOperands && operands <= maxOperands &&
           (wantResults == 0 ? results >= 1 : results == wantResults);
  };
  auto rank = [&](uint32_t id) {
    return static_cast<int64_t>(values[id].shape.size());
  };
  // The result's shape is exactly the operands' under numpy broadcasting.
  auto broadcastResult = [&]() {
    const std::vector<int64_t> &to = values[prepared.results[0]].shape;
    for (uint32_t operand : prepared.operands)
      if (values[operand].shape.size() > to.size())
        return false;
    for (size_t d = 0; d < to.size(); ++d) {
      int64_t want = 1;
      for (uint32_t operand : prepared.operands) {
        const std::vector<int64_t> &from = values[operand].shape;
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
  };
  // The dimensions of two values agree except (maybe) on `axis`.
  auto sameExceptAxis = [&](uint32_t a, uint32_t b, int64_t axis) {
    const std::vector<int64_t> &x = values[a].shape, &y = values[b].shape;
    if (x.size() != y.size())
      return false;
    for (size_t d = 0; d < x.size(); ++d)
      if (static_cast<int64_t>(d) != axis && x[d] != y[d])
        return false;
    return true;
  };
  auto isFloat = [&](uint32_t id) { return values[id].isFloat; };
  // Every dimension of a broadcast operand is 1 or the result's.
  auto broadcastsTo = [&](uint32_t operand, uint32_t result) {
    const std::vector<int64_t> &from = values[operand].shape,
                               &to = values[result].shape;
    if (from.size() > to.size())
      return false;
    size_t offset = to.size() - from.size();
    for (size_t d = 0; d < from.size(); ++d)
      if (from[d] != 1 && from[d] != to[d + offset])
        return false;
    return true;
  };
  bool ok = true;
  int64_t axis = op.axis();
  switch (op.opcode()) {
  case OpCode::Add:
  case OpCode::Sub:
  case OpCode::Mul:
  case OpCode::Div:
    ok = arity(2, 2, 1) && broadcastResult() &&
         isFloat(prepared.results[0]) == isFloat(prepared.operands[0]);
    break;
  case OpCode::Sigmoid:
  case OpCode::Tanh:
  case OpCode::Relu:
    ok =
        arity(1, 1, 1) && isFloat(prepared.operands[0]) &&
        isFloat(prepared.results[0]) &&
        values[prepared.operands[0]].count == values[prepared.results[0]].count;
    break;
  case OpCode::Cast:
  case OpCode::Identity:
  case OpCode::Reshape:
  case OpCode::Squeeze:
  case OpCode::Unsqueeze:
  case OpCode::Transpose:
  case OpCode::Slice:
    ok = arity(1, 1, 1);
    if (ok && op.opcode() != OpCode::Slice)
      ok = values[prepared.operands[0]].count ==
           values[prepared.results[0]].count;
    break;
  case OpCode::Split:
    ok = arity(1, 1, 0) && axis >= 0 && axis < rank(prepared.operands[0]);
    if (ok) {
      int64_t total = 0;
      for (uint32_t result : prepared.results) {
        ok &= sameExceptAxis(result, prepared.operands[0], axis);
        if (ok)
          total += values[result].shape[axis];
      }
      ok &= ok && total == values[prepared.operands[0]].shape[axis];
    }
    break;
  case OpCode::Concat:
    ok = operands >= 1 && results == 1 && axis >= 0 &&
         axis < rank(prepared.results[0]);
    if (ok) {
      int64_t total = 0;
      for (uint32_t operand : prepared.operands) {
        ok &= sameExceptAxis(operand, prepared.results[0], axis);
        if (ok)
          total += values[operand].shape[axis];
      }
      ok &= ok && total == values[prepared.results[0]].shape[axis];
    }
    break;
  case OpCode::Gather:
    ok = arity(2, 2, 1) && axis >= 0 && axis < rank(prepared.operands[0]);
    // Axis 0 of a value with rows is the batch: nothing gathers across it.
    ok = ok && !(axis == 0 && values[prepared.operands[0]].hasBatch);
    if (ok) {
      const Value &data = values[prepared.operands[0]];
      int64_t rows = product(data.shape, 0, axis) *
                     product(data.shape, axis + 1, data.shape.size());
      ok = values[prepared.results[0]].count ==
           rows * values[prepared.operands[1]].count;
    }
    break;
  case OpCode::ArgMax:
    ok = arity(1, 1, 1) && axis >= 0 && axis < rank(prepared.operands[0]) &&
         !values[prepared.results[0]].isFloat;
    if (ok) {
      const Value &input = values[prepared.operands[0]];
      ok = input.shape[axis] > 0 &&
           values[prepared.results[0]].count * input.shape[axis] == input.count;
    }
    break;
  case OpCode::Gemm:
    ok = arity(2, 3, 1) && rank(prepared.operands[0]) >= 1 &&
         rank(prepared.operands[1]) == 2;
    if (ok) {
      const std::vector<int64_t> &b = values[prepared.operands[1]].shape;
      const Value &a = values[prepared.operands[0]],
                  &out = values[prepared.results[0]];
      int64_t depth = a.shape.back(), columns = b[op.trans_b() ? 0 : 1];
      ok = depth > 0 && b[op.trans_b() ? 1 : 0] == depth &&
           a.count % depth == 0 && !out.shape.empty() &&
           out.shape.back() == columns &&
           out.count == a.count / depth * columns && a.isFloat &&
           isFloat(prepared.operands[1]) && out.isFloat;
      if (ok && operands == 3)
        ok = isFloat(prepared.operands[2]) &&
             broadcastsTo(prepared.operands[2], prepared.results[0]);
    }
    break;
  case OpCode::Constant:
    ok = arity(0, 0, 1);
    break;
  case OpCode::Erf:
  case OpCode::Sqrt:
  case OpCode::Exp:
  case OpCode::Log:
    ok =
        arity(1, 1, 1) && values[prepared.operands[0]].isFloat &&
        values[prepared.results[0]].isFloat &&
        values[prepared.operands[0]].count == values[prepared.results[0]].count;
    break;
  case OpCode::RowMatMul: {
    std::vector<int64_t> mkn = toVector(op.sizes());
    ok = arity(2, 2, 1) && mkn.size() == 3 &&
         values[prepared.operands[0]].isFloat &&
         values[prepared.operands[1]].isFloat &&
         values[prepared.results[0]].isFloat &&
         values[prepared.results[0]].hasBatch;
    ok &= ok && mkn[0] > 0 && mkn[1] > 0 && mkn[2] > 0 &&
          values[prepared.operands[0]].count == mkn[0] * mkn[1] &&
          values[prepared.operands[1]].count == mkn[1] * mkn[2] &&
          values[prepared.results[0]].count == mkn[0] * mkn[2];
    break;
  }
  case OpCode::Pow:
  case OpCode::Equal:
  case OpCode::Where: {
    size_t count = op.opcode() == OpCode::Where ? 3 : 2;
    ok = arity(count, count, 1);
    ok = ok && broadcastResult();
    bool floatResult = values[prepared.results[0]].isFloat;
    if (ok && op.opcode() == OpCode::Pow)
      ok = floatResult && values[prepared.operands[0]].isFloat;
    if (ok && op.opcode() == OpCode::Equal)
      ok = !floatResult;
    if (ok && op.opcode() == OpCode::Where)
      ok = !values[prepared.operands[0]].isFloat &&
           values[prepared.operands[1]].isFloat == floatResult &&
           values[prepared.operands[2]].isFloat == floatResult;
    break;
  }
  case OpCode::ReduceMean:
  case OpCode::ReduceSum:
  case OpCode::ReduceMax: {
    ok = arity(1, 1, 1) && values[prepared.operands[0]].isFloat &&
         values[prepared.results[0]].isFloat && op.axes() &&
         op.axes()->size() > 0;
    const Value &input = values[prepared.operands[0]];
    int64_t reduced = 1;
    for (int64_t a : toVector(op.axes())) {
      ok &= ok && a >= 0 && a < rank(prepared.operands[0]) &&
            !(a == 0 && input.hasBatch);
      if (ok)
        reduced *= input.shape[a];
    }
    ok &= ok && reduced * values[prepared.results[0]].count == input.count;
    break;
  }
  }
  if (!ok)
    return invalidRegion(what +
                         " has operands, results or an axis that do not fit");
  for (uint32_t id : prepared.operands)
    if (values[id].isFloat != values[prepared.operands[0]].isFloat &&
        op.opcode() != OpCode::Gather && op.opcode() != OpCode::Cast &&
        op.opcode() != OpCode::Where)
      return invalidRegion(what + " mixes float and integer operands");
  return Status::ok();
}

/// Index maps of the ops whose data movement depends only on shapes.
Status RegionInterpreter::Impl::prepareMoves(PreparedOp &prepared) {
  const cellpack::PortableOp &op = *prepared.op;
  auto shapeOf = [&](uint32_t id) -> const std::vector<int64_t> & {
    return values[id].shape;
  };
  switch (op.opcode()) {
  case OpCode::Add:
  case OpCode::Sub:
  case OpCode::Mul:
  case OpCode::Div:
  case OpCode::Pow:
  case OpCode::Equal:
  case OpCode::Where:
    if (prepared.operands.size() != (op.opcode() == OpCode::Where ? 3u : 2u) ||
        prepared.results.size() != 1)
      return invalidRegion("binary op arity");
    for (uint32_t operand : prepared.operands)
      prepared.broadcast.push_back(
          broadcastMap(shapeOf(operand), shapeOf(prepared.results[0])));
    return Status::ok();
  case OpCode::ReduceMean:
  case OpCode::ReduceSum:
  case OpCode::ReduceMax: {
    // Each input element's output element: the input shape with the
    // reduced axes set to 1, broadcast back over the input.
    std::vector<int64_t> kept = shapeOf(prepared.operands[0]);
    for (int64_t axis : toVector(op.axes()))
      kept[axis] = 1;
    prepared.broadcast.push_back(
        broadcastMap(kept, shapeOf(prepared.operands[0])));
    return Status::ok();
  }
  case OpCode::Gemm:
    if (prepared.operands.size() < 2 || prepared.operands.size() > 3 ||
        prepared.results.size() != 1 || op.trans_a() ||
        shapeOf(prepared.operands[1]).size() != 2)
      return invalidRegion("gemm with an unsupported form");
    prepared.broadcast.resize(2);
    if (prepared.operands.size() == 3)
      prepared.broadcast.push_back(broadcastMap(shapeOf(prepared.operands[2]),
                                                shapeOf(prepared.results[0])));
    return Status::ok();
  case OpCode::Split: {
    int64_t axis = op.axis();
    const std::vector<int64_t> &input = shapeOf(prepared.operands.at(0));
    int64_t outer = product(input, 0, axis),
            inner = product(input, axis + 1, input.size());
    int64_t start = 0;
    for (uint32_t result : prepared.results) {
      int64_t size = shapeOf(result)[axis];
      MoveMap map;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t s = 0; s < size * inner; ++s)
          map.emplace_back(0, (o * input[axis] + start) * inner + s);
      start += size;
      prepared.moves.push_back(std::move(map));
    }
    return Status::ok();
  }
  case OpCode::Concat: {
    int64_t axis = op.axis();
    const std::vector<int64_t> &output = shapeOf(prepared.results.at(0));
    int64_t outer = product(output, 0, axis),
            inner = product(output, axis + 1, output.size());
    MoveMap map;
    for (int64_t o = 0; o < outer; ++o)
      for (uint32_t n = 0; n < prepared.operands.size(); ++n) {
        int64_t size = shapeOf(prepared.operands[n])[axis];
        for (int64_t s = 0; s < size * inner; ++s)
          map.emplace_back(n, o * size * inner + s);
      }
    prepared.moves.push_back(std::move(map));
    return Status::ok();
  }
  case OpCode::Slice:
  case OpCode::Transpose: {
    const std::vector<int64_t> &input = shapeOf(prepared.operands.at(0));
    const std::vector<int64_t> &output = shapeOf(prepared.results.at(0));
    std::vector<int64_t> inStrides = strides(input),
                         outStrides = strides(output);
    std::vector<int64_t> axes = toVector(op.axes()),
                         starts = toVector(op.starts()),
                         steps = toVector(op.steps()),
                         perm = toVector(op.perm());
    if (input.size() != output.size())
      return invalidRegion("a slice or transpose changes the rank");
    if (op.opcode() == OpCode::Transpose) {
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (size_t d = 0; d < sorted.size(); ++d)
        if (sorted[d] != static_cast<int64_t>(d))
          return invalidRegion("a transpose whose perm is not a permutation");
    } else {
      if (starts.size() != axes.size() || steps.size() != axes.size())
        return invalidRegion("a slice with axes, starts and steps of "
                             "different lengths");
      for (int64_t axis : axes)
        if (axis < 0 || axis >= static_cast<int64_t>(input.size()))
          return invalidRegion("a slice axis out of range");
    }
    if (op.opcode() == OpCode::Transpose &&
        (perm.size() != input.size() ||
         (values[prepared.operands[0]].hasBatch && perm[0] != 0)))
      return Status(StatusCode::Unsupported,
                    "kernel region: a transpose that moves the batch");
    MoveMap map;
    int64_t count = product(output, 0, output.size());
    for (int64_t flat = 0; flat < count; ++flat) {
      int64_t index = 0;
      for (size_t d = 0; d < output.size(); ++d) {
        int64_t coordinate = flat / outStrides[d] % output[d];
        if (op.opcode() == OpCode::Transpose) {
          index += coordinate * inStrides[perm[d]];
          continue;
        }
        for (size_t a = 0; a < axes.size(); ++a)
          if (axes[a] == static_cast<int64_t>(d))
            coordinate = starts[a] + coordinate * steps[a];
        index += coordinate * inStrides[d];
      }
      if (index < 0 || index >= values[prepared.operands[0]].count)
        return invalidRegion("a slice or transpose reads outside its input");
      map.emplace_back(0, index);
    }
    prepared.moves.push_back(std::move(map));
    return Status::ok();
  }
  default:
    return Status::ok();
  }
}
