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
#include "RegionInterpreterImpl.h"

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
      return invalidRegion("constant data does not match its type");
    for (int64_t k = 0; k < out.count; ++k) {
      if (out.isFloat)
        out.f[k] = loadFloat(bytes->data(), out.dtype, k);
      else
        out.i[k] = loadInt(bytes->data(), out.dtype, k);
    }
    return Status::ok();
  }
  }
  return invalidRegion("unknown opcode");
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
  return runRows(0, rows, inputs, outputs);
}

Status RegionInterpreter::runRows(int64_t begin, int64_t end,
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
  for (int64_t row = begin; row < end; ++row) {
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
