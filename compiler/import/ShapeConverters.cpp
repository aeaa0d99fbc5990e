//===- ShapeConverters.cpp - ONNX shape ops to `cell` ops ----------------===//
//
// Concat, Split, Slice, Gather, ArgMax, Squeeze, Unsqueeze, Reshape and
// Transpose. Opset-dependent forms (attributes before opset 10/13, constant
// inputs after) are resolved here into the dialect's attributes, with negative
// axes and indices normalised.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/GraphImporter.h"

using namespace mlir;
using namespace cellc;

/// Binds the results of a freshly created op, or passes on its failure.
static LogicalResult bindResults(NodeContext &ctx, FailureOr<Operation *> op) {
  if (failed(op))
    return failure();
  return ctx.setOutputs((*op)->getResults());
}

LogicalResult cellc::normalizeAxes(NodeContext &ctx,
                                   SmallVectorImpl<int64_t> &axes,
                                   int64_t rank) {
  for (int64_t &axis : axes) {
    FailureOr<int64_t> normalized = ctx.normalizeAxis(axis, rank, "axis");
    if (failed(normalized))
      return failure();
    axis = *normalized;
  }
  return success();
}

FailureOr<std::optional<SmallVector<int64_t>>>
cellc::intsFromAttrOrInput(NodeContext &ctx, StringRef name, size_t index,
                           int64_t inputSince) {
  if (ctx.opset() < inputSince)
    return ctx.intsAttr(name);
  if (!ctx.hasInput(index))
    return std::optional<SmallVector<int64_t>>();
  FailureOr<SmallVector<int64_t>> values = ctx.constantInts(index, name);
  if (failed(values))
    return failure();
  return std::optional<SmallVector<int64_t>>(*values);
}

LogicalResult cellc::convertConcat(NodeContext &ctx) {
  SmallVector<Value> operands;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    FailureOr<Value> value = ctx.input(i);
    if (failed(value))
      return failure();
    operands.push_back(*value);
  }
  if (operands.empty())
    return ctx.emitError() << "needs at least one input";
  if (!ctx.attribute("axis"))
    return ctx.emitError() << "needs the attribute 'axis'";
  int64_t rank = operands.front().getType().cast<RankedTensorType>().getRank();
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.intAttr("axis", 0), rank, "axis");
  if (failed(axis))
    return failure();
  Builder &b = ctx.builder();
  return bindResults(
      ctx, ctx.create<cell::ConcatOp>(
               operands, b.getNamedAttr("axis", b.getI64IntegerAttr(*axis))));
}

LogicalResult cellc::convertSplit(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.intAttr("axis", 0), type->getRank(), "axis");
  if (failed(axis))
    return failure();
  auto sizes = intsFromAttrOrInput(ctx, "split", 1, /*inputSince=*/13);
  if (failed(sizes))
    return failure();
  SmallVector<int64_t> pieces;
  if (*sizes) {
    pieces = **sizes;
  } else {
    int64_t count = ctx.intAttr("num_outputs", ctx.node().outputs.size());
    int64_t dim = type->getDimSize(*axis);
    if (count <= 0)
      return ctx.emitError() << "has no outputs to split into";
    if (ShapedType::isDynamic(dim))
      return ctx.emitError()
             << "cannot split the dynamic batch dimension evenly";
    // Opset 18 lets the last piece be smaller; earlier opsets need even sizes.
    int64_t piece = (dim + count - 1) / count;
    if (ctx.opset() < 18 && dim % count != 0)
      return ctx.emitError() << "dimension " << *axis << " of size " << dim
                             << " does not split evenly into " << count;
    for (int64_t i = 0; i < count; ++i)
      pieces.push_back(std::min(piece, dim - i * piece));
  }
  if (pieces.size() != ctx.node().outputs.size())
    return ctx.emitError() << "splits into " << pieces.size()
                           << " pieces but has " << ctx.node().outputs.size()
                           << " outputs";
  Builder &b = ctx.builder();
  return bindResults(
      ctx, ctx.create<cell::SplitOp>(
               *ctx.input(0),
               {b.getNamedAttr("axis", b.getI64IntegerAttr(*axis)),
                b.getNamedAttr("sizes", b.getDenseI64ArrayAttr(pieces))}));
}

