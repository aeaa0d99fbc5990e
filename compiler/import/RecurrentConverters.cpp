//===- RecurrentConverters.cpp - ONNX LSTM, GRU and RNN for one step -----===//
//
// nn.LSTM, nn.GRU and nn.RNN export the ONNX ops LSTM, GRU and RNN, which
// run a whole sequence. A cell is one time step (the runtime unfolds it), so
// the importer takes a sequence of length 1 and writes the step out in
// `cell` ops: per direction a GEMM over the input and one over the state,
// the gate split and the activations, the same ops nn.LSTMCell exports, so
// the same passes (GEMM merging, fusion) apply. Directions: forward, reverse
// (for a sequence of one, the same step with its own weights) and
// bidirectional (both, side by side in the outputs). Layout 0 ([seq, batch,
// ...]) and 1 (batch first). Missing biases and initial states are zero.
// Peepholes, clip, input_forget, sequence_lens and activations other than
// Sigmoid, Tanh and Relu are refused by name.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/GraphImporter.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace cellc;
namespace om = cellc::onnx_model;

namespace {
/// Builds the ops of one step at the node; after the first failure every
/// call returns null and ok() is false (the error is already reported).
class StepWriter {
public:
  explicit StepWriter(NodeContext &ctx) : ctx_(ctx) {}
  bool ok() const { return ok_; }

  /// a + b, where a null operand is an absent (zero) term.
  Value add(Value a, Value b) {
    if (!a || !b)
      return a ? a : b;
    return op<cell::AddOp>({a, b});
  }
  Value sub(Value a, Value b) { return op<cell::SubOp>({a, b}); }
  Value mul(Value a, Value b) { return op<cell::MulOp>({a, b}); }

  Value activation(StringRef name, Value x) {
    if (name.equals_insensitive("sigmoid"))
      return op<cell::SigmoidOp>({x});
    if (name.equals_insensitive("tanh"))
      return op<cell::TanhOp>({x});
    return op<cell::ReluOp>({x});
  }

  /// x * weight^T (+ bias): weight is [out, in], as ONNX stores it.
  Value gemm(Value x, Value weight, Value bias) {
    Builder &b = ctx_.builder();
    SmallVector<Value> operands = {x, weight};
    if (bias)
      operands.push_back(bias);
    return op<cell::GemmOp>(operands,
                            {b.getNamedAttr("alpha", b.getF32FloatAttr(1.0f)),
                             b.getNamedAttr("beta", b.getF32FloatAttr(1.0f)),
                             b.getNamedAttr("trans_a", b.getBoolAttr(false)),
                             b.getNamedAttr("trans_b", b.getBoolAttr(true))});
  }

  /// `rows` split into `parts` equal runs of columns.
  SmallVector<Value> split(Value rows, int64_t parts) {
    if (!ok_)
      return SmallVector<Value>(parts);
    int64_t width = rows.getType().cast<RankedTensorType>().getDimSize(1);
    Builder &b = ctx_.builder();
    FailureOr<Operation *> created = ctx_.create<cell::SplitOp>(
        rows,
        {b.getNamedAttr("axis", b.getI64IntegerAttr(1)),
         b.getNamedAttr("sizes", b.getDenseI64ArrayAttr(SmallVector<int64_t>(
                                     parts, width / parts)))});
    if (failed(created)) {
      ok_ = false;
      return SmallVector<Value>(parts);
    }
    return SmallVector<Value>((*created)->getResults());
  }

  Value columns(Value rows, int64_t start, int64_t end) {
    if (!ok_ || !rows)
      return rows;
    FailureOr<Value> range = columnRange(ctx_, rows, start, end);
    ok_ &= succeeded(range);
    return succeeded(range) ? *range : Value();
  }

  Value concatColumns(ArrayRef<Value> values) {
    if (values.size() == 1)
      return values.front();
    return op<cell::ConcatOp>(
        values, {ctx_.builder().getNamedAttr(
                    "axis", ctx_.builder().getI64IntegerAttr(1))});
  }

