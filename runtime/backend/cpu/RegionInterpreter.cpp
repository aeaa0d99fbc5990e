//===- RegionInterpreter.cpp - Fused kernels on the CPU ------------------===//
//
// Every op of a fused region is row-local: a value either has the batch as
// its leading dimension or has none (weights, constants). The interpreter
// runs the whole region for one row at a time over the row's slice of each
// batch value ([1, ...] views) and the whole of the others. Index maps for
// broadcasting and for data movement (split, slice, concat, transpose) are
// computed once at preparation; gather and argmax depend on the data.
//
//===----------------------------------------------------------------------===//
#include "RegionInterpreter.h"

#include "ElementIO.h"

#include <cblas.h>

#include <cmath>
#include <functional>
#include <string>
#include <type_traits>

using namespace cellrun;
using namespace cellrun::cpu;
using cellpack::OpCode;

namespace {
struct Value {
  cellpack::DType dtype = cellpack::DType::F32;
  bool isFloat = true;
  bool hasBatch = false;
  std::vector<int64_t> shape; // a row's view: leading 1 for batch values
  int64_t count = 1;
  std::vector<float> f;
  std::vector<int64_t> i;
  /// A weight read in place (fp32 or int64 broadcast inputs), not copied.
  const void *external = nullptr;

  const float *floats() const {
    return external ? static_cast<const float *>(external) : f.data();
  }
  const int64_t *ints() const {
    return external ? static_cast<const int64_t *>(external) : i.data();
  }
};

/// Where each element of a result comes from: (operand number, index).
using MoveMap = std::vector<std::pair<uint32_t, int64_t>>;

struct PreparedOp {
  const cellpack::PortableOp *op = nullptr;
  std::vector<uint32_t> operands, results;
  std::vector<std::vector<int64_t>> broadcast; // per operand, empty: same
  std::vector<MoveMap> moves;                  // per result
};

int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t count = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i)
    count *= shape[i];
  return count;
}

std::vector<int64_t> toVector(const flatbuffers::Vector<int64_t> *values) {
  return values ? std::vector<int64_t>(values->begin(), values->end())
                : std::vector<int64_t>();
}

std::vector<int64_t> strides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> result(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    result[i - 1] = result[i] * shape[i];
  return result;
}

/// For each element of `result`, the index into `operand` under numpy
/// broadcasting (empty when the shapes are equal).
std::vector<int64_t> broadcastMap(const std::vector<int64_t> &operand,
                                  const std::vector<int64_t> &result) {
  if (operand == result)
    return {};
  std::vector<int64_t> resultStrides = strides(result);
  std::vector<int64_t> operandStrides = strides(operand);
  size_t offset = result.size() - operand.size();
  int64_t count = product(result, 0, result.size());
  std::vector<int64_t> map(count);
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t index = 0;
    for (size_t d = offset; d < result.size(); ++d) {
      int64_t coordinate = flat / resultStrides[d] % result[d];
      if (operand[d - offset] != 1)
        index += coordinate * operandStrides[d - offset];
    }
    map[flat] = index;
  }
  return map;
}
} // namespace

struct RegionInterpreter::Impl {
  const cellpack::KernelStep &step;
  std::vector<Value> values;
  std::vector<PreparedOp> ops;
  std::vector<uint32_t> results;
  explicit Impl(const cellpack::KernelStep &step) : step(step) {}

  Status prepare();
  Status validate(const PreparedOp &prepared);
  Status prepareMoves(PreparedOp &prepared);
  Status execute(PreparedOp &prepared);
  Status executeOp(PreparedOp &prepared);
};

static Status invalid(const std::string &message) {
  return Status(StatusCode::DataLoss, "kernel region: " + message);
}

