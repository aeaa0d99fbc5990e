//===- GraphImporter.cpp - Value/constant tables and node helpers --------===//
#include "compiler/import/GraphImporter.h"

#include "cell/IR/WeightData.h"

#include "llvm/ADT/StringExtras.h"

#include <cstring>

using namespace mlir;
using namespace cellc;
namespace om = cellc::onnx_model;

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

GraphImporter::GraphImporter(const om::Model &model, OpBuilder &builder)
    : model_(model), builder_(builder),
      fileLoc_(FileLineColLoc::get(builder.getContext(), model.path, 0, 0)) {
  for (const om::Tensor &tensor : model.initializers)
    initializers_[tensor.name] = &tensor;
}

Location GraphImporter::nodeLoc(const om::Node &node) {
  // The node's name, with its op type and opset as the metadata of the
  // file location under it: what a later error about an op made from this
  // node says (cellc prints "node 'N' (Op, opset K): ...").
  std::string what =
      node.opType + ", opset " + std::to_string(model_.opsetVersion);
  Location file =
      FusedLoc::get(context(), {fileLoc_}, StringAttr::get(context(), what));
  return NameLoc::get(StringAttr::get(context(), node.name), file);
}

Type GraphImporter::elementType(int32_t dataType) {
  MLIRContext *ctx = context();
  switch (static_cast<om::DataType>(dataType)) {
  case om::DataType::Float:
    return Float32Type::get(ctx);
  case om::DataType::Double:
    return Float64Type::get(ctx);
  case om::DataType::Float16:
    return Float16Type::get(ctx);
  case om::DataType::BFloat16:
    return BFloat16Type::get(ctx);
  case om::DataType::Int64:
    return IntegerType::get(ctx, 64);
  case om::DataType::Int32:
    return IntegerType::get(ctx, 32);
  case om::DataType::Int16:
    return IntegerType::get(ctx, 16);
  case om::DataType::Int8:
    return IntegerType::get(ctx, 8);
  case om::DataType::Bool:
    return IntegerType::get(ctx, 1);
  default:
    return {};
  }
}

void GraphImporter::define(StringRef name, Value value) {
  values_[name] = value;
}

const om::Tensor *GraphImporter::constantTensor(StringRef name) const {
  if (auto it = constants_.find(name); it != constants_.end())
    return it->second;
  if (auto it = initializers_.find(name); it != initializers_.end())
    return it->second;
  return nullptr;
}

const om::Tensor *GraphImporter::defineConstantTensor(StringRef name,
                                                      om::Tensor tensor) {
  constantNodeTensors_.push_back(std::move(tensor));
  constants_[name] = &constantNodeTensors_.back();
  return &constantNodeTensors_.back();
}

const BatchLayout *GraphImporter::batchLayout(StringRef name) const {
  auto it = batchLayouts_.find(name);
  return it == batchLayouts_.end() ? nullptr : &it->second;
}

void GraphImporter::defineRows(StringRef name, Value rows, BatchLayout layout) {
  values_[name] = rows;
  batchLayouts_[name] = std::move(layout);
}

const HostInts *GraphImporter::hostInts(StringRef name) {
  if (auto it = hostInts_.find(name); it != hostInts_.end())
    return &it->second;
  const om::Tensor *tensor = constantTensor(name);
  auto type = tensor ? static_cast<om::DataType>(tensor->dataType)
                     : om::DataType::Undefined;
  constexpr int64_t kMaxElements = 1024;
  if ((type != om::DataType::Int64 && type != om::DataType::Int32) ||
      tensor->numElements() > kMaxElements)
    return nullptr;
  HostInts value;
  value.dataType = tensor->dataType;
  value.dims.assign(tensor->dims.begin(), tensor->dims.end());
  for (int64_t i = 0, e = tensor->numElements(); i < e; ++i) {
    int64_t element;
    if (type == om::DataType::Int64)
      std::memcpy(&element, tensor->bytes.data() + 8 * i, 8);
    else
      element = reinterpret_cast<const int32_t *>(tensor->bytes.data())[i];
    value.values.push_back(element);
    value.kinds.push_back(HostInts::Kind::Known);
  }
  return &hostInts_.try_emplace(name, std::move(value)).first->second;
}

void GraphImporter::defineHostInts(StringRef name, HostInts value) {
  hostInts_[name] = std::move(value);
}

Value GraphImporter::lookup(StringRef name, Location useLoc) {
  if (auto it = values_.find(name); it != values_.end())
    return it->second;
  // Initializers, and results of shape arithmetic that folded to a
  // constant, are materialized at the top of the cell, once.
  const om::Tensor *tensor = constantTensor(name);
  if (!tensor)
    return {};
  FailureOr<ElementsAttr> value = tensorAttr(*tensor, useLoc);
  if (failed(value))
    return {};
  OpBuilder::InsertionGuard guard(builder_);
  Block *entry = builder_.getInsertionBlock();
  builder_.setInsertionPointToStart(entry);
  auto constant = builder_.create<cell::ConstantOp>(
      NameLoc::get(StringAttr::get(context(), name), fileLoc_), *value);
  values_[name] = constant.getResult();
  return constant.getResult();
}