  /// Rows [first, first + count) of direction `direction` of a [D, N, ...]
  /// weight, as a constant [count, ...] named after the weight.
  Value weight(const om::Tensor &tensor, int64_t direction, int64_t first,
               int64_t count) {
    if (!ok_)
      return {};
    om::Tensor part;
    part.name =
        llvm::formatv("{0}.d{1}.{2}_{3}", tensor.name, direction, first, count)
            .str();
    part.dataType = tensor.dataType;
    part.dims.push_back(count);
    int64_t inner = 1;
    for (int64_t dim : llvm::ArrayRef(tensor.dims).drop_front(2)) {
      part.dims.push_back(dim);
      inner *= dim;
    }
    size_t elementSize = tensor.bytes.size() / tensor.numElements();
    size_t begin = ((direction * tensor.dims[1]) + first) * inner * elementSize;
    part.bytes.assign(tensor.bytes.begin() + begin,
                      tensor.bytes.begin() + begin +
                          count * inner * elementSize);
    std::string name = part.name;
    GraphImporter &importer = ctx_.importer();
    if (!importer.constantTensor(name))
      importer.defineConstantTensor(name, std::move(part));
    Value value = importer.lookup(name, ctx_.loc());
    ok_ &= bool(value);
    return value;
  }

private:
  template <typename OpT>
  Value op(ArrayRef<Value> operands, ArrayRef<NamedAttribute> attrs = {}) {
    if (!ok_)
      return {};
    FailureOr<Operation *> created = ctx_.create<OpT>(operands, attrs);
    if (failed(created)) {
      ok_ = false;
      return {};
    }
    return (*created)->getResult(0);
  }

  NodeContext &ctx_;
  bool ok_ = true;
};

/// What LSTM, GRU and RNN share: sizes, the step's input and state as rows,
/// the weights and the activation of each slot and direction.
struct Recurrent {
  int64_t gates = 1;
  int64_t hidden = 0;
  int64_t directions = 1;
  bool batchFirst = false;
  Value x; // [batch, input]
  Value h; // [batch, directions*hidden]
  const om::Tensor *w = nullptr, *r = nullptr, *b = nullptr;
  SmallVector<std::string> activations; // slots per direction, in order

