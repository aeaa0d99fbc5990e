//===- ShapeFolding.cpp - Shape arithmetic evaluated at import time ------===//
//
// PyTorch exports `torch.chunk`, `x.view(x.size(0), -1)` and the like as
// integer arithmetic on the result of Shape: Shape -> Gather -> Add/Div/Mul
// -> Slice. Every dimension but the batch is static in a cell, so the
// importer evaluates that arithmetic itself and hands the consumers plain
// constants. An element that is the batch size (or depends on it) stays
// symbolic: Reshape accepts the batch size itself as a dimension; anything
// else that needs such a value is an error naming the node.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/GraphImporter.h"

#include "llvm/Support/CheckedArithmetic.h"

#include <cstring>
#include <limits>
#include <optional>

using namespace mlir;
using namespace cellc;
namespace om = cellc::onnx_model;

using Kind = HostInts::Kind;

namespace {
/// The host inputs of a node being folded, and helpers to build results.
struct Folder {
  NodeContext &ctx;
  SmallVector<const HostInts *> inputs;

  int64_t volume(ArrayRef<int64_t> dims) const {
    int64_t count = 1;
    for (int64_t dim : dims)
      count *= dim;
    return count;
  }

  std::string batchNode() const {
    for (const HostInts *input : inputs)
      if (input && !input->batchNode.empty())
        return input->batchNode;
    return "";
  }

  /// Element `i` of `input` broadcast to `dims` (numpy rules).
  static int64_t broadcastIndex(const HostInts &input, ArrayRef<int64_t> dims,
                                int64_t flat) {
    int64_t index = 0, stride = 1;
    size_t offset = dims.size() - input.dims.size();
    for (size_t d = dims.size(); d-- > 0;) {
      int64_t coordinate = flat % dims[d];
      flat /= dims[d];
      if (d < offset)
        continue;
      int64_t size = input.dims[d - offset];
      index += (size == 1 ? 0 : coordinate) * stride;
      stride *= size;
    }
    return index;
  }

  FailureOr<HostInts> elementwise(StringRef op) {
    const HostInts &a = *inputs[0], &b = *inputs[1];
    SmallVector<int64_t> dims;
    size_t rank = std::max(a.dims.size(), b.dims.size());
    for (size_t d = 0; d < rank; ++d) {
      auto dimOf = [&](const HostInts &x) {
        size_t offset = rank - x.dims.size();
        return d < offset ? int64_t(1) : x.dims[d - offset];
      };
      int64_t da = dimOf(a), db = dimOf(b);
      if (da != db && da != 1 && db != 1)
        return ctx.emitError() << "shapes do not broadcast";
      dims.push_back(da == 1 ? db : da); // a 0 meets only 0 or 1
    }
    HostInts result{a.dataType, dims, {}, {}, batchNode()};
    for (int64_t i = 0, e = volume(dims); i < e; ++i) {
      int64_t ia = broadcastIndex(a, dims, i), ib = broadcastIndex(b, dims, i);
      if (a.kinds[ia] != Kind::Known || b.kinds[ib] != Kind::Known) {
        result.values.push_back(0);
        result.kinds.push_back(Kind::Unknown);
        continue;
      }
      int64_t x = a.values[ia], y = b.values[ib];
      std::optional<int64_t> value;
      if (op == "Add")
        value = llvm::checkedAdd(x, y);
      else if (op == "Sub")
        value = llvm::checkedSub(x, y);
      else if (op == "Mul")
        value = llvm::checkedMul(x, y);
      else if (y == 0)
        return ctx.emitError() << "divides by zero";
      else if (!(x == std::numeric_limits<int64_t>::min() && y == -1))
        value = x / y; // integer Div truncates
      if (!value)
        return ctx.emitError() << "overflows int64 (" << x << " "
                               << (op == "Add"   ? "+"
                                   : op == "Sub" ? "-"
                                   : op == "Mul" ? "*"
                                                 : "/")
                               << " " << y << ")";
      result.values.push_back(*value);
      result.kinds.push_back(Kind::Known);
    }
    return result;
  }

