//===- BatchLayout.cpp - Values whose batch dimension is not leading ------===//
//
// ONNX's recurrent ops put the batch second ([seq, batch, input] and
// [directions, batch, hidden]), and so does the PyTorch code around them
// (`h.view(b, layers, hidden).transpose(0, 1)`, `h_n[-1]`). The `cell`
// dialect keeps the batch leading, so the importer keeps such a value as
// rows, a [batch, columns] tensor whose columns run over the other
// dimensions in their ONNX order, with its ONNX shape beside it. It follows
// the value through the shape ops that only relabel dimensions or take a
// contiguous run of columns: Transpose moving the batch (the other
// dimensions keep their order), Squeeze, Unsqueeze, Reshape that keeps the
// batch apart, Slice, Gather of one index, and Concat. Any other op reading
// such a value is an error naming the node (NodeContext::input).
//
//===----------------------------------------------------------------------===//
#include "compiler/import/GraphImporter.h"

#include "llvm/ADT/SmallSet.h"

#include <numeric>

using namespace mlir;
using namespace cellc;

namespace {
/// Product of the non-batch dimensions after `axis`: the columns one step
/// along `axis` spans.
int64_t columnsPerStep(const BatchLayout &layout, int64_t axis) {
  int64_t columns = 1;
  for (int64_t dim = axis + 1; dim < int64_t(layout.shape.size()); ++dim)
    if (dim != layout.batchAxis)
      columns *= layout.shape[dim];
  return columns;
}

/// True when a run along `axis` is a contiguous range of columns: every
/// non-batch dimension before it has size 1.
bool leadsColumns(const BatchLayout &layout, int64_t axis) {
  for (int64_t dim = 0; dim < axis; ++dim)
    if (dim != layout.batchAxis && layout.shape[dim] != 1)
      return false;
  return true;
}

/// The type of input 0 when it is an ordinary batch-leading value.
std::optional<RankedTensorType> batchLeadingInput(NodeContext &ctx) {
  if (ctx.hasBatchLayout(0) || !ctx.hasInput(0))
    return std::nullopt;
  Value value = ctx.importer().lookup(ctx.node().inputs[0], ctx.loc());
  auto type =
      value ? value.getType().dyn_cast<RankedTensorType>() : RankedTensorType();
  if (!type || type.getRank() == 0 || !type.isDynamicDim(0))
    return std::nullopt;
  return type;
}

FailureOr<bool> followTranspose(NodeContext &ctx) {
  std::optional<RankedTensorType> leading = batchLeadingInput(ctx);
  if (!ctx.hasBatchLayout(0)) {
    if (!leading)
      return false;
    auto perm = ctx.intsAttr("perm");
    // Transposes that keep the batch leading are ordinary cell.transpose.
    if (!perm || perm->empty() || (*perm)[0] == 0)
      return false;
  }
  FailureOr<Rows> in = ctx.rows(0);
  if (failed(in))
    return failure();
  const BatchLayout &from = in->layout;
  int64_t rank = from.shape.size();
  SmallVector<int64_t> perm(rank);
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (auto given = ctx.intsAttr("perm"))
    perm = *given;
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  for (int64_t i = 0; i < rank; ++i)
    if (int64_t(sorted.size()) != rank || sorted[i] != i)
      return ctx.emitError() << "perm must be a permutation of 0.." << rank - 1;
  BatchLayout to;
  int64_t last = -1;
  for (auto [i, axis] : llvm::enumerate(perm)) {
    to.shape.push_back(from.shape[axis]);
    if (axis == from.batchAxis) {
      to.batchAxis = i;
      continue;
    }
    if (from.shape[axis] == 1)
      continue; // a unit dimension can go anywhere
    if (axis < last)
      return ctx.emitError()
             << "moves the batch dimension of a value of shape "
             << describeShape(from.shape)
             << " and reorders its other dimensions at once; cellc does "
                "one or the other";
    last = axis;
  }
  return succeeded(ctx.setOutputRows(0, in->value, to));
}

FailureOr<bool> followUnsqueeze(NodeContext &ctx) {
  auto given = intsFromAttrOrInput(ctx, "axes", 1, /*inputSince=*/13);
  if (failed(given))
    return failure();
  if (!*given)
    return ctx.emitError() << "needs 'axes'";
  SmallVector<int64_t> axes = **given;
  std::optional<RankedTensorType> leading = batchLeadingInput(ctx);
  int64_t inputRank = 0;
  if (ctx.hasBatchLayout(0))
    inputRank = ctx.importer().batchLayout(ctx.node().inputs[0])->shape.size();
  else if (leading)
    inputRank = leading->getRank();
  else
    return false;
  if (failed(normalizeAxes(ctx, axes, inputRank + axes.size())))
    return failure();
  llvm::SmallSet<int64_t, 4> distinct;
  for (int64_t axis : axes)
    if (!distinct.insert(axis).second)
      return ctx.emitError() << "lists axis " << axis << " twice";
  // An ordinary value stays ordinary unless a unit dimension goes first.
  if (!ctx.hasBatchLayout(0) && !llvm::is_contained(axes, 0))
    return false;
  FailureOr<Rows> in = ctx.rows(0);
  if (failed(in))
    return failure();
  BatchLayout to;
  ArrayRef<int64_t> remaining = in->layout.shape;
  int64_t fromAxis = 0;
  for (int64_t axis = 0; axis < int64_t(inputRank + axes.size()); ++axis) {
    if (llvm::is_contained(axes, axis)) {
      to.shape.push_back(1);
      continue;
    }
    if (fromAxis++ == in->layout.batchAxis)
      to.batchAxis = axis;
    to.shape.push_back(remaining.front());
    remaining = remaining.drop_front();
  }
  return succeeded(ctx.setOutputRows(0, in->value, to));
}

FailureOr<bool> followSqueeze(NodeContext &ctx) {
  if (!ctx.hasBatchLayout(0))
    return false;
  FailureOr<Rows> in = ctx.rows(0);
  auto given = intsFromAttrOrInput(ctx, "axes", 1, /*inputSince=*/13);
  if (failed(in) || failed(given))
    return failure();
  const BatchLayout &from = in->layout;
  SmallVector<int64_t> axes;
  if (*given) {
    axes = **given;
    if (failed(normalizeAxes(ctx, axes, from.shape.size())))
      return failure();
  }
  BatchLayout to;
  for (auto [axis, dim] : llvm::enumerate(from.shape)) {
    bool squeezed = *given ? llvm::is_contained(axes, int64_t(axis)) : dim == 1;
    if (squeezed && int64_t(axis) == from.batchAxis)
      return ctx.emitError() << "cannot squeeze the batch dimension";
    if (squeezed && dim != 1)
      return ctx.emitError()
             << "axis " << axis << " of " << describeShape(from.shape)
             << " has size " << dim << ", not 1";
    if (squeezed)
      continue;
    if (int64_t(axis) == from.batchAxis)
      to.batchAxis = to.shape.size();
    to.shape.push_back(dim);
  }
  return succeeded(ctx.setOutputRows(0, in->value, to));
}

/// The run [start, end) along `axis` of `in`, as rows; `to` gets its shape.
FailureOr<Value> takeRun(NodeContext &ctx, const Rows &in, int64_t axis,
                         int64_t start, int64_t end) {
  if (!leadsColumns(in.layout, axis))
    return ctx.emitError()
           << "takes a strided part of a value of shape "
           << describeShape(in.layout.shape) << " (axis " << axis
           << ") whose batch dimension is at axis " << in.layout.batchAxis
           << "; cellc takes such parts only along the first dimension of "
              "size above 1";
  int64_t step = columnsPerStep(in.layout, axis);
  return columnRange(ctx, in.value, start * step, end * step);
}

FailureOr<bool> followSlice(NodeContext &ctx) {
  if (!ctx.hasBatchLayout(0))
    return false;
  FailureOr<Rows> in = ctx.rows(0);
  if (failed(in))
    return failure();
  FailureOr<SliceBounds> bounds = sliceBounds(ctx, in->layout.shape);
  if (failed(bounds))
    return failure();
  Rows out = *in;
  for (size_t i = 0; i < bounds->axes.size(); ++i) {
    int64_t axis = bounds->axes[i], start = bounds->starts[i],
            end = bounds->ends[i], step = bounds->steps[i];
    if (start == 0 && end == out.layout.shape[axis] && step == 1)
      continue;
    if (step != 1 && end - start > 1)
      return ctx.emitError() << "step " << step
                             << " over a value whose batch dimension is at "
                                "axis "
                             << out.layout.batchAxis << " is not supported";
    FailureOr<Value> run = takeRun(ctx, out, axis, start, end);
    if (failed(run))
      return failure();
    out.value = *run;
    out.layout.shape[axis] = end - start;
  }
  return succeeded(ctx.setOutputRows(0, out.value, out.layout));
}

FailureOr<bool> followGather(NodeContext &ctx) {
  if (!ctx.hasBatchLayout(0))
    return false;
  FailureOr<Rows> in = ctx.rows(0);
  if (failed(in))
    return failure();
  const BatchLayout &from = in->layout;
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.intAttr("axis", 0), from.shape.size(), "axis");
  if (failed(axis))
    return failure();
  if (*axis == from.batchAxis)
    return ctx.emitError() << "gathering along the batch dimension is not "
                              "supported";
  const onnx_model::Tensor *indices =
      ctx.hasInput(1) ? ctx.importer().constantTensor(ctx.node().inputs[1])
                      : nullptr;
  FailureOr<SmallVector<int64_t>> index =
      indices && indices->dims.empty() ? ctx.constantInts(1, "index")
                                       : FailureOr<SmallVector<int64_t>>();
  if (failed(index))
    return ctx.emitError() << "reads a value whose batch dimension is at axis "
                           << from.batchAxis
                           << "; cellc gathers from it only one constant "
                              "scalar index";
  int64_t at = (*index)[0] < 0 ? (*index)[0] + from.shape[*axis] : (*index)[0];
  if (at < 0 || at >= from.shape[*axis])
    return ctx.emitError() << "index " << (*index)[0] << " is out of range for "
                           << "dimension " << from.shape[*axis];
  FailureOr<Value> run = takeRun(ctx, *in, *axis, at, at + 1);
  if (failed(run))
    return failure();
  BatchLayout to = from;
  to.shape.erase(to.shape.begin() + *axis);
  if (to.batchAxis > *axis)
    --to.batchAxis;
  return succeeded(ctx.setOutputRows(0, *run, to));
}

