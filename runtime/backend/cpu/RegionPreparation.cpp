//===- RegionPreparation.cpp - Checking a region, index maps ------------===//
//
// Before a kernel region runs: every op's arity, axes and shapes are checked
// against its values (RegionOpChecks.cpp: a malformed artifact is an error,
// never an out-of-bounds access), which values have the batch is
// propagated, and the index maps of broadcasting and data movement are
// computed once.
//
//===----------------------------------------------------------------------===//
#include "RegionInterpreterImpl.h"

#include "artifact/ElementIO.h"

#include <algorithm>
#include <cstdlib>
#include <string>

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
  chooseViews();
  allocate();
  fuseGates();
  return Status::ok();
}

namespace {
/// The op reads its operand `n` row by row through Value::floatRow (or the
/// row functions over views), so that operand may be a view.
bool readsRowsOf(const PreparedOp &prepared, size_t n,
                 const std::vector<Value> &values) {
  auto floatResults = [&] {
    return std::all_of(prepared.results.begin(), prepared.results.end(),
                       [&](uint32_t result) { return values[result].isFloat; });
  };
  switch (prepared.op->opcode()) {
  case OpCode::Add:
  case OpCode::Sub:
  case OpCode::Mul:
  case OpCode::Div:
    return n < prepared.broadcast.size() && prepared.broadcast[n].empty() &&
           floatResults();
  case OpCode::Sigmoid:
  case OpCode::Tanh:
  case OpCode::Relu:
    return true;
  case OpCode::Split:
  case OpCode::Slice:
  case OpCode::Concat:
  case OpCode::Transpose:
  case OpCode::Identity:
  case OpCode::Reshape:
  case OpCode::Squeeze:
  case OpCode::Unsqueeze:
    return floatResults();
  default:
    return false;
  }
}
} // namespace

void RegionInterpreter::Impl::chooseViews() {
  // CELLRUN_CPU_VIEWS=off copies every value (for comparison).
  if (const char *setting = std::getenv("CELLRUN_CPU_VIEWS");
      setting && std::string(setting) == "off")
    return;
  std::vector<bool> rowReaders(values.size(), true);
  for (const PreparedOp &prepared : ops)
    for (size_t n = 0; n < prepared.operands.size(); ++n)
      if (!readsRowsOf(prepared, n, values))
        rowReaders[prepared.operands[n]] = false;
  for (size_t j = 0; j < results.size(); ++j)
    if (step.outputs()->Get(j)->dtype() != cellpack::DType::F32)
      rowReaders[results[j]] = false;
  auto candidate = [&](uint32_t id) {
    const Value &value = values[id];
    return value.hasBatch && value.isFloat &&
           value.dtype == cellpack::DType::F32 && rowReaders[id];
  };
  uint32_t numInputs = step.region()->num_inputs();
  for (uint32_t id = 0; id < numInputs; ++id)
    values[id].view = candidate(id) &&
                      step.input_access()->Get(id) == cellpack::Access::Gather;
  for (const PreparedOp &prepared : ops) {
    OpCode code = prepared.op->opcode();
    for (size_t n = 0; n < prepared.results.size(); ++n) {
      uint32_t id = prepared.results[n];
      if (!candidate(id))
        continue;
      Value &value = values[id];
      if (code == OpCode::Gather) {
        const Value &data = values[prepared.operands[0]];
        const Value &indices = values[prepared.operands[1]];
        value.view = prepared.op->axis() == 0 && !data.hasBatch &&
                     data.dtype == cellpack::DType::F32 && indices.count == 1 &&
                     product(data.shape, 1, data.shape.size()) == value.count;
      } else if (code == OpCode::Split || code == OpCode::Slice) {
        const std::vector<MoveRun> &runs = prepared.runs[n];
        value.view = runs.size() == 1 && runs[0].to == 0 &&
                     runs[0].length == value.count &&
                     values[prepared.operands[runs[0].operand]].hasBatch &&
                     values[prepared.operands[runs[0].operand]].isFloat;
      } else if (code == OpCode::Identity || code == OpCode::Reshape ||
                 code == OpCode::Squeeze || code == OpCode::Unsqueeze) {
        const Value &in = values[prepared.operands[0]];
        value.view = in.hasBatch && in.isFloat && in.count == value.count;
      }
    }
  }
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
    if (value.view) {
      value.rowPointers.assign(blockRows, nullptr);
      continue; // its rows lie where its producer found them
    }
    int64_t elements = value.count * (value.hasBatch ? blockRows : 1);
    if (value.isFloat)
      value.f.assign(elements, 0.0f);
    else
      value.i.assign(elements, 0);
  }
}