Status RegionInterpreter::Impl::prepare() {
  const cellpack::PortableRegion *region = step.region();
  if (!region || !region->values())
    return invalid("missing region");
  uint32_t numInputs = region->num_inputs();
  if (numInputs > region->values()->size() || !step.input_access() ||
      step.input_access()->size() != numInputs)
    return invalid("inputs and access kinds disagree");
  for (const cellpack::PortableValue *value : *region->values()) {
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
        return invalid("operand index out of range");
      batch |= values[operand].hasBatch;
    }
    if (op->opcode() == OpCode::Gather && prepared.operands.size() == 2)
      batch = values[prepared.operands[1]].hasBatch;
    if (op->opcode() == OpCode::Constant)
      batch = false;
    for (uint32_t result : prepared.results) {
      if (result >= values.size())
        return invalid("result index out of range");
      values[result].hasBatch = batch;
    }
    ops.push_back(std::move(prepared));
  }
  for (Value &value : values) {
    if (value.hasBatch && !value.shape.empty())
      value.shape[0] = 1;
    value.count = product(value.shape, 0, value.shape.size());
    if (value.isFloat)
      value.f.resize(value.count);
    else
      value.i.resize(value.count);
  }
  for (PreparedOp &prepared : ops) {
    if (Status status = validate(prepared); !status.isOk())
      return status;
    if (Status status = prepareMoves(prepared); !status.isOk())
      return status;
  }
  if (region->results())
    results.assign(region->results()->begin(), region->results()->end());
  if (!step.outputs() || step.outputs()->size() != results.size())
    return invalid("outputs and region results disagree");
  for (uint32_t result : results)
    if (result >= values.size())
      return invalid("region result index out of range");
  return Status::ok();
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
  bool ok = true;
  int64_t axis = op.axis();
  switch (op.opcode()) {
  case OpCode::Add:
  case OpCode::Sub:
  case OpCode::Mul:
  case OpCode::Div:
    ok = arity(2, 2, 1) &&
         rank(prepared.operands[0]) <= rank(prepared.results[0]) &&
         rank(prepared.operands[1]) <= rank(prepared.results[0]);
    break;
  case OpCode::Sigmoid:
  case OpCode::Tanh:
  case OpCode::Relu:
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
        ok &= rank(result) == rank(prepared.operands[0]);
        if (ok)
          total += values[result].shape[axis];
      }
      ok &= ok && total == values[prepared.operands[0]].shape[axis];
    }
    break;
  case OpCode::Concat:
    ok = operands >= 1 && results == 1 && axis >= 0 &&
         axis < rank(prepared.results[0]);
    for (uint32_t operand : prepared.operands)
      ok &= ok && rank(operand) == rank(prepared.results[0]);
    break;
  case OpCode::Gather:
    ok = arity(2, 2, 1) && axis >= 0 && axis < rank(prepared.operands[0]);
    break;
  case OpCode::ArgMax:
    ok = arity(1, 1, 1) && axis >= 0 && axis < rank(prepared.operands[0]) &&
         !values[prepared.results[0]].isFloat;
    break;
  case OpCode::Gemm:
    ok = arity(2, 3, 1) && rank(prepared.operands[0]) >= 1 &&
         rank(prepared.operands[1]) == 2;
    if (ok) {
      const std::vector<int64_t> &b = values[prepared.operands[1]].shape;
      int64_t depth = values[prepared.operands[0]].shape.back();
      ok = b[op.trans_b() ? 1 : 0] == depth &&
           values[prepared.results[0]].shape.back() == b[op.trans_b() ? 0 : 1];
    }
    break;
  case OpCode::Constant:
    ok = arity(0, 0, 1);
    break;
  }
  if (!ok)
    return invalid(what + " has operands, results or an axis that do not fit");
  for (uint32_t id : prepared.operands)
    if (values[id].isFloat != values[prepared.operands[0]].isFloat &&
        op.opcode() != OpCode::Gather && op.opcode() != OpCode::Cast)
      return invalid(what + " mixes float and integer operands");
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
    if (prepared.operands.size() != 2 || prepared.results.size() != 1)
      return invalid("binary op arity");
    for (uint32_t operand : prepared.operands)
      prepared.broadcast.push_back(
          broadcastMap(shapeOf(operand), shapeOf(prepared.results[0])));
    return Status::ok();
  case OpCode::Gemm:
    if (prepared.operands.size() < 2 || prepared.operands.size() > 3 ||
        prepared.results.size() != 1 || op.trans_a() ||
        shapeOf(prepared.operands[1]).size() != 2)
      return invalid("gemm with an unsupported form");
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
        return invalid("a slice or transpose reads outside its input");
      map.emplace_back(0, index);
    }
    prepared.moves.push_back(std::move(map));
    return Status::ok();
  }
  default:
    return Status::ok();
  }
}

