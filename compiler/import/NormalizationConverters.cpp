//===- NormalizationConverters.cpp - ReduceMean and LayerNormalization ---===//
//
// Row reductions and what is built from them. Layer-normalised cells
// normalise each row: PyTorch exports nn.LayerNorm as
// ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add before opset 17
// and as one LayerNormalization node from 17 on. ReduceMean becomes
// `cell.reduce_mean` (a kernel of its own, one block per row);
// LayerNormalization is written out as the same ops the older opsets export.
// InstanceNormalization (nn.GroupNorm's export) is written out over the
// positions of [batch, channels, positions] rows. Softmax and LogSoftmax are
// written out over ReduceMax and ReduceSum. All
// reduce the columns of a [batch, columns] value only (a sum or mean over one
// dimension of [batch, m, n] rows is a row matmul, BatchedMatMul.cpp):
// anything else is refused naming the node.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/GraphImporter.h"

#include <cstring>
#include <type_traits>

using namespace mlir;
using namespace cellc;
namespace om = cellc::onnx_model;

/// The reduction `ReduceOp` over the columns of `input` ([batch, columns]),
/// kept as [batch, 1] when `keepdims`.
template <typename ReduceOp = cell::ReduceMeanOp>
static FailureOr<Value> rowReduce(NodeContext &ctx, Value input,
                                  bool keepdims) {
  Builder &b = ctx.builder();
  FailureOr<Operation *> op = ctx.create<ReduceOp>(
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

/// ReduceMean, ReduceSum, ReduceMax: axes from the attribute, or from input
/// 1 from opset `axesInputSince` on.
template <typename ReduceOp, int64_t axesInputSince>
static LogicalResult convertReduce(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  auto given = intsFromAttrOrInput(ctx, "axes", 1, axesInputSince);
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
  bool keepdims = ctx.intAttr("keepdims", 1) != 0;
  // A sum or mean over one matrix dimension of [batch, m, n] rows.
  if (!std::is_same_v<ReduceOp, cell::ReduceMaxOp> && type->getRank() == 3 &&
      type->isDynamicDim(0) && axes.size() == 1 && axes[0] >= 1 &&
      type->getElementType().isa<FloatType>()) {
    FailureOr<Value> reduced = reduceRowMatrices(
        ctx, *ctx.input(0), axes[0],
        std::is_same_v<ReduceOp, cell::ReduceMeanOp>, keepdims);
    if (failed(reduced))
      return failure();
    return ctx.setOutputs(*reduced);
  }
  if (failed(rowsInput(ctx, axes)))
    return failure();
  FailureOr<Value> reduced = rowReduce<ReduceOp>(ctx, *ctx.input(0), keepdims);
  if (failed(reduced))
    return failure();
  return ctx.setOutputs(*reduced);
}

LogicalResult cellc::convertReduceMean(NodeContext &ctx) {
  return convertReduce<cell::ReduceMeanOp, 18>(ctx);
}
LogicalResult cellc::convertReduceSum(NodeContext &ctx) {
  return convertReduce<cell::ReduceSumOp, 13>(ctx);
}
LogicalResult cellc::convertReduceMax(NodeContext &ctx) {
  return convertReduce<cell::ReduceMaxOp, 18>(ctx);
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
  FailureOr<Operation *> op = ctx.create<OpT>(values);
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
  // Named after the node's output, which is unique in the graph.
  std::string name = ctx.node().outputs.at(0) + ":" + suffix.str();
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
  FailureOr<Value> mean = rowReduce(ctx, *x, /*keepdims=*/true);
  FailureOr<Value> centered = make<cell::SubOp>(ctx, {*x, mean});
  FailureOr<Value> square = make<cell::MulOp>(ctx, {centered, centered});
  FailureOr<Value> variance =
      succeeded(square) ? rowReduce(ctx, *square, true) : FailureOr<Value>();
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

/// InstanceNormalization of [batch, channels, positions] values (what
/// PyTorch exports for nn.GroupNorm, after a reshape to [batch, groups,
/// -1]): each channel of a row normalised over its positions, then scaled
/// and shifted per channel. The means are row matrix products
/// (reduceRowMatrices), as a ReduceMean over that axis imports.
LogicalResult cellc::convertInstanceNormalization(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  if (type->getRank() != 3 || !type->isDynamicDim(0) ||
      !type->getElementType().isa<FloatType>())
    return ctx.emitError() << "normalises " << *type
                           << "; cellc normalises float [batch, channels, "
                              "positions] values (rank 3)";
  int64_t channels = type->getDimSize(1);
  FailureOr<Value> x = ctx.input(0);
  auto perChannel = [&](unsigned index) -> FailureOr<Value> {
    FailureOr<Value> value = ctx.input(index);
    if (failed(value))
      return failure();
    return ctx.reshape(
        *value, RankedTensorType::get({channels, 1}, type->getElementType()));
  };
  FailureOr<Value> scale = perChannel(1), bias = perChannel(2);
  FailureOr<Value> epsilon = scalarConstant(
      ctx, type->getElementType(), ctx.floatAttr("epsilon", 1e-5f), "epsilon");
  if (failed(x) || failed(scale) || failed(bias) || failed(epsilon))
    return failure();
  FailureOr<Value> mean = reduceRowMatrices(ctx, *x, 2, /*mean=*/true,
                                            /*keepdims=*/true);
  FailureOr<Value> centered = make<cell::SubOp>(ctx, {*x, mean});
  FailureOr<Value> square = make<cell::MulOp>(ctx, {centered, centered});
  FailureOr<Value> variance =
      succeeded(square) ? reduceRowMatrices(ctx, *square, 2, true, true)
                        : FailureOr<Value>();
  FailureOr<Value> shifted = make<cell::AddOp>(ctx, {variance, epsilon});
  FailureOr<Value> deviation = make<cell::SqrtOp>(ctx, {shifted});
  FailureOr<Value> normalized = make<cell::DivOp>(ctx, {centered, deviation});
  FailureOr<Value> y = make<cell::AddOp>(
      ctx, {make<cell::MulOp>(ctx, {normalized, scale}), bias});
  if (failed(y))
    return failure();
  return ctx.setOutputs(*y);
}

/// Softmax and LogSoftmax over the columns of a row: the largest element
/// is subtracted first (as PyTorch does), then exp, the row sum, and a
/// division (Softmax) or a subtracted log (LogSoftmax). Before opset 13 the
/// ops flatten from `axis` (default 1), which for a [batch, columns] value
/// is the same row.
static LogicalResult convertSoftmaxLike(NodeContext &ctx, bool logarithm) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  FailureOr<int64_t> axis = ctx.normalizeAxis(
      ctx.intAttr("axis", ctx.opset() < 13 ? 1 : -1), type->getRank(), "axis");
  if (failed(axis) || failed(rowsInput(ctx, {*axis})))
    return failure();
  FailureOr<Value> x = ctx.input(0);
  FailureOr<Value> largest = rowReduce<cell::ReduceMaxOp>(ctx, *x, true);
  FailureOr<Value> shifted = make<cell::SubOp>(ctx, {x, largest});
  FailureOr<Value> exps = make<cell::ExpOp>(ctx, {shifted});
  FailureOr<Value> sum = succeeded(exps)
                             ? rowReduce<cell::ReduceSumOp>(ctx, *exps, true)
                             : FailureOr<Value>();
  FailureOr<Value> y =
      logarithm
          ? make<cell::SubOp>(ctx, {shifted, make<cell::LogOp>(ctx, {sum})})
          : make<cell::DivOp>(ctx, {exps, sum});
  if (failed(y))
    return failure();
  return ctx.setOutputs(*y);
}

LogicalResult cellc::convertSoftmax(NodeContext &ctx) {
  return convertSoftmaxLike(ctx, /*logarithm=*/false);
}
LogicalResult cellc::convertLogSoftmax(NodeContext &ctx) {
  return convertSoftmaxLike(ctx, /*logarithm=*/true);
}