namespace {
/// Broadcast maps of Add, Sub, Mul, Div, Pow, the comparisons, Not and Where:
/// per operand, from the result's elements to its own.
Status prepareBroadcastMaps(const std::vector<Value> &values,
                            PreparedOp &prepared) {
  const cellpack::PortableOp &op = *prepared.op;
  size_t operands = op.opcode() == OpCode::Where ? 3u
                    : op.opcode() == OpCode::Not ? 1u
                                                 : 2u;
  if (prepared.operands.size() != operands || prepared.results.size() != 1)
    return invalidRegion("binary op arity");
  const Value &result = values[prepared.results[0]];
  for (uint32_t operand : prepared.operands)
    prepared.broadcast.push_back(
        broadcastMap(values[operand].shape, result.shape));
  if (operands == 2)
    prepared.strided =
        stridedBroadcast(prepared.broadcast, result.shape, result.count);
  return Status::ok();
}
} // namespace

StridedBroadcast cellrun::cpu::detail::stridedBroadcast(
    const std::vector<std::vector<int64_t>> &maps,
    const std::vector<int64_t> &resultShape, int64_t count) {
  // Candidate splits: the products of the result's trailing dimensions; the
  // longest runs that fit win (equal shapes: one run a row).
  StridedBroadcast best;
  int64_t inner = 1;
  for (size_t d = resultShape.size(); d-- > 0;) {
    inner *= resultShape[d];
    if (inner <= 1 || count % inner != 0)
      continue;
    StridedBroadcast form;
    form.inner = inner;
    bool fits = true;
    for (size_t n = 0; n < 2 && fits; ++n) {
      const std::vector<int64_t> &map = maps[n];
      auto at = [&](int64_t k) { return map.empty() ? k : map[k]; };
      int64_t innerStride = inner > 1 ? at(1) - at(0) : 0;
      int64_t outerStride = count > inner ? at(inner) - at(0) : 0;
      fits = at(0) == 0 && (innerStride == 0 || innerStride == 1);
      for (int64_t k = 0; fits && k < count; ++k)
        fits = at(k) == k / inner * outerStride + k % inner * innerStride;
      form.outerStride[n] = outerStride;
      form.innerStride[n] = innerStride;
    }
    // A number against a number cannot be (the result's dimensions come
    // from the operands), but the loops would not compute it.
    if (fits && (form.innerStride[0] == 1 || form.innerStride[1] == 1))
      best = form;
  }
  return best;
}