namespace {
float applyUnary(OpCode code, float x) {
  switch (code) {
  case OpCode::Sigmoid:
    return 1.0f / (1.0f + std::exp(-x));
  case OpCode::Tanh:
    return std::tanh(x);
  default: // Relu
    return x > 0.0f ? x : 0.0f;
  }
}

template <typename T> T applyBinary(OpCode code, T a, T b) {
  switch (code) {
  case OpCode::Add:
    return a + b;
  case OpCode::Sub:
    return a - b;
  case OpCode::Mul:
    return a * b;
  default:
    return b == T(0) && !std::is_floating_point<T>::value ? T(0) : a / b;
  }
}

/// Copies element `from` of `source` into element `to` of `target`,
/// converting between float and integer storage.
void copyElement(const Value &source, int64_t from, Value &target, int64_t to) {
  if (target.isFloat)
    target.f[to] = source.isFloat ? source.floats()[from]
                                  : static_cast<float>(source.ints()[from]);
  else
    target.i[to] = source.isFloat ? static_cast<int64_t>(source.floats()[from])
                                  : source.ints()[from];
}
} // namespace

/// Brings every element of `value` into its element type's range and
/// precision: narrow integers wrap, booleans are 0 or 1, fp16/bf16 values
/// are rounded (the float storage of the interpreter is wider).
static void normalize(Value &value) {
  switch (value.dtype) {
  case cellpack::DType::F16:
    for (float &x : value.f)
      x = halfToFloat(floatToHalf(x));
    break;
  case cellpack::DType::BF16:
    for (float &x : value.f)
      x = bf16ToFloat(floatToBf16(x));
    break;
  case cellpack::DType::I32:
    for (int64_t &x : value.i)
      x = static_cast<int32_t>(x);
    break;
  case cellpack::DType::I16:
    for (int64_t &x : value.i)
      x = static_cast<int16_t>(x);
    break;
  case cellpack::DType::I8:
    for (int64_t &x : value.i)
      x = static_cast<int8_t>(x);
    break;
  case cellpack::DType::Bool:
    for (int64_t &x : value.i)
      x = x != 0;
    break;
  default:
    break;
  }
}

Status RegionInterpreter::Impl::execute(PreparedOp &prepared) {
  Status status = executeOp(prepared);
  for (uint32_t result : prepared.results)
    normalize(values[result]);
  return status;
}

