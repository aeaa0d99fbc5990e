//===- RegionInterpreter.cpp - Fused kernels on the CPU ------------------===//
//
// Every op of a fused region is row-local: a value either has the batch as
// its leading dimension or has none (weights, constants). The interpreter
// runs the region over a block of rows one op at a time, each op over the
// block's rows of its batch values ([1, ...] views per row) and the whole
// of the others, so the cost of dispatching an op is paid once per block.
// Index maps for broadcasting and data movement (split, slice, concat,
// transpose) are computed once at preparation, the moves as runs of
// consecutive elements; gather and argmax depend on the data. The ops that
// move or select elements are in RegionDataOps.cpp, the math ops in
// RegionMathOps.cpp, the rows in and out of a block in RegionRows.cpp.
//
//===----------------------------------------------------------------------===//
#include "RegionInterpreterImpl.h"

#include "ElementLoops.h"
#include "PackedGemm.h"
#include "VectorMath.h"
#include "artifact/ElementIO.h"

#include <algorithm>
#include <cstring>

#include <cmath>
#include <functional>
#include <string>
#include <type_traits>

using namespace cellrun;
using namespace cellrun::cpu;
using cellpack::OpCode;

namespace {
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

Status RegionInterpreter::Impl::execute(PreparedOp &prepared, int64_t rows) {
  Status status = executeOp(prepared, rows);
  for (uint32_t result : prepared.results)
    normalize(values[result]);
  return status;
}

namespace {
ElementOp elementOp(OpCode code) {
  switch (code) {
  case OpCode::Add:
    return ElementOp::Add;
  case OpCode::Sub:
    return ElementOp::Sub;
  case OpCode::Mul:
    return ElementOp::Mul;
  default:
    return ElementOp::Div;
  }
}

/// a op b over `count` elements of equal shape (the common case), in the
/// processor's widest vectors (ElementLoops.h).
void binaryFloats(OpCode code, const float *a, const float *b, float *out,
                  int64_t count) {
  elementArrays(elementOp(code), a, b, out, count);
}

/// a op b through a strided broadcast: per outer index, a run against a
/// run, a number against a run or a run against a number.
void stridedFloats(OpCode code, const StridedBroadcast &form, const float *a,
                   const float *b, float *out, int64_t count) {
  int64_t inner = form.inner;
  bool runOfA = form.innerStride[0] == 1, runOfB = form.innerStride[1] == 1;
  for (int64_t o = 0; o * inner < count; ++o) {
    const float *rowA = a + o * form.outerStride[0];
    const float *rowB = b + o * form.outerStride[1];
    float *rowOut = out + o * inner;
    if (runOfA && runOfB) {
      binaryFloats(code, rowA, rowB, rowOut, inner);
      continue;
    }
    elementRunAndNumber(elementOp(code), rowA, runOfA, rowB, rowOut, inner);
  }
}
} // namespace

Status RegionInterpreter::Impl::executeGemm(PreparedOp &prepared,
                                            int64_t rows) {
  // Rows (of every row of the block) times a weight matrix: one GEMM.
  const cellpack::PortableOp &op = *prepared.op;
  const Value &a = values[prepared.operands[0]];
  const Value &b = values[prepared.operands[1]];
  Value &out = values[prepared.results[0]];
  int64_t depth = a.shape.back(), columns = out.shape.back();
  int64_t outRows = out.hasBatch ? rows : 1;
  int64_t rowsOfA = a.count / depth;
  GemmEpilogue scale;
  scale.alpha = op.alpha();
  uint32_t weightId = prepared.operands[1];
  const PackedMatrix *packed =
      !b.hasBatch && weightId < options.packedInputs.size()
          ? options.packedInputs[weightId]
          : nullptr;
  if (packed && (packed->depth() != depth || packed->columns() != columns))
    packed = nullptr;
  if (packed && a.hasBatch == out.hasBatch) {
    packedGemm(a.floats(), depth, rowsOfA * outRows, *packed, scale,
               out.f.data(), columns, options.pool);
  } else {
    // B is not a packed weight (or varies by row): packed here, per row.
    for (int64_t r = 0; r < outRows; ++r) {
      PackedMatrix rowB(b.floatRow(r), depth, columns, op.trans_b());
      packedGemm(a.floatRow(r), depth, rowsOfA, rowB, scale,
                 out.f.data() + r * out.count, columns, options.pool);
    }
  }
  if (prepared.operands.size() == 3) {
    const Value &bias = values[prepared.operands[2]];
    const std::vector<int64_t> &map = prepared.broadcast[2];
    float beta = op.beta();
    for (int64_t r = 0; r < outRows; ++r) {
      const float *biasRow = bias.floatRow(r);
      float *row = out.f.data() + r * out.count;
      for (int64_t k = 0; k < out.count; ++k)
        row[k] = row[k] + beta * biasRow[map.empty() ? k : map[k]];
    }
  }
  return Status::ok();
}

/// Runs one op over a block of `rows` rows: dispatches on its opcode to the
/// function of its family.
Status RegionInterpreter::Impl::executeOp(PreparedOp &prepared, int64_t rows) {
  switch (prepared.op->opcode()) {
  case OpCode::Add:
  case OpCode::Sub:
  case OpCode::Mul:
  case OpCode::Div:
    return executeArithmetic(prepared, rows);
  case OpCode::Gemm:
    return executeGemm(prepared, rows);
  case OpCode::Erf:
  case OpCode::Sqrt:
  case OpCode::Exp:
  case OpCode::Log:
  case OpCode::Softplus:
  case OpCode::Neg:
    return executeUnaryMath(prepared, rows);
  case OpCode::Pow:
    return executePow(prepared, rows);
  case OpCode::Equal:
  case OpCode::Less:
  case OpCode::LessOrEqual:
  case OpCode::Greater:
  case OpCode::GreaterOrEqual:
  case OpCode::Not:
    return executeComparison(prepared, rows);
  case OpCode::Where:
    return executeWhere(prepared, rows);
  case OpCode::ReduceMean:
  case OpCode::ReduceSum:
  case OpCode::ReduceMax:
    return executeReduction(prepared, rows);
  case OpCode::RowMatMul:
    return executeRowMatMul(prepared, rows);
  case OpCode::Sigmoid:
  case OpCode::Tanh:
  case OpCode::Relu:
    return executeActivation(prepared, rows);
  case OpCode::Cast:
    return executeCast(prepared, rows);
  case OpCode::Identity:
  case OpCode::Reshape:
  case OpCode::Squeeze:
  case OpCode::Unsqueeze:
    return executeCopy(prepared, rows);
  case OpCode::Split:
  case OpCode::Concat:
  case OpCode::Slice:
  case OpCode::Transpose:
    return executeMoves(prepared, rows);
  case OpCode::Gather:
    return executeGather(prepared, rows);
  case OpCode::ArgMax:
    return executeArgMax(prepared, rows);
  case OpCode::Constant:
    return executeConstant(prepared);
  }
  return invalidRegion("unknown opcode");
}

/// Add, Sub, Mul and Div, through the operands' broadcast maps; float
/// operands laid out alike take one vectorised loop (binaryFloats).
Status RegionInterpreter::Impl::executeArithmetic(PreparedOp &prepared,
                                                  int64_t rows) {
  OpCode code = prepared.op->opcode();
  auto operand = [&](size_t n) -> Value & {
    return values[prepared.operands[n]];
  };
  Value &out = values[prepared.results[0]];
  // Values without the batch are the same for every row: computed once.
  int64_t outRows = out.hasBatch ? rows : 1;
  const Value &a = operand(0), &b = operand(1);
  const std::vector<int64_t> &mapA = prepared.broadcast[0],
                             &mapB = prepared.broadcast[1];
  if (out.isFloat && mapA.empty() && mapB.empty() && (a.view || b.view)) {
    // Rows wherever they lie: one call over the block's row pointers.
    prepared.rowsOfA.resize(outRows);
    prepared.rowsOfB.resize(outRows);
    for (int64_t r = 0; r < outRows; ++r) {
      prepared.rowsOfA[r] = a.floatRow(r);
      prepared.rowsOfB[r] = b.floatRow(r);
    }
    elementRows(elementOp(code), prepared.rowsOfA.data(),
                prepared.rowsOfB.data(), out.f.data(), outRows, out.count);
    return Status::ok();
  }
  if (out.isFloat && mapA.empty() && mapB.empty() &&
      (a.hasBatch || outRows == 1) && (b.hasBatch || outRows == 1)) {
    // Every row alike and laid out alike: one loop over the block.
    binaryFloats(code, a.floats(), b.floats(), out.f.data(),
                 outRows * out.count);
    return Status::ok();
  }
  const StridedBroadcast &strided = prepared.strided;
  for (int64_t r = 0; r < outRows; ++r) {
    int64_t base = r * out.count;
    if (out.isFloat && strided.inner > 0) {
      stridedFloats(code, strided, a.floatRow(r), b.floatRow(r),
                    out.f.data() + base, out.count);
      continue;
    }
    if (out.isFloat && mapA.empty() && mapB.empty()) {
      binaryFloats(code, a.floatRow(r), b.floatRow(r), out.f.data() + base,
                   out.count);
      continue;
    }
    for (int64_t k = 0; k < out.count; ++k) {
      int64_t ia = mapA.empty() ? k : mapA[k], ib = mapB.empty() ? k : mapB[k];
      if (out.isFloat)
        out.f[base + k] =
            applyBinary(code, a.floatRow(r)[ia], b.floatRow(r)[ib]);
      else
        out.i[base + k] = applyBinary(code, a.intRow(r)[ia], b.intRow(r)[ib]);
    }
  }
  return Status::ok();
}

/// Sigmoid, Tanh and Relu: float operand and result of equal counts.
Status RegionInterpreter::Impl::executeActivation(PreparedOp &prepared,
                                                  int64_t rows) {
  auto operand = [&](size_t n) -> Value & {
    return values[prepared.operands[n]];
  };
  Value &out = values[prepared.results[0]];
  int64_t outRows = out.hasBatch ? rows : 1;
  const Value &in = operand(0);
  if (in.view) {
    switch (prepared.op->opcode()) {
    case OpCode::Sigmoid:
      sigmoidRows(in.rowPointers.data(), out.f.data(), outRows, out.count);
      return Status::ok();
    case OpCode::Tanh:
      tanhRows(in.rowPointers.data(), out.f.data(), outRows, out.count);
      return Status::ok();
    default: // Relu
      for (int64_t r = 0; r < outRows; ++r) {
        const float *row = in.rowPointers[r];
        float *to = out.f.data() + r * out.count;
        for (int64_t k = 0; k < out.count; ++k)
          to[k] = row[k] > 0.0f ? row[k] : 0.0f;
      }
      return Status::ok();
    }
  }
  switch (prepared.op->opcode()) {
  case OpCode::Sigmoid:
    sigmoidArray(operand(0).floats(), out.f.data(), outRows * out.count);
    return Status::ok();
  case OpCode::Tanh:
    tanhArray(operand(0).floats(), out.f.data(), outRows * out.count);
    return Status::ok();
  default: { // Relu
    const float *in = operand(0).floats();
    for (int64_t k = 0; k < outRows * out.count; ++k)
      out.f[k] = in[k] > 0.0f ? in[k] : 0.0f;
    return Status::ok();
  }
  }
}

RegionInterpreter::RegionInterpreter(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
RegionInterpreter::~RegionInterpreter() = default;

Result<std::unique_ptr<RegionInterpreter>>
RegionInterpreter::create(const cellpack::KernelStep &step,
                          RegionOptions options) {
  auto impl = std::make_unique<Impl>(step, std::move(options));
  if (Status status = impl->prepare(); !status.isOk())
    return status;
  return std::unique_ptr<RegionInterpreter>(
      new RegionInterpreter(std::move(impl)));
}

bool RegionInterpreter::hasGemm() const { return impl_->hasGemm; }
int64_t RegionInterpreter::bytesPerRow() const { return impl_->rowBytes; }
int RegionInterpreter::viewCount() const {
  return static_cast<int>(
      std::count_if(impl_->values.begin(), impl_->values.end(),
                    [](const detail::Value &value) { return value.view; }));
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
  // Inputs without the batch: weights are read in place, others converted.
  for (uint32_t id = 0; id < numInputs; ++id) {
    Value &value = impl.values[id];
    if (value.hasBatch)
      continue;
    if (readInPlace(value)) {
      value.external = inputs[id].data;
      continue;
    }
    for (int64_t k = 0; k < value.count; ++k) {
      if (value.isFloat)
        value.f[k] = loadFloat(inputs[id].data, value.dtype, k);
      else
        value.i[k] = loadInt(inputs[id].data, value.dtype, k);
    }
  }
  for (int64_t first = begin; first < end; first += impl.blockRows) {
    int64_t rows = std::min(impl.blockRows, end - first);
    // Set by a fused op for this block only (a block that failed may have
    // left some).
    std::fill(impl.storedAlready.begin(), impl.storedAlready.end(), 0);
    std::fill(impl.copiedAlready.begin(), impl.copiedAlready.end(), 0);
    impl.loadRows(inputs, first, rows);
    for (size_t index = 0; index < impl.ops.size(); ++index) {
      int32_t fusion = impl.opFusion.empty() ? -1 : impl.opFusion[index];
      if (fusion >= 0)
        impl.runFusedGates(impl.fusedGates[fusion], outputs, first, rows);
      else if (fusion <= -3)
        impl.runFusedGru(impl.fusedGru[-3 - fusion], outputs, first, rows);
      else if (fusion == -1)
        if (Status status = impl.execute(impl.ops[index], rows); !status.isOk())
          return status;
    }
    impl.storeRows(outputs, first, rows);
    impl.copyRows(outputs, first, rows);
  }
  return Status::ok();
}