  StringRef activation(int64_t direction, size_t slot) const {
    size_t slots = activations.size() / directions;
    return activations[direction * slots + slot];
  }
};

/// The ONNX shape of the state inputs and outputs (Y_h, Y_c).
BatchLayout stateLayout(const Recurrent &rec) {
  if (rec.batchFirst)
    return {{ShapedType::kDynamic, rec.directions, rec.hidden}, 0};
  return {{rec.directions, ShapedType::kDynamic, rec.hidden}, 1};
}

/// The ONNX shape of Y for one step.
BatchLayout outputLayout(const Recurrent &rec) {
  if (rec.batchFirst)
    return {{ShapedType::kDynamic, 1, rec.directions, rec.hidden}, 0};
  return {{1, rec.directions, ShapedType::kDynamic, rec.hidden}, 2};
}

/// A weight input that must be a constant of `rank` dimensions.
FailureOr<const om::Tensor *> constantWeight(NodeContext &ctx, size_t index,
                                             StringRef what, size_t rank) {
  if (!ctx.hasInput(index))
    return ctx.emitError() << what << " (input #" << index << ") is missing";
  const om::Tensor *tensor =
      ctx.importer().constantTensor(ctx.node().inputs[index]);
  if (!tensor)
    return ctx.emitError() << what << " '" << ctx.node().inputs[index]
                           << "' must be a constant (an initializer)";
  if (tensor->dims.size() != rank || tensor->numElements() == 0)
    return ctx.emitError() << what << " '" << tensor->name << "' must have "
                           << rank << " dimensions";
  return tensor;
}

/// The `direction` attribute ("forward" when not given).
StringRef directionName(NodeContext &ctx) {
  const om::Attribute *direction = ctx.attribute("direction");
  return direction ? StringRef(direction->s) : "forward";
}

/// Refuses the attributes and inputs cellc does not import and reads the
/// direction and the layout into `rec`.
LogicalResult readOptions(NodeContext &ctx, Recurrent &rec) {
  for (StringRef refused : {"clip", "input_forget"})
    if (ctx.attribute(refused) &&
        (refused != "input_forget" || ctx.intAttr("input_forget", 0) != 0))
      return ctx.emitError()
             << "attribute '" << refused << "' is not supported";
  if (ctx.hasInput(4))
    return ctx.emitError()
           << "sequence_lens (input #4) is not supported: cellc imports one "
              "time step, and a request that ends leaves the batch instead";
  StringRef direction = directionName(ctx);
  if (direction == "bidirectional")
    rec.directions = 2;
  else if (direction != "forward" && direction != "reverse")
    return ctx.emitError() << "direction '" << direction
                           << "' is not forward, reverse or bidirectional";
  rec.batchFirst = ctx.intAttr("layout", 0) == 1;
  return success();
}

/// Reads the weights W, R and B (if given) and the hidden size into `rec`
/// and checks their shapes.
LogicalResult readWeights(NodeContext &ctx, Recurrent &rec) {
  auto w = constantWeight(ctx, 1, "W", 3);
  auto r = succeeded(w) ? constantWeight(ctx, 2, "R", 3)
                        : FailureOr<const om::Tensor *>();
  if (failed(w) || failed(r))
    return failure();
  rec.w = *w;
  rec.r = *r;
  rec.hidden = ctx.intAttr("hidden_size", rec.r->dims[2]);
  int64_t gateRows = rec.gates * rec.hidden;
  if (rec.w->dims[0] != rec.directions || rec.w->dims[1] != gateRows ||
      rec.r->dims != std::vector<int64_t>{rec.directions, gateRows, rec.hidden})
    return ctx.emitError() << "W and R must have shapes [" << rec.directions
                           << ", " << gateRows << ", input] and ["
                           << rec.directions << ", " << gateRows << ", "
                           << rec.hidden << "] for direction '"
                           << directionName(ctx) << "' and hidden_size "
                           << rec.hidden;
  if (ctx.hasInput(3)) {
    auto b = constantWeight(ctx, 3, "B", 2);
    if (failed(b))
      return failure();
    rec.b = *b;
    if (rec.b->dims != std::vector<int64_t>{rec.directions, 2 * gateRows})
      return ctx.emitError() << "B must have shape [" << rec.directions << ", "
                             << 2 * gateRows << "]";
  }
  return success();
}

/// Reads the rows of X and of initial_h (if given) into `rec` and checks
/// that they are one time step's.
LogicalResult readInputs(NodeContext &ctx, Recurrent &rec) {
  FailureOr<Rows> x = ctx.rows(0);
  if (failed(x))
    return failure();
  BatchLayout expected =
      rec.batchFirst
          ? BatchLayout{{ShapedType::kDynamic, 1, rec.w->dims[2]}, 0}
          : BatchLayout{{1, ShapedType::kDynamic, rec.w->dims[2]}, 1};
  if (x->layout.shape != expected.shape ||
      x->layout.batchAxis != expected.batchAxis)
    return ctx.emitError() << "X has shape " << describeShape(x->layout.shape)
                           << "; cellc imports " << ctx.node().opType
                           << " for one time step of the cell, so X must be "
                           << describeShape(expected.shape) << " (layout "
                           << (rec.batchFirst ? 1 : 0) << ")";
  rec.x = x->value;
  if (ctx.hasInput(5)) {
    FailureOr<Rows> h = ctx.rows(5);
    if (failed(h))
      return failure();
    BatchLayout state = stateLayout(rec);
    if (h->layout.shape != state.shape ||
        h->layout.batchAxis != state.batchAxis)
      return ctx.emitError()
             << "initial_h has shape " << describeShape(h->layout.shape)
             << ", expected " << describeShape(state.shape);
    rec.h = h->value;
  }
  return success();
}

/// Reads the activations of every direction into `rec`: `slots` (the
/// defaults of one direction) unless the node gives them.
LogicalResult readActivations(NodeContext &ctx, Recurrent &rec,
                              ArrayRef<StringRef> slots) {
  for (int64_t d = 0; d < rec.directions; ++d)
    rec.activations.append(slots.begin(), slots.end());
  const om::Attribute *given = ctx.attribute("activations");
  if (!given)
    return success();
  size_t count = given->strings.size();
  if (count != slots.size() && count != slots.size() * rec.directions)
    return ctx.emitError() << "has " << count << " activations; expected "
                           << slots.size() * rec.directions;
  for (size_t i = 0; i < rec.activations.size(); ++i) {
    StringRef name = given->strings[i % count];
    if (!name.equals_insensitive("sigmoid") &&
        !name.equals_insensitive("tanh") && !name.equals_insensitive("relu"))
      return ctx.emitError() << "activation '" << name
                             << "' is not supported (Sigmoid, Tanh and Relu "
                                "are)";
    rec.activations[i] = name.str();
  }
  return success();
}

/// Reads what the three ops share and checks it; `slots` are the default
/// activations of one direction.
FailureOr<Recurrent> readRecurrent(NodeContext &ctx, int64_t gates,
                                   ArrayRef<StringRef> slots) {
  Recurrent rec;
  rec.gates = gates;
  if (failed(readOptions(ctx, rec)) || failed(readWeights(ctx, rec)) ||
      failed(readInputs(ctx, rec)) || failed(readActivations(ctx, rec, slots)))
    return failure();
  return rec;
}

/// Binds Y and Y_h (and Y_c when given) from each direction's new states.
LogicalResult bindOutputs(NodeContext &ctx, StepWriter &step,
                          const Recurrent &rec, ArrayRef<Value> hidden,
                          ArrayRef<Value> cells = {}) {
  Value h = step.concatColumns(hidden);
  Value c = cells.empty() ? Value() : step.concatColumns(cells);
  if (!step.ok())
    return failure();
  if (failed(ctx.setOutputRows(0, h, outputLayout(rec))) ||
      failed(ctx.setOutputRows(1, h, stateLayout(rec))))
    return failure();
  if (c)
    return ctx.setOutputRows(2, c, stateLayout(rec));
  return success();
}
} // namespace