FailureOr<SliceBounds> cellc::sliceBounds(NodeContext &ctx,
                                          ArrayRef<int64_t> shape) {
  SliceBounds bounds;
  SmallVector<int64_t> &starts = bounds.starts, &ends = bounds.ends,
                       &axes = bounds.axes, &steps = bounds.steps;
  if (ctx.opset() < 10) {
    auto startsAttr = ctx.intsAttr("starts"), endsAttr = ctx.intsAttr("ends");
    if (!startsAttr || !endsAttr)
      return ctx.emitError() << "needs the attributes 'starts' and 'ends'";
    starts = *startsAttr;
    ends = *endsAttr;
    if (auto axesAttr = ctx.intsAttr("axes"))
      axes = *axesAttr;
  } else {
    auto startsIn = ctx.constantInts(1, "starts");
    auto endsIn = succeeded(startsIn) ? ctx.constantInts(2, "ends")
                                      : FailureOr<SmallVector<int64_t>>();
    if (failed(startsIn) || failed(endsIn))
      return failure();
    starts = *startsIn;
    ends = *endsIn;
    if (ctx.hasInput(3)) {
      auto axesIn = ctx.constantInts(3, "axes");
      if (failed(axesIn))
        return failure();
      axes = *axesIn;
    }
    if (ctx.hasInput(4)) {
      auto stepsIn = ctx.constantInts(4, "steps");
      if (failed(stepsIn))
        return failure();
      steps = *stepsIn;
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return ctx.emitError() << "starts, ends, axes and steps differ in length";
  if (failed(normalizeAxes(ctx, axes, shape.size())))
    return failure();
  for (size_t i = 0; i < starts.size(); ++i) {
    if (steps[i] <= 0)
      return ctx.emitError() << "step " << steps[i]
                             << " is not supported; steps must be positive";
    int64_t dim = shape[axes[i]];
    if (ShapedType::isDynamic(dim))
      return ctx.emitError()
             << "slicing the dynamic batch dimension is not supported";
    auto clamp = [dim](int64_t index) {
      if (index < 0)
        index += dim;
      return std::max<int64_t>(0, std::min(index, dim));
    };
    starts[i] = clamp(starts[i]);
    ends[i] = std::max(starts[i], clamp(ends[i]));
    if (ends[i] == starts[i])
      return ctx.emitError() << "takes nothing of axis " << axes[i]
                             << " (an empty slice); cellc does not carry "
                                "empty values";
  }
  return bounds;
}

LogicalResult cellc::convertSlice(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  FailureOr<SliceBounds> bounds = sliceBounds(ctx, type->getShape());
  if (failed(bounds))
    return failure();
  Builder &b = ctx.builder();
  return bindResults(
      ctx,
      ctx.create<cell::SliceOp>(
          *ctx.input(0),
          {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(bounds->axes)),
           b.getNamedAttr("starts", b.getDenseI64ArrayAttr(bounds->starts)),
           b.getNamedAttr("ends", b.getDenseI64ArrayAttr(bounds->ends)),
           b.getNamedAttr("steps", b.getDenseI64ArrayAttr(bounds->steps))}));
}

LogicalResult cellc::convertGather(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<Value> indices =
      succeeded(type) ? ctx.input(1) : FailureOr<Value>();
  if (failed(type) || failed(indices))
    return failure();
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.intAttr("axis", 0), type->getRank(), "axis");
  if (failed(axis))
    return failure();
  Builder &b = ctx.builder();
  return bindResults(ctx,
                     ctx.create<cell::GatherOp>(
                         ValueRange{*ctx.input(0), *indices},
                         b.getNamedAttr("axis", b.getI64IntegerAttr(*axis))));
}

LogicalResult cellc::convertArgMax(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.intAttr("axis", 0), type->getRank(), "axis");
  if (failed(axis))
    return failure();
  Builder &b = ctx.builder();
  return bindResults(
      ctx,
      ctx.create<cell::ArgMaxOp>(
          *ctx.input(0),
          {b.getNamedAttr("axis", b.getI64IntegerAttr(*axis)),
           b.getNamedAttr("keepdims",
                          b.getBoolAttr(ctx.intAttr("keepdims", 1))),
           b.getNamedAttr("select_last_index", b.getBoolAttr(ctx.intAttr(
                                                   "select_last_index", 0)))}));
}

LogicalResult cellc::convertSqueeze(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  auto given = intsFromAttrOrInput(ctx, "axes", 1, /*inputSince=*/13);
  if (failed(given))
    return failure();
  SmallVector<int64_t> axes;
  if (*given) {
    axes = **given;
    if (failed(normalizeAxes(ctx, axes, type->getRank())))
      return failure();
  } else {
    // No axes: every static dimension of size 1 (never the batch).
    for (int64_t dim = 0; dim < type->getRank(); ++dim)
      if (type->getDimSize(dim) == 1)
        axes.push_back(dim);
  }
  Builder &b = ctx.builder();
  return bindResults(
      ctx,
      ctx.create<cell::SqueezeOp>(
          *ctx.input(0), b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes))));
}