/// Product of the non-batch dimensions before the batch.
int64_t volumeBeforeBatch(const BatchLayout &layout) {
  int64_t volume = 1;
  for (int64_t dim = 0; dim < layout.batchAxis; ++dim)
    volume *= layout.shape[dim];
  return volume;
}

FailureOr<bool> followReshape(NodeContext &ctx) {
  if (!ctx.hasBatchLayout(0))
    return false;
  FailureOr<Rows> in = ctx.rows(0);
  if (failed(in))
    return failure();
  Type element = in->value.getType().cast<RankedTensorType>().getElementType();
  FailureOr<RankedTensorType> result =
      reshapeResult(ctx, RankedTensorType::get(in->layout.shape, element));
  if (failed(result))
    return failure();
  BatchLayout to{llvm::to_vector(result->getShape()), 0};
  for (auto [axis, dim] : llvm::enumerate(to.shape))
    if (ShapedType::isDynamic(dim))
      to.batchAxis = axis;
  // The columns keep their order when the dimensions before the batch hold
  // as many elements as before, and so do those after it (a -1 that took
  // the batch in would make the row narrower).
  auto volumeAfterBatch = [](const BatchLayout &layout) {
    int64_t volume = 1;
    for (int64_t dim = layout.batchAxis + 1; dim < int64_t(layout.shape.size());
         ++dim)
      volume *= layout.shape[dim];
    return volume;
  };
  if (volumeBeforeBatch(to) != volumeBeforeBatch(in->layout) ||
      volumeAfterBatch(to) != volumeAfterBatch(in->layout))
    return ctx.emitError() << "reshapes " << describeShape(in->layout.shape)
                           << " to " << describeShape(to.shape)
                           << ", which mixes the batch dimension with others";
  return succeeded(ctx.setOutputRows(0, in->value, to));
}