LogicalResult cellc::convertLstm(NodeContext &ctx) {
  FailureOr<Recurrent> rec = readRecurrent(ctx, 4, {"Sigmoid", "Tanh", "Tanh"});
  if (failed(rec))
    return failure();
  if (ctx.hasInput(7))
    return ctx.emitError() << "peephole weights P (input #7) are not supported";
  Value cells;
  if (ctx.hasInput(6)) {
    FailureOr<Rows> c = ctx.rows(6);
    if (failed(c))
      return failure();
    BatchLayout state = stateLayout(*rec);
    if (c->layout.shape != state.shape ||
        c->layout.batchAxis != state.batchAxis)
      return ctx.emitError()
             << "initial_c has shape " << describeShape(c->layout.shape)
             << ", expected " << describeShape(state.shape);
    cells = c->value;
  }
  StepWriter step(ctx);
  int64_t hidden = rec->hidden, rows = 4 * hidden;
  SmallVector<Value> newHidden, newCells;
  for (int64_t d = 0; d < rec->directions; ++d) {
    Value h = step.columns(rec->h, d * hidden, (d + 1) * hidden);
    Value c = step.columns(cells, d * hidden, (d + 1) * hidden);
    Value inputBias = rec->b ? step.weight(*rec->b, d, 0, rows) : Value();
    Value stateBias = rec->b ? step.weight(*rec->b, d, rows, rows) : Value();
    Value gates =
        step.gemm(rec->x, step.weight(*rec->w, d, 0, rows), inputBias);
    gates = step.add(
        gates, h ? step.gemm(h, step.weight(*rec->r, d, 0, rows), stateBias)
                 : stateBias);
    // ONNX orders the gates input, output, forget, cell.
    SmallVector<Value> parts = step.split(gates, 4);
    if (!step.ok())
      return failure();
    Value input = step.activation(rec->activation(d, 0), parts[0]);
    Value output = step.activation(rec->activation(d, 0), parts[1]);
    Value forget = step.activation(rec->activation(d, 0), parts[2]);
    Value candidate = step.activation(rec->activation(d, 1), parts[3]);
    Value cell =
        step.add(c ? step.mul(forget, c) : Value(), step.mul(input, candidate));
    newCells.push_back(cell);
    newHidden.push_back(
        step.mul(output, step.activation(rec->activation(d, 2), cell)));
  }
  return bindOutputs(ctx, step, *rec, newHidden, newCells);
}