  FailureOr<HostInts> shape() {
    FailureOr<RankedTensorType> type = ctx.inputType(0);
    if (failed(type))
      return failure();
    int64_t rank = type->getRank();
    int64_t start = ctx.intAttr("start", 0), end = ctx.intAttr("end", rank);
    start = std::clamp(start < 0 ? start + rank : start, int64_t(0), rank);
    end = std::clamp(end < 0 ? end + rank : end, int64_t(0), rank);
    HostInts result{static_cast<int32_t>(om::DataType::Int64), {}, {}, {}, ""};
    for (int64_t d = start; d < end; ++d) {
      int64_t dim = type->getDimSize(d);
      bool batch = ShapedType::isDynamic(dim);
      result.values.push_back(batch ? 0 : dim);
      result.kinds.push_back(batch ? Kind::Batch : Kind::Known);
      if (batch)
        result.batchNode = ctx.node().name;
    }
    result.dims = {static_cast<int64_t>(result.values.size())};
    return result;
  }

  FailureOr<HostInts> gather() {
    const HostInts &data = *inputs[0], &indices = *inputs[1];
    HostInts result{data.dataType, indices.dims, {}, {}, data.batchNode};
    int64_t size = data.dims[0];
    for (auto [kind, index] : llvm::zip(indices.kinds, indices.values)) {
      if (kind != Kind::Known)
        return ctx.emitError() << "gathers at an index that depends on the "
                                  "batch size";
      int64_t at = index < 0 ? index + size : index;
      if (at < 0 || at >= size)
        return ctx.emitError() << "index " << index << " is out of range for "
                               << size << " elements";
      result.values.push_back(data.values[at]);
      result.kinds.push_back(data.kinds[at]);
    }
    return result;
  }

  FailureOr<HostInts> concat() {
    HostInts result{inputs[0]->dataType, {0}, {}, {}, batchNode()};
    for (const HostInts *input : inputs) {
      result.values.append(input->values);
      result.kinds.append(input->kinds);
      result.dims[0] += input->dims[0];
    }
    return result;
  }

  /// Unsqueeze, Squeeze, Identity and Cast keep the elements.
  FailureOr<HostInts> reshaped() {
    HostInts result = *inputs[0];
    StringRef op = ctx.node().opType;
    if (op == "Cast") {
      auto to = static_cast<om::DataType>(ctx.intAttr("to", 0));
      if (to != om::DataType::Int64 && to != om::DataType::Int32)
        return ctx.emitError() << "folds Casts of shape values to int64 or "
                                  "int32 only";
      result.dataType = static_cast<int32_t>(to);
      return result;
    }
    if (op == "Identity")
      return result;
    SmallVector<int64_t> axes;
    if (auto attr = ctx.intsAttr("axes"))
      axes = *attr;
    else if (inputs.size() > 1 && inputs[1] && inputs[1]->fullyKnown())
      axes = inputs[1]->values;
    if (op == "Unsqueeze") {
      int64_t rank = result.dims.size() + axes.size();
      for (int64_t &axis : axes)
        axis = axis < 0 ? axis + rank : axis;
      llvm::sort(axes);
      for (int64_t axis : axes) {
        if (axis < 0 || axis > static_cast<int64_t>(result.dims.size()))
          return ctx.emitError() << "axis " << axis << " is out of range";
        result.dims.insert(result.dims.begin() + axis, 1);
      }
      return result;
    }
    SmallVector<int64_t> dims;
    for (auto [d, size] : llvm::enumerate(result.dims)) {
      bool listed = llvm::any_of(axes, [&, d = d](int64_t axis) {
        return (axis < 0 ? axis + int64_t(result.dims.size()) : axis) ==
               int64_t(d);
      });
      if ((axes.empty() || listed) && size == 1)
        continue;
      dims.push_back(size);
    }
    result.dims = dims;
    return result;
  }