Status RegionInterpreter::Impl::executeOp(PreparedOp &prepared) {
  const cellpack::PortableOp &op = *prepared.op;
  OpCode code = op.opcode();
  auto operand = [&](size_t n) -> Value & {
    return values[prepared.operands[n]];
  };
  Value &out = values[prepared.results.empty() ? 0 : prepared.results[0]];
  switch (code) {
  case OpCode::Add:
  case OpCode::Sub:
  case OpCode::Mul:
  case OpCode::Div: {
    const Value &a = operand(0), &b = operand(1);
    const std::vector<int64_t> &mapA = prepared.broadcast[0],
                               &mapB = prepared.broadcast[1];
    for (int64_t k = 0; k < out.count; ++k) {
      int64_t ia = mapA.empty() ? k : mapA[k], ib = mapB.empty() ? k : mapB[k];
      if (out.isFloat)
        out.f[k] = applyBinary(code, a.floats()[ia], b.floats()[ib]);
      else
        out.i[k] = applyBinary(code, a.ints()[ia], b.ints()[ib]);
    }
    return Status::ok();
  }
  case OpCode::Gemm: {
    // A row (or rows) times a weight matrix: BLAS sgemv per row.
    const Value &a = operand(0), &b = operand(1);
    int64_t depth = a.shape.back(), columns = out.shape.back();
    int64_t rowsOfA = a.count / depth;
    for (int64_t i = 0; i < rowsOfA; ++i) {
      float *row = out.f.data() + i * columns;
      if (op.trans_b()) // B is [columns, depth]
        cblas_sgemv(CblasRowMajor, CblasNoTrans, columns, depth, op.alpha(),
                    b.floats(), depth, a.floats() + i * depth, 1, 0.0f, row, 1);
      else // B is [depth, columns]
        cblas_sgemv(CblasRowMajor, CblasTrans, depth, columns, op.alpha(),
                    b.floats(), columns, a.floats() + i * depth, 1, 0.0f, row,
                    1);
      if (prepared.operands.size() == 3) {
        const std::vector<int64_t> &map = prepared.broadcast[2];
        const float *bias = operand(2).floats();
        for (int64_t j = 0; j < columns; ++j) {
          int64_t at = i * columns + j;
          row[j] += op.beta() * bias[map.empty() ? at : map[at]];
        }
      }
    }
    return Status::ok();
  }
  case OpCode::Sigmoid:
  case OpCode::Tanh:
  case OpCode::Relu:
    for (int64_t k = 0; k < out.count; ++k)
      out.f[k] = applyUnary(code, operand(0).floats()[k]);
    return Status::ok();
  case OpCode::Cast:
    for (int64_t k = 0; k < out.count; ++k) {
      const Value &in = operand(0);
      if (out.dtype == cellpack::DType::Bool)
        out.i[k] = in.isFloat ? in.floats()[k] != 0.0f : in.ints()[k] != 0;
      else
        copyElement(in, k, out, k);
    }
    return Status::ok();
  case OpCode::Identity:
  case OpCode::Reshape:
  case OpCode::Squeeze:
  case OpCode::Unsqueeze:
    for (int64_t k = 0; k < out.count; ++k)
      copyElement(operand(0), k, out, k);
    return Status::ok();
  case OpCode::Split:
  case OpCode::Concat:
  case OpCode::Slice:
  case OpCode::Transpose:
    for (size_t r = 0; r < prepared.results.size(); ++r) {
      Value &target = values[prepared.results[r]];
      const MoveMap &map = prepared.moves[r];
      for (int64_t k = 0; k < target.count; ++k)
        copyElement(operand(map[k].first), map[k].second, target, k);
    }
    return Status::ok();
  case OpCode::Gather: {
    const Value &data = operand(0), &indices = operand(1);
    int64_t axis = op.axis();
    int64_t outer = product(data.shape, 0, axis);
    int64_t length = data.shape[axis];
    int64_t inner = product(data.shape, axis + 1, data.shape.size());
    int64_t k = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t n = 0; n < indices.count; ++n) {
        int64_t index = indices.isFloat
                            ? static_cast<int64_t>(indices.floats()[n])
                            : indices.ints()[n];
        if (index < 0)
          index += length;
        if (index < 0 || index >= length)
          return Status(StatusCode::OutOfRange,
                        "index " + std::to_string(index) +
                            " is outside a table of " + std::to_string(length) +
                            " rows");
        for (int64_t e = 0; e < inner; ++e)
          copyElement(data, (o * length + index) * inner + e, out, k++);
      }
    return Status::ok();
  }
  case OpCode::ArgMax: {
    const Value &input = operand(0);
    int64_t axis = op.axis();
    int64_t outer = product(input.shape, 0, axis);
    int64_t length = input.shape[axis];
    int64_t inner = product(input.shape, axis + 1, input.shape.size());
    bool last = op.select_last_index();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 0; e < inner; ++e) {
        auto at = [&](int64_t n) { return (o * length + n) * inner + e; };
        int64_t best = 0;
        for (int64_t n = 1; n < length; ++n) {
          bool greater = input.isFloat
                             ? input.floats()[at(n)] > input.floats()[at(best)]
                             : input.ints()[at(n)] > input.ints()[at(best)];
          bool equal = input.isFloat
                           ? input.floats()[at(n)] == input.floats()[at(best)]
                           : input.ints()[at(n)] == input.ints()[at(best)];
          if (greater || (last && equal))
            best = n;
        }
        out.i[o * inner + e] = best;
      }
    return Status::ok();
  }
  case OpCode::Constant: {
    const flatbuffers::Vector<uint8_t> *bytes = op.constant();
    if (!bytes || static_cast<int64_t>(bytes->size()) !=
                      out.count * static_cast<int64_t>(elementSize(out.dtype)))
      return invalid("constant data does not match its type");
    for (int64_t k = 0; k < out.count; ++k) {
      if (out.isFloat)
        out.f[k] = loadFloat(bytes->data(), out.dtype, k);
      else
        out.i[k] = loadInt(bytes->data(), out.dtype, k);
    }
    return Status::ok();
  }
  }
  return invalid("unknown opcode");
}