namespace {

/// The map of ReduceMean, ReduceSum and ReduceMax: each input element's
/// output element (the input shape with the reduced axes set to 1,
/// broadcast back over the input).
Status prepareReductionMap(const std::vector<Value> &values,
                           PreparedOp &prepared) {
  std::vector<int64_t> kept = values[prepared.operands[0]].shape;
  for (int64_t axis : toVector(prepared.op->axes()))
    kept[axis] = 1;
  prepared.broadcast.push_back(
      broadcastMap(kept, values[prepared.operands[0]].shape));
  return Status::ok();
}

/// The bias map of a Gemm (A and B have none), which must have the form the
/// interpreter runs: no transposed A, a matrix B.
Status prepareGemmMaps(const std::vector<Value> &values, PreparedOp &prepared) {
  const cellpack::PortableOp &op = *prepared.op;
  if (prepared.operands.size() < 2 || prepared.operands.size() > 3 ||
      prepared.results.size() != 1 || op.trans_a() ||
      values[prepared.operands[1]].shape.size() != 2)
    return invalidRegion("gemm with an unsupported form");
  prepared.broadcast.resize(2);
  if (prepared.operands.size() == 3)
    prepared.broadcast.push_back(broadcastMap(
        values[prepared.operands[2]].shape, values[prepared.results[0]].shape));
  return Status::ok();
}

/// Split: per result, its slice of the operand along the axis.
Status prepareSplitMoves(const std::vector<Value> &values,
                         PreparedOp &prepared) {
  int64_t axis = prepared.op->axis();
  const std::vector<int64_t> &input = values[prepared.operands.at(0)].shape;
  int64_t outer = product(input, 0, axis),
          inner = product(input, axis + 1, input.size());
  int64_t start = 0;
  for (uint32_t result : prepared.results) {
    int64_t size = values[result].shape[axis];
    MoveMap map;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t s = 0; s < size * inner; ++s)
        map.emplace_back(0, (o * input[axis] + start) * inner + s);
    start += size;
    prepared.moves.push_back(std::move(map));
  }
  return Status::ok();
}

/// Concat: the operands one after the other along the axis.
Status prepareConcatMoves(const std::vector<Value> &values,
                          PreparedOp &prepared) {
  int64_t axis = prepared.op->axis();
  const std::vector<int64_t> &output = values[prepared.results.at(0)].shape;
  int64_t outer = product(output, 0, axis),
          inner = product(output, axis + 1, output.size());
  MoveMap map;
  for (int64_t o = 0; o < outer; ++o)
    for (uint32_t n = 0; n < prepared.operands.size(); ++n) {
      int64_t size = values[prepared.operands[n]].shape[axis];
      for (int64_t s = 0; s < size * inner; ++s)
        map.emplace_back(n, o * size * inner + s);
    }
  prepared.moves.push_back(std::move(map));
  return Status::ok();
}

/// Slice and Transpose: for each result element, the operand element it
/// reads, after checking the op's axes, starts and steps or its perm (a
/// transpose that moves the batch is not supported); one outside the
/// operand is an error.
Status prepareSliceOrTransposeMoves(const std::vector<Value> &values,
                                    PreparedOp &prepared) {
  const cellpack::PortableOp &op = *prepared.op;
  const std::vector<int64_t> &input = values[prepared.operands.at(0)].shape;
  const std::vector<int64_t> &output = values[prepared.results.at(0)].shape;
  std::vector<int64_t> inStrides = strides(input), outStrides = strides(output);
  std::vector<int64_t> axes = toVector(op.axes()),
                       starts = toVector(op.starts()),
                       steps = toVector(op.steps()), perm = toVector(op.perm());
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
} // namespace

/// Index maps of the ops whose data movement depends only on shapes.
Status RegionInterpreter::Impl::prepareMoves(PreparedOp &prepared) {
  switch (prepared.op->opcode()) {
  case OpCode::Add:
  case OpCode::Sub:
  case OpCode::Mul:
  case OpCode::Div:
  case OpCode::Pow:
  case OpCode::Equal:
  case OpCode::Less:
  case OpCode::LessOrEqual:
  case OpCode::Greater:
  case OpCode::GreaterOrEqual:
  case OpCode::Not:
  case OpCode::Where:
    return prepareBroadcastMaps(values, prepared);
  case OpCode::ReduceMean:
  case OpCode::ReduceSum:
  case OpCode::ReduceMax:
    return prepareReductionMap(values, prepared);
  case OpCode::Gemm:
    return prepareGemmMaps(values, prepared);
  case OpCode::Split:
    return prepareSplitMoves(values, prepared);
  case OpCode::Concat:
    return prepareConcatMoves(values, prepared);
  case OpCode::Slice:
  case OpCode::Transpose:
    return prepareSliceOrTransposeMoves(values, prepared);
  default:
    return Status::ok();
  }
}