  FailureOr<HostInts> slice() {
    const HostInts &data = *inputs[0];
    SmallVector<int64_t> starts, ends, steps{1};
    if (ctx.opset() < 10) {
      starts = ctx.intsAttr("starts").value_or(SmallVector<int64_t>{});
      ends = ctx.intsAttr("ends").value_or(SmallVector<int64_t>{});
    } else {
      for (size_t i = 1; i < inputs.size(); ++i)
        if (inputs[i] && !inputs[i]->fullyKnown())
          return ctx.emitError() << "slices at bounds that depend on the "
                                    "batch size";
      if (inputs.size() < 3 || !inputs[1] || !inputs[2])
        return ctx.emitError() << "needs starts and ends";
      starts = inputs[1]->values;
      ends = inputs[2]->values;
      if (inputs.size() > 4 && inputs[4])
        steps = inputs[4]->values;
    }
    if (starts.size() != 1 || ends.size() != 1 || steps.size() != 1 ||
        steps[0] == 0)
      return ctx.emitError() << "folds a Slice of one axis with a non-zero "
                                "step only";
    int64_t size = data.dims[0], step = steps[0];
    if (size == 0)
      return HostInts{data.dataType, {0}, {}, {}, data.batchNode};
    // ONNX clamps to [0, size] going forward; going backward, starts to
    // [0, size - 1] and ends to [-1, size - 1].
    auto clampIndex = [&](int64_t index, bool forEnd) {
      if (index < 0)
        index = index < -size ? -size - 1 : index + size;
      if (step > 0)
        return std::clamp(index, int64_t(0), size);
      return std::clamp(index, forEnd ? int64_t(-1) : int64_t(0), size - 1);
    };
    int64_t begin = clampIndex(starts[0], false),
            end = clampIndex(ends[0], true);
    HostInts result{data.dataType, {0}, {}, {}, data.batchNode};
    for (int64_t i = begin; step > 0 ? i < end : i > end; i += step) {
      result.values.push_back(data.values[i]);
      result.kinds.push_back(data.kinds[i]);
      ++result.dims[0];
    }
    return result;
  }
};
} // namespace

/// The op types whose integer results the importer computes itself.
static bool isShapeArithmetic(StringRef op) {
  static const StringRef kOps[] = {"Shape",   "Gather", "Add",    "Sub",
                                   "Mul",     "Div",    "Concat", "Unsqueeze",
                                   "Squeeze", "Slice",  "Cast",   "Identity"};
  return llvm::is_contained(kOps, op);
}

/// Stores a folded result: host integers always, and a constant tensor (the
/// importer materializes it on first use) when every element is known.
static void defineResult(GraphImporter &importer, const std::string &name,
                         HostInts value) {
  if (value.fullyKnown()) {
    om::Tensor tensor;
    tensor.name = name;
    tensor.dataType = value.dataType;
    tensor.dims.assign(value.dims.begin(), value.dims.end());
    bool wide = value.dataType == static_cast<int32_t>(om::DataType::Int64);
    for (int64_t element : value.values) {
      char bytes[8];
      if (wide) {
        std::memcpy(bytes, &element, 8);
      } else {
        auto narrow = static_cast<int32_t>(element);
        std::memcpy(bytes, &narrow, 4);
      }
      tensor.bytes.insert(tensor.bytes.end(), bytes, bytes + (wide ? 8 : 4));
    }
    importer.defineConstantTensor(name, std::move(tensor));
  }
  importer.defineHostInts(name, std::move(value));
}