/// A resource name made of the initializer's name ([A-Za-z0-9_.]).
static std::string blobName(StringRef tensorName) {
  std::string name;
  for (char c : tensorName)
    name.push_back(llvm::isAlnum(c) || c == '_' || c == '.' ? c : '_');
  if (name.empty() || llvm::isDigit(name.front()))
    name.insert(name.begin(), '_');
  return name;
}

FailureOr<ElementsAttr> GraphImporter::tensorAttr(const om::Tensor &tensor,
                                                  Location loc) {
  Type element = elementType(tensor.dataType);
  if (!element)
    return emitError(loc) << "tensor '" << tensor.name << "' has data type "
                          << om::dataTypeName(tensor.dataType)
                          << ", which cellc does not support";
  auto type = RankedTensorType::get(tensor.dims, element);
  ArrayRef<char> bytes(tensor.bytes.data(), tensor.bytes.size());
  if (element.isInteger(1)) {
    SmallVector<bool> flags;
    for (char byte : tensor.bytes)
      flags.push_back(byte != 0);
    return ElementsAttr(DenseElementsAttr::get(type, flags));
  }
  bool detectedSplat = false;
  if (!DenseElementsAttr::isValidRawBuffer(type, bytes, detectedSplat))
    return emitError(loc) << "tensor '" << tensor.name
                          << "' holds data that does not match " << type;
  return mlir::cell::makeConstant(type, bytes, blobName(tensor.name));
}

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

NodeContext::NodeContext(GraphImporter &importer, const om::Node &node)
    : importer_(importer), node_(node), loc_(importer.nodeLoc(node)) {}

int64_t NodeContext::opset() const { return importer_.model().opsetVersion; }
OpBuilder &NodeContext::builder() { return importer_.builder(); }
MLIRContext *NodeContext::context() { return importer_.context(); }

InFlightDiagnostic NodeContext::emitError() {
  return mlir::emitError(loc_)
         << "node '" << node_.name << "' (" << node_.opType << ", opset "
         << opset() << "): ";
}

bool NodeContext::hasInput(size_t index) const {
  return index < node_.inputs.size() && !node_.inputs[index].empty();
}

FailureOr<Value> NodeContext::input(size_t index) {
  if (!hasInput(index))
    return emitError() << "input #" << index << " is missing";
  const std::string &name = node_.inputs[index];
  Value value = importer_.lookup(name, loc_);
  if (const HostInts *host = value ? nullptr : importer_.hostInts(name))
    return emitError() << "input '" << name
                       << "' is shape arithmetic that depends on the batch "
                          "size (read by node '"
                       << host->batchNode
                       << "'); cellc folds shape computations only where the "
                          "batch size does not enter them";
  if (!value)
    return emitError() << "input '" << name
                       << "' is not a graph input, an initializer or the "
                          "output of an earlier node";
  if (const BatchLayout *layout = importer_.batchLayout(name)) {
    return emitError()
           << "input '" << name << "' has shape "
           << describeShape(layout->shape)
           << " with the batch dimension at axis " << layout->batchAxis
           << "; cellc follows a batch dimension off axis 0 only through "
              "Transpose, Squeeze, Unsqueeze, Reshape, Slice, Gather, Concat "
              "and the LSTM, GRU and RNN ops";
  }
  return value;
}

bool NodeContext::hasBatchLayout(size_t index) const {
  return hasInput(index) && importer_.batchLayout(node_.inputs[index]);
}

FailureOr<Rows> NodeContext::rows(size_t index) {
  if (hasBatchLayout(index)) {
    const std::string &name = node_.inputs[index];
    return Rows{importer_.lookup(name, loc_), *importer_.batchLayout(name)};
  }
  FailureOr<RankedTensorType> type = inputType(index);
  if (failed(type))
    return failure();
  if (type->getRank() == 0 || !type->isDynamicDim(0))
    return emitError() << "input '" << node_.inputs[index] << "' of type "
                       << *type << " has no batch dimension";
  int64_t columns = 1;
  for (int64_t dim : type->getShape().drop_front())
    columns *= dim;
  FailureOr<Value> rows = reshape(
      *input(index), RankedTensorType::get({ShapedType::kDynamic, columns},
                                           type->getElementType()));
  if (failed(rows))
    return failure();
  return Rows{*rows, BatchLayout{llvm::to_vector(type->getShape()), 0}};
}