FailureOr<bool> followConcat(NodeContext &ctx) {
  bool any = false;
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    any |= ctx.hasBatchLayout(i);
  if (!any)
    return false;
  SmallVector<Rows> inputs;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    FailureOr<Rows> rows = ctx.rows(i);
    if (failed(rows))
      return failure();
    inputs.push_back(*rows);
  }
  BatchLayout to = inputs.front().layout;
  FailureOr<int64_t> axis =
      ctx.normalizeAxis(ctx.intAttr("axis", 0), to.shape.size(), "axis");
  if (failed(axis))
    return failure();
  if (*axis == to.batchAxis)
    return ctx.emitError() << "cannot concatenate along the batch dimension";
  to.shape[*axis] = 0;
  SmallVector<Value> values;
  for (const Rows &rows : inputs) {
    BatchLayout expected = to;
    expected.shape[*axis] = rows.layout.shape.size() == to.shape.size()
                                ? rows.layout.shape[*axis]
                                : 0;
    if (rows.layout.batchAxis != to.batchAxis ||
        rows.layout.shape != expected.shape)
      return ctx.emitError() << "concatenates values of shapes "
                             << describeShape(inputs.front().layout.shape)
                             << " and " << describeShape(rows.layout.shape)
                             << ", which differ in more than axis " << *axis;
    to.shape[*axis] += rows.layout.shape[*axis];
    values.push_back(rows.value);
  }
  if (!leadsColumns(to, *axis))
    return ctx.emitError() << "concatenates along axis " << *axis
                           << " of values of shape " << describeShape(to.shape)
                           << " whose batch dimension is at axis "
                           << to.batchAxis
                           << "; cellc does so only along the first dimension "
                              "of size above 1";
  FailureOr<Operation *> op = ctx.create<cell::ConcatOp>(
      values,
      ctx.builder().getNamedAttr("axis", ctx.builder().getI64IntegerAttr(1)));
  if (failed(op))
    return failure();
  return succeeded(ctx.setOutputRows(0, (*op)->getResult(0), to));
}
} // namespace