/// A Cast of shape values to a floating-point type (a scale such as
/// 1/sqrt(width)): a constant when every element is known.
static FailureOr<bool> castToFloat(NodeContext &ctx, const HostInts &value,
                                   om::DataType to) {
  if (!value.fullyKnown())
    return ctx.emitError()
           << "casts a shape value that depends on the batch size (read by "
              "node '"
           << value.batchNode << "') to "
           << om::dataTypeName(static_cast<int32_t>(to))
           << "; cellc folds shape computations only where the batch size "
              "does not enter them";
  om::Tensor tensor;
  tensor.name = ctx.node().outputs[0];
  tensor.dataType = static_cast<int32_t>(to);
  tensor.dims.assign(value.dims.begin(), value.dims.end());
  for (int64_t element : value.values) {
    char bytes[8];
    size_t size = 0;
    if (to == om::DataType::Float) {
      auto narrow = static_cast<float>(element);
      std::memcpy(bytes, &narrow, size = 4);
    } else if (to == om::DataType::Double) {
      auto wide = static_cast<double>(element);
      std::memcpy(bytes, &wide, size = 8);
    } else {
      return ctx.emitError() << "folds Casts of shape values to int64, int32, "
                                "float or double only";
    }
    tensor.bytes.insert(tensor.bytes.end(), bytes, bytes + size);
  }
  ctx.importer().defineConstantTensor(ctx.node().outputs[0], std::move(tensor));
  return true;
}

FailureOr<bool> cellc::foldOnHost(NodeContext &ctx) {
  const om::Node &node = ctx.node();
  StringRef op = node.opType;
  if (!isShapeArithmetic(op) || node.outputs.size() != 1)
    return false;
  Folder folder{ctx, {}};
  if (op != "Shape") {
    // Every present input must be host integers; the data input of a
    // Slice, Gather or Unsqueeze must be shape arithmetic, not a weight.
    for (size_t i = 0; i < ctx.numInputs(); ++i) {
      const HostInts *input = ctx.hasInput(i) ? ctx.hostInts(i) : nullptr;
      if (ctx.hasInput(i) && !input)
        return false;
      folder.inputs.push_back(input);
    }
    if (folder.inputs.empty() || !folder.inputs[0])
      return false;
    // Gather needs its indices, arithmetic both operands; a missing one is
    // the converter's error to report.
    if ((op == "Gather" || op == "Add" || op == "Sub" || op == "Mul" ||
         op == "Div") &&
        (folder.inputs.size() < 2 || !folder.inputs[1]))
      return false;
    // Gathers, Concats and Slices of anything but 1-D integer vectors are
    // tensor code (say a table lookup), not shape arithmetic.
    bool vector = folder.inputs[0]->dims.size() == 1;
    if ((op == "Gather" && (!vector || ctx.intAttr("axis", 0) != 0)) ||
        (op == "Slice" && !vector) ||
        (op == "Concat" &&
         llvm::any_of(folder.inputs, [](const HostInts *input) {
           // An absent input (`Concat(s, )`) is the converter's to report.
           return !input || input->dims.size() != 1;
         })))
      return false;
  }
  if (op == "Cast") {
    auto to = static_cast<om::DataType>(ctx.intAttr("to", 0));
    if (to != om::DataType::Int64 && to != om::DataType::Int32)
      return castToFloat(ctx, *folder.inputs[0], to);
  }
  FailureOr<HostInts> result = failure();
  if (op == "Shape")
    result = folder.shape();
  else if (op == "Gather")
    result = folder.gather();
  else if (op == "Concat")
    result = folder.concat();
  else if (op == "Slice")
    result = folder.slice();
  else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div")
    result = folder.inputs.size() == 2 && folder.inputs[1]
                 ? folder.elementwise(op)
                 : FailureOr<HostInts>(ctx.emitError() << "needs two inputs");
  else
    result = folder.reshaped();
  if (failed(result))
    return failure();
  // Keep only small integer tensors of shape values on the host.
  if (result->values.size() > 1024)
    return false;
  GraphImporter &importer = ctx.importer();
  defineResult(importer, node.outputs[0], std::move(*result));
  return true;
}