RegionInterpreter::RegionInterpreter(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
RegionInterpreter::~RegionInterpreter() = default;

Result<std::unique_ptr<RegionInterpreter>>
RegionInterpreter::create(const cellpack::KernelStep &step) {
  auto impl = std::make_unique<Impl>(step);
  if (Status status = impl->prepare(); !status.isOk())
    return status;
  return std::unique_ptr<RegionInterpreter>(
      new RegionInterpreter(std::move(impl)));
}

Status RegionInterpreter::run(int64_t rows,
                              const std::vector<InputView> &inputs,
                              const std::vector<OutputView> &outputs) {
  Impl &impl = *impl_;
  const cellpack::PortableRegion &region = *impl.step.region();
  uint32_t numInputs = region.num_inputs();
  if (inputs.size() != numInputs || outputs.size() != impl.results.size())
    return Status(StatusCode::InvalidArgument,
                  "kernel '" + impl.step.name()->str() + "' takes " +
                      std::to_string(numInputs) + " inputs and " +
                      std::to_string(impl.results.size()) + " outputs");
  auto load = [&](uint32_t id, int64_t row) {
    Value &value = impl.values[id];
    if (!value.hasBatch && (value.dtype == cellpack::DType::F32 ||
                            value.dtype == cellpack::DType::I64)) {
      value.external = inputs[id].data; // a weight: read in place
      return;
    }
    int64_t base =
        value.hasBatch
            ? (inputs[id].rows ? inputs[id].rows[row] : row) * value.count
            : 0;
    for (int64_t k = 0; k < value.count; ++k) {
      if (value.isFloat)
        value.f[k] = loadFloat(inputs[id].data, value.dtype, base + k);
      else
        value.i[k] = loadInt(inputs[id].data, value.dtype, base + k);
    }
  };
  for (uint32_t id = 0; id < numInputs; ++id)
    if (!impl.values[id].hasBatch)
      load(id, 0);
  for (int64_t row = 0; row < rows; ++row) {
    for (uint32_t id = 0; id < numInputs; ++id)
      if (impl.values[id].hasBatch)
        load(id, row);
    for (PreparedOp &op : impl.ops)
      if (Status status = impl.execute(op); !status.isOk())
        return status;
    for (size_t j = 0; j < impl.results.size(); ++j) {
      const Value &value = impl.values[impl.results[j]];
      cellpack::DType type = impl.step.outputs()->Get(j)->dtype();
      int64_t base =
          (outputs[j].rows ? outputs[j].rows[row] : row) * value.count;
      for (int64_t k = 0; k < value.count; ++k) {
        if (isFloatType(type))
          storeFloat(outputs[j].data, type, base + k,
                     value.isFloat ? value.f[k] : value.i[k]);
        else
          storeInt(outputs[j].data, type, base + k,
                   value.isFloat ? static_cast<int64_t>(value.f[k])
                                 : value.i[k]);
      }
    }
  }
  return Status::ok();
}
