//===- NormalizationConverters.cpp - ReduceMean and LayerNormalization ---===//
//
// Layer-normalised cells normalise each row: PyTorch exports nn.LayerNorm as
// ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add before opset 17
// and as one LayerNormalization node from 17 on. ReduceMean becomes
// `cell.reduce_mean` (a kernel of its own, one block per row);
// LayerNormalization is written out as the same ops the older opsets export.
// Both reduce the columns of a [batch, columns] value only: anything else is
// refused naming the node.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/GraphImporter.h"

#include <cstring>

using namespace mlir;
using namespace cellc;
namespace om = cellc::onnx_model;

/// The mean over the columns of `input` ([batch, columns]), kept as
/// [batch, 1] when `keepdims`.
static FailureOr<Value> rowMean(NodeContext &ctx, Value input, bool keepdims) {
  Builder &b = ctx.builder();
  FailureOr<Operation *> op = ctx.create<cell::ReduceMeanOp>(
      input, {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({1})),
              b.getNamedAttr("keepdims", b.getBoolAttr(keepdims))});
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

/// Input 0 when it is a batch-leading [batch, columns] value, else an error
/// saying what cellc normalises.
static FailureOr<RankedTensorType> rowsInput(NodeContext &ctx,
                                             ArrayRef<int64_t> axes) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  if (type->getRank() != 2 || !type->isDynamicDim(0) || axes.size() != 1 ||
      axes[0] != 1) {
    InFlightDiagnostic diag = ctx.emitError();
    diag << "reduces axes [";
    llvm::interleaveComma(axes, diag);
    diag << "] of " << *type
         << "; cellc reduces only the columns of a [batch, columns] value "
            "(axis -1 of a rank-2 input)";
    return diag;
  }
  return type;
}

LogicalResult cellc::convertReduceMean(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  auto given = intsFromAttrOrInput(ctx, "axes", 1, /*inputSince=*/18);
  if (failed(given))
    return failure();
  SmallVector<int64_t> axes;
  if (*given && !(*given)->empty()) {
    axes = **given;
    if (failed(normalizeAxes(ctx, axes, type->getRank())))
      return failure();
  } else if (ctx.intAttr("noop_with_empty_axes", 0) != 0) {
    return ctx.setOutputs(*ctx.input(0));
  } else {
    for (int64_t dim = 0; dim < type->getRank(); ++dim)
      axes.push_back(dim);
  }
  if (failed(rowsInput(ctx, axes)))
    return failure();
  FailureOr<Value> mean =
      rowMean(ctx, *ctx.input(0), ctx.intAttr("keepdims", 1) != 0);
  if (failed(mean))
    return failure();
  return ctx.setOutputs(*mean);
}

/// Creates `OpT` over `operands` when all of them exist (an earlier failure
/// has been reported) and returns its result.
template <typename OpT>
static FailureOr<Value> make(NodeContext &ctx,
                             ArrayRef<FailureOr<Value>> operands) {
  SmallVector<Value> values;
  for (const FailureOr<Value> &operand : operands) {
    if (failed(operand))
      return failure();
    values.push_back(*operand);
  }
  SmallVector<Type> types;
  if constexpr (!OpT::template hasTrait<InferTypeOpInterface::Trait>())
    types.push_back(values.front().getType());
  FailureOr<Operation *> op = ctx.create<OpT>(values, {}, types);
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

/// A scalar constant of `element` type holding `value`, for the node.
static FailureOr<Value> scalarConstant(NodeContext &ctx, Type element,
                                       double value, StringRef suffix) {
  om::Tensor tensor;
  if (element.isF32()) {
    float narrow = static_cast<float>(value);
    tensor.dataType = static_cast<int32_t>(om::DataType::Float);
    tensor.bytes.resize(4);
    std::memcpy(tensor.bytes.data(), &narrow, 4);
  } else if (element.isF64()) {
    tensor.dataType = static_cast<int32_t>(om::DataType::Double);
    tensor.bytes.resize(8);
    std::memcpy(tensor.bytes.data(), &value, 8);
  } else {
    return ctx.emitError() << "normalises " << element
                           << " values; cellc does so for f32 and f64";
  }
  std::string name = ctx.node().name + "." + suffix.str();
  GraphImporter &importer = ctx.importer();
  if (!importer.constantTensor(name))
    importer.defineConstantTensor(name, std::move(tensor));
  Value constant = importer.lookup(name, ctx.loc());
  if (!constant)
    return failure();
  return constant;
}

LogicalResult cellc::convertLayerNormalization(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.intAttr("axis", -1), type->getRank(), "axis");
  if (failed(axis))
    return failure();
  if (failed(rowsInput(ctx, {*axis})))
    return failure();
  const auto &outputs = ctx.node().outputs;
  for (size_t i = 1; i < outputs.size(); ++i)
    if (!outputs[i].empty())
      return ctx.emitError() << "output '" << outputs[i]
                             << "' (Mean or InvStdDev, for training) is not "
                                "supported";
  FailureOr<Value> x = ctx.input(0);
  FailureOr<Value> scale = succeeded(x) ? ctx.input(1) : FailureOr<Value>();
  if (failed(scale))
    return failure();
  FailureOr<Value> epsilon = scalarConstant(
      ctx, type->getElementType(), ctx.floatAttr("epsilon", 1e-5f), "epsilon");
  if (failed(epsilon))
    return failure();
  // mean, x - mean, the mean of its square, then (x - mean) / sqrt(var +
  // epsilon) * scale + bias: the ops PyTorch exports before opset 17.
  FailureOr<Value> mean = rowMean(ctx, *x, /*keepdims=*/true);
  FailureOr<Value> centered = make<cell::SubOp>(ctx, {*x, mean});
  FailureOr<Value> square = make<cell::MulOp>(ctx, {centered, centered});
  FailureOr<Value> variance =
      succeeded(square) ? rowMean(ctx, *square, true) : FailureOr<Value>();
  FailureOr<Value> shifted = make<cell::AddOp>(ctx, {variance, epsilon});
  FailureOr<Value> deviation = make<cell::SqrtOp>(ctx, {shifted});
  FailureOr<Value> normalized = make<cell::DivOp>(ctx, {centered, deviation});
  FailureOr<Value> y = make<cell::MulOp>(ctx, {normalized, scale});
  if (succeeded(y) && ctx.hasInput(2))
    y = make<cell::AddOp>(ctx, {y, ctx.input(2)});
  if (failed(y))
    return failure();
  return ctx.setOutputs(*y);
}
