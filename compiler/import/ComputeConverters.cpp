//===- ComputeConverters.cpp - ONNX arithmetic ops to `cell` ops ---------===//
//
// Converters for the ops that compute: elementwise arithmetic and activations,
// matrix products, casts, constants and identities. Shape ops are in
// ShapeConverters.cpp; the table of converters is at the end of this file.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/GraphImporter.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace cellc;
namespace om = cellc::onnx_model;

/// Creates `OpT` over inputs 0..arity-1 and binds its single result.
template <typename OpT, unsigned Arity>
static LogicalResult convertSimple(NodeContext &ctx) {
  SmallVector<Value> operands;
  for (unsigned i = 0; i < Arity; ++i) {
    FailureOr<Value> value = ctx.input(i);
    if (failed(value))
      return failure();
    operands.push_back(*value);
  }
  FailureOr<Operation *> op = ctx.create<OpT>(operands);
  if (failed(op))
    return failure();
  return ctx.setOutputs((*op)->getResults());
}

/// Max and Min of one or more inputs under numpy broadcasting, folded left
/// to right as a comparison and a where: max(a, b) = a > b ? a : b (a NaN in
/// b is kept, one in a is not, as C's fmax leaves one of them).
template <bool IsMax> static LogicalResult convertMaxMin(NodeContext &ctx) {
  if (ctx.numInputs() == 0)
    return ctx.emitError() << "needs at least one input";
  FailureOr<Value> result = ctx.input(0);
  if (failed(result))
    return failure();
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    FailureOr<Value> next = ctx.input(i);
    if (failed(next))
      return failure();
    FailureOr<Operation *> wins =
        IsMax ? ctx.create<cell::GreaterOp>({*result, *next})
              : ctx.create<cell::LessOp>({*result, *next});
    if (failed(wins))
      return failure();
    FailureOr<Operation *> chosen =
        ctx.create<cell::WhereOp>({(*wins)->getResult(0), *result, *next});
    if (failed(chosen))
      return failure();
    result = (*chosen)->getResult(0);
  }
  return ctx.setOutputs(*result);
}

static LogicalResult convertGemm(NodeContext &ctx) {
  SmallVector<Value> operands;
  for (unsigned i = 0; i < 3; ++i) {
    if (i == 2 && !ctx.hasInput(2))
      break;
    FailureOr<Value> value = ctx.input(i);
    if (failed(value))
      return failure();
    operands.push_back(*value);
  }
  Builder &b = ctx.builder();
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("alpha", b.getF32FloatAttr(ctx.floatAttr("alpha", 1.0f))),
      b.getNamedAttr("beta", b.getF32FloatAttr(ctx.floatAttr("beta", 1.0f))),
      b.getNamedAttr("trans_a", b.getBoolAttr(ctx.intAttr("transA", 0) != 0)),
      b.getNamedAttr("trans_b", b.getBoolAttr(ctx.intAttr("transB", 0) != 0))};
  FailureOr<Operation *> op = ctx.create<cell::GemmOp>(operands, attrs);
  if (failed(op))
    return failure();
  return ctx.setOutputs((*op)->getResults());
}

static LogicalResult convertCast(NodeContext &ctx) {
  FailureOr<RankedTensorType> inputType = ctx.inputType(0);
  if (failed(inputType))
    return failure();
  const om::Attribute *to = ctx.attribute("to");
  if (!to || to->kind != om::Attribute::Kind::Int)
    return ctx.emitError() << "needs an integer attribute 'to'";
  Type element = ctx.elementTypeOf(static_cast<int32_t>(to->i));
  if (element && element.isF64())
    return ctx.emitError() << "casts to double (f64); cellc serves float32 "
                              "cells (the GEMMs and the CPU backend compute "
                              "in fp32)";
  if (!element)
    return ctx.emitError() << "cannot cast to "
                           << om::dataTypeName(static_cast<int32_t>(to->i))
                           << ", which cellc does not support";
  Type resultType = inputType->clone(element);
  FailureOr<Operation *> op =
      ctx.create<cell::CastOp>(*ctx.input(0), {}, {resultType});
  if (failed(op))
    return failure();
  return ctx.setOutputs((*op)->getResults());
}

/// The tensor a Constant node holds, from whichever attribute carries it.
static FailureOr<om::Tensor> constantNodeTensor(NodeContext &ctx) {
  const om::Node &node = ctx.node();
  if (node.attributes.size() != 1)
    return ctx.emitError() << "needs exactly one value attribute";
  const om::Attribute &attr = node.attributes.front();
  om::Tensor tensor;
  tensor.name = node.outputs.empty() ? node.name : node.outputs.front();
  auto append = [&](const void *data, size_t size) {
    const char *bytes = static_cast<const char *>(data);
    tensor.bytes.insert(tensor.bytes.end(), bytes, bytes + size);
  };
  if (attr.name == "value" && attr.kind == om::Attribute::Kind::Tensor) {
    tensor.dataType = attr.t.dataType;
    tensor.dims = attr.t.dims;
    tensor.bytes = attr.t.bytes;
  } else if (attr.name == "value_float" &&
             attr.kind == om::Attribute::Kind::Float) {
    tensor.dataType = static_cast<int32_t>(om::DataType::Float);
    append(&attr.f, sizeof(float));
  } else if (attr.name == "value_floats" &&
             attr.kind == om::Attribute::Kind::Floats) {
    tensor.dataType = static_cast<int32_t>(om::DataType::Float);
    tensor.dims = {static_cast<int64_t>(attr.floats.size())};
    append(attr.floats.data(), attr.floats.size() * sizeof(float));
  } else if (attr.name == "value_int" &&
             attr.kind == om::Attribute::Kind::Int) {
    tensor.dataType = static_cast<int32_t>(om::DataType::Int64);
    append(&attr.i, sizeof(int64_t));
  } else if (attr.name == "value_ints" &&
             attr.kind == om::Attribute::Kind::Ints) {
    tensor.dataType = static_cast<int32_t>(om::DataType::Int64);
    tensor.dims = {static_cast<int64_t>(attr.ints.size())};
    append(attr.ints.data(), attr.ints.size() * sizeof(int64_t));
  } else {
    return ctx.emitError() << "attribute '" << attr.name
                           << "' is not a supported constant value (use "
                              "value, value_float(s) or value_int(s))";
  }
  return tensor;
}

