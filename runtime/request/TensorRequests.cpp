//===- TensorRequests.cpp - Requests from named tensors -------------------===//
//
// The model's signature as named tensors and the conversion of a request's
// tensors into a Request (Tensors.h). Structural checks happen here (names,
// types, shapes, data sizes, tree arrays); the value checks (vocabulary,
// lengths, tree shape) are RequestParser::check's, shared with JSON lines.
//
//===----------------------------------------------------------------------===//
#include "cellrun/RequestParser.h"

#include "request/ModelStructure.h"

#include "artifact/ElementIO.h"

#include <cstring>
#include <map>

using namespace cellrun;

namespace {

Status bad(const std::string &where, const std::string &what) {
  return Status(StatusCode::InvalidArgument, where + ": " + what);
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

std::vector<int64_t> rowShape(const cellpack::TensorSpec &spec) {
  std::vector<int64_t> shape;
  if (spec.row_shape())
    shape.assign(spec.row_shape()->begin(), spec.row_shape()->end());
  return shape;
}

int64_t product(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  return count;
}

TensorType protocolType(cellpack::DType type) {
  switch (type) {
  case cellpack::DType::F64:
    return TensorType::Fp64;
  case cellpack::DType::F32:
  case cellpack::DType::F16:
  case cellpack::DType::BF16:
    return TensorType::Fp32;
  case cellpack::DType::Bool:
    return TensorType::Bool;
  default:
    return TensorType::Int64;
  }
}

/// A description of a per-step (or per-leaf) input of one cell: [-1] for
/// one value a row, [-1, ...row] otherwise.
TensorDescription stepInput(const cellpack::TensorSpec &spec) {
  TensorDescription description;
  description.name = spec.name()->str();
  description.type = protocolType(spec.dtype());
  if (description.type == TensorType::Int64)
    description.alsoAccepted = {TensorType::Int32};
  std::vector<int64_t> row = rowShape(spec);
  description.shape = {-1};
  if (product(row) != 1)
    description.shape.insert(description.shape.end(), row.begin(), row.end());
  return description;
}

TensorDescription outputOf(const cellpack::TensorSpec &spec, bool perStep,
                           const std::string &name) {
  TensorDescription description;
  description.name = name;
  description.type =
      cpu::isFloatType(spec.dtype()) ? TensorType::Fp32 : TensorType::Int64;
  if (perStep)
    description.shape.push_back(-1);
  std::vector<int64_t> row = rowShape(spec);
  description.shape.insert(description.shape.end(), row.begin(), row.end());
  return description;
}

/// Checks `tensor` against `description`: type, rank and fixed extents
/// (one value a row also accepted as [L, 1, ...]), and its data size.
Status checkTensor(const NamedTensor &tensor,
                   const TensorDescription &description) {
  std::string where = "input '" + tensor.name + "'";
  bool typeOk = tensor.type == description.type;
  for (TensorType other : description.alsoAccepted)
    typeOk |= tensor.type == other;
  if (!typeOk) {
    std::string takes = tensorTypeName(description.type);
    for (TensorType other : description.alsoAccepted)
      takes += std::string(" or ") + tensorTypeName(other);
    return bad(where, "datatype " + std::string(tensorTypeName(tensor.type)) +
                          " is not accepted (it takes " + takes + ")");
  }
  for (int64_t extent : tensor.shape)
    if (extent < 0)
      return bad(where, "shape " + shapeText(tensor.shape) +
                            " has a negative dimension");
  const std::vector<int64_t> &expected = description.shape;
  // The model's rank exactly: [3, 1] is not a [-1].
  bool shapeOk = tensor.shape.size() == expected.size();
  for (size_t d = 0; shapeOk && d < expected.size(); ++d)
    shapeOk = expected[d] < 0 || expected[d] == tensor.shape[d];
  if (!shapeOk) {
    std::vector<int64_t> wanted = expected;
    return bad(where, "shape " + shapeText(tensor.shape) +
                          " does not fit the model's " + shapeText(wanted) +
                          " (-1: any length)");
  }
  size_t bytes =
      static_cast<size_t>(tensor.elementCount()) * tensorTypeSize(tensor.type);
  if (tensor.data.size() != bytes)
    return bad(where, "shape " + shapeText(tensor.shape) + " of " +
                          tensorTypeName(tensor.type) + " needs " +
                          std::to_string(bytes) + " bytes of data, found " +
                          std::to_string(tensor.data.size()));
  return Status::ok();
}

/// Row `row` of `tensor` (elements [row * count, (row + 1) * count)) in the
/// cell's element type.
/// Row `row` of `tensor` as `rowBytes` bytes of `spec`'s type at `out`.
void storeRow(const NamedTensor &tensor, int64_t row,
              const cellpack::TensorSpec &spec, size_t rowBytes, uint8_t *out) {
  size_t count = rowBytes / cpu::elementSize(spec.dtype());
  bool integral = !cpu::isFloatType(spec.dtype());
  for (size_t e = 0; e < count; ++e) {
    size_t index = static_cast<size_t>(row) * count + e;
    if (integral)
      cpu::storeInt(out, spec.dtype(), e, tensor.integerAt(index));
    else
      cpu::storeFloat(out, spec.dtype(), e,
                      static_cast<float>(tensor.numberAt(index)));
  }
}

} // namespace

ModelSignature RequestParser::makeSignature() const {
  ModelSignature signature;
  const ModelStructure &model = *structure_;
  if (model.kind == cellpack::Structure::Custom)
    return signature;
  const CellRoles &first = model.cells[0];
  if (model.kind == cellpack::Structure::Tree) {
    TensorDescription children;
    children.name = "children";
    children.type = TensorType::Int64;
    children.alsoAccepted = {TensorType::Int32};
    children.shape = {-1, model.arity};
    signature.inputs.push_back(children);
  }
  for (size_t d = 0; d < first.dataInputs.size(); ++d) {
    signature.inputs.push_back(stepInput(*first.dataSpecs[d]));
    signature.inputs.back().valueLimit = first.dataLimits[d];
  }
  // A tree's internal cell may take inputs too: one row per internal node,
  // in node order, as "internal_<name>".
  if (model.kind == cellpack::Structure::Tree) {
    const CellRoles &internal = model.cells[1];
    for (size_t d = 0; d < internal.dataInputs.size(); ++d) {
      signature.inputs.push_back(stepInput(*internal.dataSpecs[d]));
      signature.inputs.back().name = "internal_" + signature.inputs.back().name;
      signature.inputs.back().valueLimit = internal.dataLimits[d];
    }
  }

  switch (model.kind) {
  case cellpack::Structure::Chain:
    for (uint32_t output : first.emitted) {
      const cellpack::TensorSpec &spec = *first.cell->outputs()->Get(output);
      signature.outputs.push_back(outputOf(spec, true, spec.name()->str()));
    }
    for (uint32_t output : first.stateOutputs) {
      const cellpack::TensorSpec &spec = *first.cell->outputs()->Get(output);
      signature.outputs.push_back(
          outputOf(spec, false, "final_" + spec.name()->str()));
    }
    break;
  case cellpack::Structure::Seq2Seq: {
    TensorDescription tokens;
    tokens.name = "tokens";
    tokens.type = TensorType::Int64;
    tokens.shape = {-1};
    signature.outputs.push_back(tokens);
    break;
  }
  case cellpack::Structure::Tree: {
    const cellpack::CellType &internal = *model.cells[1].cell;
    for (const cellpack::TensorSpec *spec : *internal.outputs())
      signature.outputs.push_back(outputOf(*spec, false, spec->name()->str()));
    break;
  }
  case cellpack::Structure::Custom:
    break;
  }
  return signature;
}

Result<Request>
RequestParser::fromTensors(const std::vector<NamedTensor> &tensors,
                           const TensorRequestOptions &options) const {
  Request request;
  request.id = options.id;
  std::string where = "request " + request.id;
  if (structure_->kind == cellpack::Structure::Custom)
    return Status(StatusCode::Unsupported,
                  where + ": this model unfolds with a custom unfolder and "
                          "takes JSON requests only");
  if (options.deadlineMicros < 0)
    return bad(where, "the deadline must be >= 0");
  request.deadlineMicros = options.deadlineMicros;
  if (options.maxDecodeLength != 0 &&
      structure_->kind != cellpack::Structure::Seq2Seq)
    return bad(where, "max_decode_length applies to seq2seq models only");
  if (options.maxDecodeLength < 0)
    return bad(where, "max_decode_length must be at least 1");
  request.maxDecodeLength = options.maxDecodeLength;
  request.session = options.session;

  // Every tensor matched to one of the signature's inputs, once.
  std::vector<const NamedTensor *> found(signature_.inputs.size(), nullptr);
  for (const NamedTensor &tensor : tensors) {
    size_t index = 0;
    while (index < found.size() && signature_.inputs[index].name != tensor.name)
      ++index;
    if (index == found.size()) {
      std::string names;
      for (const TensorDescription &input : signature_.inputs)
        names += (names.empty() ? "'" : ", '") + input.name + "'";
      return bad(where, "unknown input '" + tensor.name +
                            "' (the model takes " + names + ")");
    }
    if (found[index])
      return bad(where, "input '" + tensor.name + "' is given twice");
    if (Status status = checkTensor(tensor, signature_.inputs[index]);
        !status.isOk())
      return bad(where, status.message());
    found[index] = &tensor;
  }
  for (size_t index = 0; index < found.size(); ++index)
    if (!found[index])
      return bad(where,
                 "input '" + signature_.inputs[index].name + "' is missing");

  if (structure_->kind == cellpack::Structure::Tree)
    return treeFromTensors(found, std::move(request));

  const CellRoles &roles = structure_->cells[0];
  int64_t steps = found[0]->shape[0];
  for (size_t d = 1; d < found.size(); ++d)
    if (found[d]->shape[0] != steps)
      return bad(where, "inputs '" + found[0]->name + "' and '" +
                            found[d]->name + "' give " + std::to_string(steps) +
                            " and " + std::to_string(found[d]->shape[0]) +
                            " steps");
  if (steps > static_cast<int64_t>(limits_.maxSteps))
    return bad(where, std::to_string(steps) +
                          " steps, longer than the limit of " +
                          std::to_string(limits_.maxSteps));
  size_t stepBytes = 0;
  for (size_t bytes : roles.dataRowBytes)
    stepBytes += bytes;
  request.steps.reserve(static_cast<size_t>(steps), roles.dataInputs.size(),
                        stepBytes);
  for (int64_t s = 0; s < steps; ++s) {
    for (size_t d = 0; d < roles.dataInputs.size(); ++d)
      storeRow(*found[d], s, *roles.dataSpecs[d], roles.dataRowBytes[d],
               request.steps.appendRow(roles.dataRowBytes[d]));
    request.steps.endStep();
  }
  if (Status status = check(request); !status.isOk())
    return status;
  return request;
}

Result<Request>
RequestParser::treeFromTensors(const std::vector<const NamedTensor *> &found,
                               Request request) const {
  std::string where = "request " + request.id;
  const NamedTensor &children = *found[0];
  int64_t nodes = children.shape[0];
  int64_t arity = structure_->arity;
  if (nodes > static_cast<int64_t>(limits_.maxTreeNodes))
    return bad(where, "the tree has " + std::to_string(nodes) +
                          " nodes, more than the limit of " +
                          std::to_string(limits_.maxTreeNodes));
  request.tree.resize(static_cast<size_t>(nodes));
  std::vector<size_t> leaves;
  for (int64_t n = 0; n < nodes; ++n) {
    int64_t leafMarks = 0;
    std::vector<int32_t> list;
    for (int64_t k = 0; k < arity; ++k) {
      int64_t child = children.integerAt(static_cast<size_t>(n * arity + k));
      if (child == -1) {
        ++leafMarks;
        continue;
      }
      if (child < 0 || child >= nodes)
        return bad(where, "node " + std::to_string(n) + ": child " +
                              std::to_string(child) +
                              " is not a node (there are " +
                              std::to_string(nodes) + "; -1 marks a leaf)");
      list.push_back(static_cast<int32_t>(child));
    }
    if (leafMarks != 0 && leafMarks != arity)
      return bad(where, "node " + std::to_string(n) +
                            ": children mixes -1 with node indices (a leaf "
                            "has all -1, an internal node none)");
    if (leafMarks == arity)
      leaves.push_back(static_cast<size_t>(n));
    request.tree[static_cast<size_t>(n)].children = std::move(list);
  }
  // Leaf inputs come first, then the internal cell's ("internal_<name>"):
  // one row per leaf (per internal node), in node order.
  std::vector<size_t> internals;
  for (int64_t n = 0; n < nodes; ++n)
    if (!request.tree[static_cast<size_t>(n)].children.empty())
      internals.push_back(static_cast<size_t>(n));
  for (uint32_t cell = 0; cell < 2; ++cell) {
    const CellRoles &roles = structure_->cells[cell];
    const std::vector<size_t> &owners = cell == 0 ? leaves : internals;
    size_t first = 1 + (cell == 0 ? 0 : structure_->cells[0].dataInputs.size());
    for (size_t d = 0; d < roles.dataInputs.size(); ++d)
      if (found[first + d]->shape[0] != static_cast<int64_t>(owners.size()))
        return bad(where, "input '" + found[first + d]->name + "' has " +
                              std::to_string(found[first + d]->shape[0]) +
                              " rows; the tree has " +
                              std::to_string(owners.size()) +
                              (cell == 0 ? " leaves" : " internal nodes") +
                              " (one row each, in node order)");
    for (size_t k = 0; k < owners.size(); ++k) {
      NodeData &data = request.tree[owners[k]].data;
      data.resize(roles.dataInputs.size());
      for (size_t d = 0; d < roles.dataInputs.size(); ++d) {
        data[d].assign(roles.dataRowBytes[d], 0);
        storeRow(*found[first + d], static_cast<int64_t>(k),
                 *roles.dataSpecs[d], roles.dataRowBytes[d], data[d].data());
      }
    }
  }
  if (Status status = check(request); !status.isOk())
    return status;
  return request;
}