FailureOr<Value> NodeContext::reshape(Value value, RankedTensorType type) {
  // A reshape back to what a reshape started from is that value.
  if (auto producer = value.getDefiningOp<cell::ReshapeOp>();
      producer && producer.getInput().getType() == type)
    return producer.getInput();
  if (value.getType() == type)
    return value;
  FailureOr<Operation *> op = create<cell::ReshapeOp>(value, {}, {type});
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

LogicalResult NodeContext::setOutputRows(size_t index, Value rows,
                                         const BatchLayout &layout) {
  if (index >= node_.outputs.size() || node_.outputs[index].empty())
    return success();
  const std::string &name = node_.outputs[index];
  if (layout.batchAxis != 0) {
    importer_.defineRows(name, rows, layout);
    return success();
  }
  Type element = rows.getType().cast<RankedTensorType>().getElementType();
  FailureOr<Value> value =
      reshape(rows, RankedTensorType::get(layout.shape, element));
  if (failed(value))
    return failure();
  importer_.define(name, *value);
  return success();
}

FailureOr<RankedTensorType> NodeContext::inputType(size_t index) {
  FailureOr<Value> value = input(index);
  if (failed(value))
    return failure();
  return value->getType().cast<RankedTensorType>();
}

FailureOr<SmallVector<int64_t>> NodeContext::constantInts(size_t index,
                                                          StringRef what) {
  if (!hasInput(index))
    return emitError() << what << " (input #" << index << ") is missing";
  const std::string &name = node_.inputs[index];
  const om::Tensor *tensor = importer_.constantTensor(name);
  if (const HostInts *host = tensor ? nullptr : importer_.hostInts(name))
    return emitError() << what << " '" << name
                       << "' depends on the batch size (read by node '"
                       << host->batchNode
                       << "'); cellc needs it to be a constant";
  if (!tensor)
    return emitError() << what << " '" << name
                       << "' must be a constant (an initializer or the output "
                          "of a Constant node)";
  SmallVector<int64_t> values;
  int64_t count = tensor->numElements();
  auto type = static_cast<om::DataType>(tensor->dataType);
  if (type == om::DataType::Int64) {
    const auto *data = reinterpret_cast<const int64_t *>(tensor->bytes.data());
    values.assign(data, data + count);
  } else if (type == om::DataType::Int32) {
    const auto *data = reinterpret_cast<const int32_t *>(tensor->bytes.data());
    values.assign(data, data + count);
  } else {
    return emitError() << what << " '" << name
                       << "' must be int64 or int32, not "
                       << om::dataTypeName(tensor->dataType);
  }
  return values;
}

const HostInts *NodeContext::hostInts(size_t index) {
  return hasInput(index) ? importer_.hostInts(node_.inputs[index]) : nullptr;
}

const om::Attribute *NodeContext::attribute(StringRef name) const {
  return node_.findAttribute(name.str());
}

int64_t NodeContext::intAttr(StringRef name, int64_t fallback) const {
  const om::Attribute *attr = attribute(name);
  return attr && attr->kind == om::Attribute::Kind::Int ? attr->i : fallback;
}

float NodeContext::floatAttr(StringRef name, float fallback) const {
  const om::Attribute *attr = attribute(name);
  return attr && attr->kind == om::Attribute::Kind::Float ? attr->f : fallback;
}

std::optional<SmallVector<int64_t>>
NodeContext::intsAttr(StringRef name) const {
  const om::Attribute *attr = attribute(name);
  if (!attr || attr->kind != om::Attribute::Kind::Ints)
    return std::nullopt;
  return SmallVector<int64_t>(attr->ints.begin(), attr->ints.end());
}

FailureOr<int64_t> NodeContext::normalizeAxis(int64_t axis, int64_t rank,
                                              StringRef what) {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank)
    return emitError() << what << " " << axis << " is out of range for rank "
                       << rank;
  return normalized;
}

/// Runs `check` with the diagnostics it emits held back; on failure returns
/// the first one's text (so the caller can say which node it concerns).
static LogicalResult runQuietly(MLIRContext *context,
                                function_ref<LogicalResult()> check,
                                std::string &message) {
  ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
    if (message.empty())
      message = diag.str();
    return success();
  });
  return check();
}

LogicalResult
NodeContext::inferTypes(function_ref<LogicalResult(Location)> infer) {
  std::string message;
  if (succeeded(runQuietly(
          context(), [&] { return infer(loc_); }, message)))
    return success();
  return emitError() << (message.empty() ? "invalid operands" : message);
}

FailureOr<Operation *> NodeContext::verifyCreated(Operation *op) {
  std::string message;
  if (succeeded(runQuietly(
          context(), [&] { return op->getName().verifyInvariants(op); },
          message)))
    return op;
  op->erase();
  return emitError() << message;
}

Type NodeContext::elementTypeOf(int32_t dataType) {
  return importer_.elementType(dataType);
}

const om::Tensor *NodeContext::keepConstantTensor(om::Tensor tensor) {
  std::string name = node_.outputs.empty() ? node_.name : node_.outputs[0];
  return importer_.defineConstantTensor(name, std::move(tensor));
}

FailureOr<ElementsAttr> NodeContext::tensorAttr(const om::Tensor &tensor) {
  return importer_.tensorAttr(tensor, loc_);
}

LogicalResult NodeContext::setOutputs(ValueRange values) {
  if (node_.outputs.size() > values.size())
    return emitError() << "has " << node_.outputs.size()
                       << " outputs but the op produces " << values.size();
  for (auto [name, value] : llvm::zip(node_.outputs, values))
    if (!name.empty())
      importer_.define(name, value);
  return success();
}