static LogicalResult convertConstant(NodeContext &ctx) {
  FailureOr<om::Tensor> tensor = constantNodeTensor(ctx);
  if (failed(tensor))
    return failure();
  const om::Tensor *kept = ctx.keepConstantTensor(std::move(*tensor));
  FailureOr<ElementsAttr> value = ctx.tensorAttr(*kept);
  if (failed(value))
    return failure();
  FailureOr<Operation *> op = ctx.create<cell::ConstantOp>(
      {}, ctx.builder().getNamedAttr("value", *value), {value->getType()});
  if (failed(op))
    return failure();
  return ctx.setOutputs((*op)->getResults());
}

NodeConverter cellc::findConverter(StringRef opType) {
  static const llvm::StringMap<NodeConverter> converters = {
      {"Add", convertSimple<cell::AddOp, 2>},
      {"Sub", convertSimple<cell::SubOp, 2>},
      {"Mul", convertSimple<cell::MulOp, 2>},
      {"Div", convertSimple<cell::DivOp, 2>},
      {"Sigmoid", convertSimple<cell::SigmoidOp, 1>},
      {"Tanh", convertSimple<cell::TanhOp, 1>},
      {"Relu", convertSimple<cell::ReluOp, 1>},
      {"Erf", convertSimple<cell::ErfOp, 1>},
      {"Sqrt", convertSimple<cell::SqrtOp, 1>},
      {"Pow", convertSimple<cell::PowOp, 2>},
      {"Equal", convertSimple<cell::EqualOp, 2>},
      {"Less", convertSimple<cell::LessOp, 2>},
      {"LessOrEqual", convertSimple<cell::LessOrEqualOp, 2>},
      {"Greater", convertSimple<cell::GreaterOp, 2>},
      {"GreaterOrEqual", convertSimple<cell::GreaterOrEqualOp, 2>},
      {"Not", convertSimple<cell::NotOp, 1>},
      {"Where", convertSimple<cell::WhereOp, 3>},
      {"ReduceMean", convertReduceMean},
      {"ReduceSum", convertReduceSum},
      {"ReduceMax", convertReduceMax},
      {"Softmax", convertSoftmax},
      {"LogSoftmax", convertLogSoftmax},
      {"Exp", convertSimple<cell::ExpOp, 1>},
      {"Log", convertSimple<cell::LogOp, 1>},
      {"Softplus", convertSimple<cell::SoftplusOp, 1>},
      {"Neg", convertSimple<cell::NegOp, 1>},
      {"Max", convertMaxMin<true>},
      {"Min", convertMaxMin<false>},
      {"LayerNormalization", convertLayerNormalization},
      {"InstanceNormalization", convertInstanceNormalization},
      {"Identity", convertSimple<cell::IdentityOp, 1>},
      {"MatMul", convertMatMul},
      {"Gemm", convertGemm},
      {"Cast", convertCast},
      {"Constant", convertConstant},
      {"Concat", convertConcat},
      {"Split", convertSplit},
      {"Slice", convertSlice},
      {"Gather", convertGather},
      {"ArgMax", convertArgMax},
      {"Squeeze", convertSqueeze},
      {"Unsqueeze", convertUnsqueeze},
      {"Reshape", convertReshape},
      {"Transpose", convertTranspose},
      {"LSTM", convertLstm},
      {"GRU", convertGru},
      {"RNN", convertRnn},
  };
  auto it = converters.find(opType);
  return it == converters.end() ? nullptr : it->second;
}

std::string cellc::supportedOpTypes() {
  return "Add, ArgMax, Cast, Concat, Constant, Div, Equal, Erf, Exp, "
         "Gather, Gemm, Greater, GreaterOrEqual, GRU, Identity, "
         "InstanceNormalization, LayerNormalization, Less, LessOrEqual, Log, "
         "LogSoftmax, LSTM, MatMul, Max, Min, Mul, Neg, Not, Pow, ReduceMax, "
         "ReduceMean, ReduceSum, Relu, Reshape, RNN, Sigmoid, Slice, Softmax, "
         "Softplus, Split, Sqrt, Squeeze, Sub, Tanh, Transpose, Unsqueeze, "
         "Where (and shape arithmetic: Shape with what folds over it)";
}