LogicalResult cellc::convertUnsqueeze(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  auto given = intsFromAttrOrInput(ctx, "axes", 1, /*inputSince=*/13);
  if (failed(given))
    return failure();
  if (!*given)
    return ctx.emitError() << "needs 'axes'";
  SmallVector<int64_t> axes = **given;
  int64_t rank = type->getRank() + static_cast<int64_t>(axes.size());
  if (failed(normalizeAxes(ctx, axes, rank)))
    return failure();
  llvm::sort(axes);
  Builder &b = ctx.builder();
  return bindResults(
      ctx,
      ctx.create<cell::UnsqueezeOp>(
          *ctx.input(0), b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes))));
}

/// Resolves ONNX Reshape's target (with 0 = copy and -1 = infer) for an input
/// whose only dynamic dimension is the batch.
static FailureOr<RankedTensorType> reshapeTarget(NodeContext &ctx,
                                                 RankedTensorType input,
                                                 ArrayRef<int64_t> target,
                                                 bool allowZero) {
  int64_t inputVolume = 1;
  int inputDynamic = 0;
  for (int64_t dim : input.getShape()) {
    if (ShapedType::isDynamic(dim))
      ++inputDynamic;
    else
      inputVolume *= dim;
  }
  SmallVector<int64_t> shape;
  int64_t knownVolume = 1;
  int inferred = -1, targetDynamic = 0;
  for (auto [index, entry] : llvm::enumerate(target)) {
    int64_t dim = entry;
    if (dim == 0 && !allowZero) {
      if (index >= static_cast<size_t>(input.getRank()))
        return ctx.emitError() << "shape entry " << index
                               << " copies a dimension the input lacks";
      dim = input.getDimSize(index);
    }
    if (dim == -1) {
      if (inferred >= 0)
        return ctx.emitError() << "shape has more than one -1";
      inferred = index;
      shape.push_back(dim);
      continue;
    }
    if (ShapedType::isDynamic(dim))
      ++targetDynamic;
    else if (dim < 0)
      return ctx.emitError() << "shape entry " << dim << " is invalid";
    else
      knownVolume *= dim;
    shape.push_back(dim);
  }
  if (inferred >= 0) {
    bool absorbsBatch = inputDynamic > targetDynamic;
    if (knownVolume == 0 || inputVolume % knownVolume != 0)
      return ctx.emitError()
             << "cannot infer the -1 entry: " << inputVolume
             << " elements per row are not a multiple of " << knownVolume;
    shape[inferred] =
        absorbsBatch ? ShapedType::kDynamic : inputVolume / knownVolume;
    if (absorbsBatch)
      ++targetDynamic;
    else
      knownVolume = inputVolume;
  }
  if (targetDynamic != inputDynamic)
    return ctx.emitError() << "the target shape "
                           << (targetDynamic ? "duplicates" : "drops")
                           << " the dynamic batch dimension of " << input;
  return RankedTensorType::get(shape, input.getElementType());
}

FailureOr<RankedTensorType> cellc::reshapeResult(NodeContext &ctx,
                                                 RankedTensorType input) {
  // A target shape computed from Shape may name the batch size itself:
  // that dimension is the dynamic batch.
  if (const HostInts *host = ctx.opset() >= 5 ? ctx.hostInts(1) : nullptr;
      host && !host->fullyKnown()) {
    SmallVector<int64_t> target;
    for (auto [kind, value] : llvm::zip(host->kinds, host->values)) {
      if (kind == HostInts::Kind::Unknown)
        return ctx.emitError()
               << "the target shape computes with the batch size (read by "
                  "node '"
               << host->batchNode
               << "'); only the batch size itself may appear in it";
      target.push_back(kind == HostInts::Kind::Batch ? ShapedType::kDynamic
                                                     : value);
    }
    return reshapeTarget(ctx, input, target, /*allowZero=*/true);
  }
  auto given = intsFromAttrOrInput(ctx, "shape", 1, /*inputSince=*/5);
  if (failed(given))
    return failure();
  if (!*given)
    return ctx.emitError() << "needs a target shape";
  return reshapeTarget(ctx, input, **given, ctx.intAttr("allowzero", 0) != 0);
}

LogicalResult cellc::convertReshape(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  FailureOr<RankedTensorType> result = reshapeResult(ctx, *type);
  if (failed(result))
    return failure();
  return bindResults(ctx,
                     ctx.create<cell::ReshapeOp>(*ctx.input(0), {}, {*result}));
}

LogicalResult cellc::convertTranspose(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  SmallVector<int64_t> perm;
  if (auto given = ctx.intsAttr("perm")) {
    perm = *given;
  } else {
    for (int64_t dim = type->getRank() - 1; dim >= 0; --dim)
      perm.push_back(dim);
  }
  Builder &b = ctx.builder();
  return bindResults(
      ctx,
      ctx.create<cell::TransposeOp>(
          *ctx.input(0), b.getNamedAttr("perm", b.getDenseI64ArrayAttr(perm))));
}