LogicalResult cellc::convertGru(NodeContext &ctx) {
  FailureOr<Recurrent> rec = readRecurrent(ctx, 3, {"Sigmoid", "Tanh"});
  if (failed(rec))
    return failure();
  bool linearBeforeReset = ctx.intAttr("linear_before_reset", 0) != 0;
  StepWriter step(ctx);
  int64_t hidden = rec->hidden, rows = 3 * hidden;
  SmallVector<Value> newHidden;
  auto bias = [&](int64_t d, int64_t first, int64_t count) {
    return rec->b ? step.weight(*rec->b, d, first, count) : Value();
  };
  for (int64_t d = 0; d < rec->directions; ++d) {
    Value h = step.columns(rec->h, d * hidden, (d + 1) * hidden);
    // ONNX orders the gates update (z), reset (r), hidden (n).
    SmallVector<Value> x = step.split(
        step.gemm(rec->x, step.weight(*rec->w, d, 0, rows), bias(d, 0, rows)),
        3);
    SmallVector<Value> recurrent(3);
    if (h && linearBeforeReset) {
      recurrent = step.split(
          step.gemm(h, step.weight(*rec->r, d, 0, rows), bias(d, rows, rows)),
          3);
    } else if (h) {
      SmallVector<Value> zr =
          step.split(step.gemm(h, step.weight(*rec->r, d, 0, 2 * hidden),
                               bias(d, rows, 2 * hidden)),
                     2);
      recurrent = {zr[0], zr[1], Value()};
    } else {
      for (int64_t gate = 0; gate < 3; ++gate)
        recurrent[gate] = bias(d, rows + gate * hidden, hidden);
    }
    if (!step.ok())
      return failure();
    StringRef gate = rec->activation(d, 0), output = rec->activation(d, 1);
    Value update = step.activation(gate, step.add(x[0], recurrent[0]));
    Value reset = step.activation(gate, step.add(x[1], recurrent[1]));
    // linear_before_reset: n = x_n + r (h R_n + Rb_n), else x_n +
    // (r h) R_n + Rb_n; a missing state leaves the bias of either.
    Value candidate;
    if (linearBeforeReset)
      candidate = step.add(x[2], recurrent[2] ? step.mul(reset, recurrent[2])
                                              : Value());
    else if (!h)
      candidate = step.add(x[2], recurrent[2]);
    else
      candidate =
          step.add(x[2], step.gemm(step.mul(reset, h),
                                   step.weight(*rec->r, d, 2 * hidden, hidden),
                                   bias(d, rows + 2 * hidden, hidden)));
    candidate = step.activation(output, candidate);
    // h' = (1 - z) n + z h, written as PyTorch computes it: n + z (h - n).
    newHidden.push_back(
        h ? step.add(candidate, step.mul(update, step.sub(h, candidate)))
          : step.sub(candidate, step.mul(update, candidate)));
  }
  return bindOutputs(ctx, step, *rec, newHidden);
}

LogicalResult cellc::convertRnn(NodeContext &ctx) {
  FailureOr<Recurrent> rec = readRecurrent(ctx, 1, {"Tanh"});
  if (failed(rec))
    return failure();
  StepWriter step(ctx);
  int64_t hidden = rec->hidden;
  SmallVector<Value> newHidden;
  for (int64_t d = 0; d < rec->directions; ++d) {
    Value h = step.columns(rec->h, d * hidden, (d + 1) * hidden);
    Value stateBias =
        rec->b ? step.weight(*rec->b, d, hidden, hidden) : Value();
    Value sum =
        step.gemm(rec->x, step.weight(*rec->w, d, 0, hidden),
                  rec->b ? step.weight(*rec->b, d, 0, hidden) : Value());
    sum = step.add(
        sum, h ? step.gemm(h, step.weight(*rec->r, d, 0, hidden), stateBias)
               : stateBias);
    newHidden.push_back(step.activation(rec->activation(d, 0), sum));
  }
  return bindOutputs(ctx, step, *rec, newHidden);
}