std::string cellc::describeShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [axis, dim] : llvm::enumerate(shape))
    text +=
        (axis ? ", " : "") + (ShapedType::isDynamic(dim) ? std::string("batch")
                                                         : std::to_string(dim));
  return text + "]";
}

FailureOr<Value> cellc::columnRange(NodeContext &ctx, Value rows, int64_t start,
                                    int64_t end) {
  auto type = rows.getType().cast<RankedTensorType>();
  if (start == 0 && end == type.getDimSize(1))
    return rows;
  Builder &b = ctx.builder();
  FailureOr<Operation *> op = ctx.create<cell::SliceOp>(
      rows, {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({1})),
             b.getNamedAttr("starts", b.getDenseI64ArrayAttr({start})),
             b.getNamedAttr("ends", b.getDenseI64ArrayAttr({end})),
             b.getNamedAttr("steps", b.getDenseI64ArrayAttr({1}))});
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

FailureOr<bool> cellc::followBatchLayout(NodeContext &ctx) {
  StringRef type = ctx.node().opType;
  if (type == "Transpose")
    return followTranspose(ctx);
  if (type == "Unsqueeze")
    return followUnsqueeze(ctx);
  if (type == "Squeeze")
    return followSqueeze(ctx);
  if (type == "Slice")
    return followSlice(ctx);
  if (type == "Gather")
    return followGather(ctx);
  if (type == "Concat")
    return followConcat(ctx);
  if (type == "Reshape")
    return followReshape(ctx);
  return false;
}
