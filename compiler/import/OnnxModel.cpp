//===- OnnxModel.cpp - ONNX model read into plain C++ structs -------------===//
//
// Parses binary or textual ONNX with protobuf and ONNX's own text parser, then
// copies what cellc needs into the plain structs of OnnxModel.h. Every problem
// becomes a one-line message; nothing escapes as an exception. The ONNX checker
// and shape inference are deliberately not run: the importer does its checks.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/OnnxModel.h"

#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iterator>
#include <memory>
#include <unordered_set>

namespace cellc::onnx_model {

const char *dataTypeName(int32_t dataType) {
  static const char *const names[] = {
      "undefined", "float",  "uint8",     "int8",       "uint16",  "int16",
      "int32",     "int64",  "string",    "bool",       "float16", "double",
      "uint32",    "uint64", "complex64", "complex128", "bfloat16"};
  if (dataType < 0 || dataType >= int32_t(std::size(names)))
    return "unknown";
  return names[dataType];
}

unsigned dataTypeSize(int32_t dataType) {
  static const unsigned sizes[] = {0, 4, 1, 1, 2, 2, 4,  8, 0,
                                   1, 2, 8, 4, 8, 8, 16, 2};
  if (dataType < 0 || dataType >= int32_t(std::size(sizes)))
    return 0;
  return sizes[dataType];
}

/// Returns -1 when a dimension is negative or the product overflows int64.
int64_t Tensor::numElements() const {
  int64_t count = 1;
  for (int64_t dim : dims)
    if (dim < 0 || __builtin_mul_overflow(count, dim, &count))
      return -1;
  return count;
}

const Attribute *Node::findAttribute(const std::string &attrName) const {
  for (const Attribute &attribute : attributes)
    if (attribute.name == attrName)
      return &attribute;
  return nullptr;
}

namespace {

using onnx::AttributeProto;
using onnx::TensorProto;

// protobuf takes the message size as an int.
constexpr size_t kMaxProtobufBytes = INT_MAX;

bool fail(std::string &error, std::string message) {
  error = std::move(message);
  return false;
}

void appendLittleEndian(std::vector<char> &bytes, uint64_t value,
                        unsigned width) {
  for (unsigned byte = 0; byte < width; ++byte)
    bytes.push_back(char((value >> (8 * byte)) & 0xff));
}

/// Appends IEEE floats (float or double, as `Bits` of the same size).
template <typename Bits, typename Float>
void appendFloats(const google::protobuf::RepeatedField<Float> &values,
                  std::vector<char> &bytes) {
  static_assert(sizeof(Bits) == sizeof(Float));
  for (Float value : values) {
    Bits bits;
    std::memcpy(&bits, &value, sizeof(bits));
    appendLittleEndian(bytes, bits, sizeof(bits));
  }
}

/// Keeps the low `width` bytes of each value (int32_data holds int8, float16,
/// ... one per entry; uint64_data holds uint32). Bools become 0 or 1.
template <typename Int>
void appendIntegers(const google::protobuf::RepeatedField<Int> &values,
                    unsigned width, bool isBool, std::vector<char> &bytes) {
  for (Int value : values) {
    uint64_t bits = isBool ? uint64_t(value != 0) : uint64_t(value);
    appendLittleEndian(bytes, bits, width);
  }
}

/// Packs the type-specific repeated field that the ONNX proto prescribes for
/// the tensor's data type. Unknown types contribute nothing.
void appendTypedData(const TensorProto &proto, std::vector<char> &bytes) {
  int32_t type = proto.data_type();
  unsigned width = dataTypeSize(type);
  switch (type) {
  case TensorProto::FLOAT:
  case TensorProto::COMPLEX64:
    return appendFloats<uint32_t>(proto.float_data(), bytes);
  case TensorProto::DOUBLE:
  case TensorProto::COMPLEX128:
    return appendFloats<uint64_t>(proto.double_data(), bytes);
  case TensorProto::INT32:
  case TensorProto::INT16:
  case TensorProto::INT8:
  case TensorProto::UINT16:
  case TensorProto::UINT8:
  case TensorProto::BOOL:
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
    return appendIntegers(proto.int32_data(), width, type == TensorProto::BOOL,
                          bytes);
  case TensorProto::INT64:
    return appendIntegers(proto.int64_data(), width, false, bytes);
  case TensorProto::UINT32:
  case TensorProto::UINT64:
    return appendIntegers(proto.uint64_data(), width, false, bytes);
  default:
    return;
  }
}

std::string shapeText(const std::vector<int64_t> &dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

/// Rejects storage that cellc cannot read: external files and segments.
bool checkStorage(const TensorProto &proto, const std::string &label,
                  std::string &error) {
  if (proto.data_location() == TensorProto::EXTERNAL ||
      proto.external_data_size() > 0)
    return fail(error, label + " uses external data, which cellc does not "
                               "support; re-export with the weights inside "
                               "the model");
  if (proto.has_segment())
    return fail(error,
                label + " is stored in segments, which cellc does not support");
  return true;
}

bool copyDims(const TensorProto &proto, const std::string &label,
              Tensor &tensor, std::string &error) {
  tensor.dims.assign(proto.dims().begin(), proto.dims().end());
  if (tensor.numElements() >= 0)
    return true;
  bool negative = std::any_of(tensor.dims.begin(), tensor.dims.end(),
                              [](int64_t dim) { return dim < 0; });
  return fail(error, label +
                         (negative ? " has a negative dimension "
                                   : " has too many elements ") +
                         shapeText(tensor.dims));
}

bool checkByteCount(const Tensor &tensor, const std::string &label,
                    std::string &error) {
  int64_t elementSize = dataTypeSize(tensor.dataType);
  if (elementSize == 0) // undefined or unknown type: the importer rejects it
    return true;
  int64_t expected;
  if (__builtin_mul_overflow(tensor.numElements(), elementSize, &expected))
    return fail(error, label + " is too large " + shapeText(tensor.dims));
  if (int64_t(tensor.bytes.size()) == expected)
    return true;
  return fail(error, label + " (" + dataTypeName(tensor.dataType) +
                         shapeText(tensor.dims) + ") holds " +
                         std::to_string(tensor.bytes.size()) +
                         " bytes of data but its type and shape need " +
                         std::to_string(expected) + " bytes");
}

/// `label` names the tensor in messages, e.g. "tensor 'w'".
bool convertTensor(const TensorProto &proto, const std::string &label,
                   Tensor &tensor, std::string &error) {
  tensor.name = proto.name();
  tensor.dataType = proto.data_type();
  if (!checkStorage(proto, label, error) ||
      !copyDims(proto, label, tensor, error))
    return false;
  if (tensor.dataType == TensorProto::STRING)
    return tensor.numElements() == 0 ||
           fail(error, label + ": string tensors are not supported");
  if (proto.has_raw_data())
    tensor.bytes.assign(proto.raw_data().begin(), proto.raw_data().end());
  else
    appendTypedData(proto, tensor.bytes);
  return checkByteCount(tensor, label, error);
}

Dim convertDim(const onnx::TensorShapeProto::Dimension &proto) {
  Dim dim;
  if (proto.has_dim_value() && proto.dim_value() >= 0) {
    dim.kind = Dim::Kind::Known;
    dim.value = proto.dim_value();
  } else if (proto.has_dim_param()) {
    dim.kind = Dim::Kind::Symbolic;
    dim.symbol = proto.dim_param();
  } // A negative dim_value (some old exporters' "dynamic") stays Unknown.
  return dim;
}

ValueInfo convertValueInfo(const onnx::ValueInfoProto &proto) {
  ValueInfo info;
  info.name = proto.name();
  if (!proto.type().has_tensor_type())
    return info;
  const onnx::TypeProto::Tensor &tensorType = proto.type().tensor_type();
  info.elemType = tensorType.elem_type();
  info.hasShape = tensorType.has_shape();
  for (const auto &dim : tensorType.shape().dim())
    info.dims.push_back(convertDim(dim));
  return info;
}

/// The kind of an attribute, indexed by AttributeProto::AttributeType; graphs,
/// sparse tensors, type protos and their lists are Other, and so is a reference
/// to an attribute of the enclosing function.
Attribute::Kind attributeKind(const AttributeProto &proto) {
  using Kind = Attribute::Kind;
  static const Kind kinds[] = {Kind::Other,  Kind::Float,  Kind::Int,
                               Kind::String, Kind::Tensor, Kind::Other,
                               Kind::Floats, Kind::Ints,   Kind::Strings};
  int type = proto.type();
  if (!proto.ref_attr_name().empty() || type < 0 ||
      type >= int(std::size(kinds)))
    return Kind::Other;
  return kinds[type];
}

bool convertAttribute(const AttributeProto &proto, const std::string &nodeName,
                      Attribute &attribute, std::string &error) {
  attribute.name = proto.name();
  attribute.kind = attributeKind(proto);
  attribute.f = proto.f();
  attribute.i = proto.i();
  attribute.s = proto.s();
  attribute.floats.assign(proto.floats().begin(), proto.floats().end());
  attribute.ints.assign(proto.ints().begin(), proto.ints().end());
  attribute.strings.assign(proto.strings().begin(), proto.strings().end());
  if (attribute.kind != Attribute::Kind::Tensor)
    return true;
  std::string tensorName = proto.t().name();
  std::string label =
      "tensor " + (tensorName.empty() ? "" : "'" + tensorName + "' ") +
      "in attribute '" + proto.name() + "' of node '" + nodeName + "'";
  return convertTensor(proto.t(), label, attribute.t, error);
}

bool convertNode(const onnx::NodeProto &proto, int index, Node &node,
                 std::string &error) {
  node.name = proto.name();
  if (node.name.empty())
    node.name = proto.op_type() + "_" + std::to_string(index);
  node.opType = proto.op_type();
  node.domain = proto.domain();
  node.inputs.assign(proto.input().begin(), proto.input().end());
  node.outputs.assign(proto.output().begin(), proto.output().end());
  node.attributes.resize(proto.attribute_size());
  for (int i = 0; i < proto.attribute_size(); ++i)
    if (!convertAttribute(proto.attribute(i), node.name, node.attributes[i],
                          error))
      return false;
  return true;
}

bool convertInitializers(const onnx::GraphProto &graph, Model &model,
                         std::string &error) {
  if (graph.sparse_initializer_size() > 0)
    return fail(error, "sparse initializers are not supported");
  model.initializers.resize(graph.initializer_size());
  for (int i = 0; i < graph.initializer_size(); ++i) {
    const TensorProto &proto = graph.initializer(i);
    std::string label = "tensor '" + proto.name() + "'";
    if (!convertTensor(proto, label, model.initializers[i], error))
      return false;
  }
  return true;
}

/// Older exporters list every initializer among the graph inputs as well.
void convertInputsAndOutputs(const onnx::GraphProto &graph, Model &model) {
  std::unordered_set<std::string> initializerNames;
  for (const TensorProto &initializer : graph.initializer())
    initializerNames.insert(initializer.name());
  for (const onnx::ValueInfoProto &input : graph.input())
    if (!initializerNames.count(input.name()))
      model.inputs.push_back(convertValueInfo(input));
  for (const onnx::ValueInfoProto &output : graph.output())
    model.outputs.push_back(convertValueInfo(output));
}

bool convertGraph(const onnx::GraphProto &graph, Model &model,
                  std::string &error) {
  model.graphName = graph.name();
  if (!convertInitializers(graph, model, error))
    return false;
  convertInputsAndOutputs(graph, model);
  model.nodes.resize(graph.node_size());
  for (int i = 0; i < graph.node_size(); ++i)
    if (!convertNode(graph.node(i), i, model.nodes[i], error))
      return false;
  return true;
}

int64_t defaultOpsetVersion(const onnx::ModelProto &proto) {
  for (const onnx::OperatorSetIdProto &opset : proto.opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx")
      return opset.version();
  return 0;
}

bool convertModel(const onnx::ModelProto &proto, Model &model,
                  std::string &error) {
  if (!proto.has_graph())
    return fail(error, "not a valid ONNX model (it has no graph)");
  model.irVersion = proto.ir_version();
  model.opsetVersion = defaultOpsetVersion(proto);
  model.producerName = proto.producer_name();
  model.producerVersion = proto.producer_version();
  return convertGraph(proto.graph(), model, error);
}

bool parseBinary(const std::string &contents, onnx::ModelProto &proto,
                 std::string &error) {
  if (contents.size() > kMaxProtobufBytes)
    return fail(error, "model is larger than 2 GiB, which protobuf cannot "
                       "parse; cellc does not support models that big");
  if (!proto.ParseFromArray(contents.data(), int(contents.size())))
    return fail(error, "not a valid ONNX model (protobuf parse failed; the "
                       "file may be truncated or not ONNX)");
  return true;
}

/// The text parser's messages span several lines; diagnostics are one line.
std::string oneLine(std::string text) {
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  for (size_t pos; (pos = text.find('\n')) != std::string::npos;)
    text.replace(pos, 1, "; ");
  return text;
}

/// The parser reports trailing input itself (it tries to read functions).
bool parseText(const std::string &contents, onnx::ModelProto &proto,
               std::string &error) {
  const std::string prefix = "ONNX text syntax error: ";
  size_t nul = contents.find('\0'); // the parser stops at the first NUL
  if (nul != std::string::npos)
    return fail(error, prefix + "NUL byte at offset " + std::to_string(nul));
  onnx::OnnxParser parser(contents.c_str());
  try {
    onnx::Common::Status status = parser.Parse(proto);
    if (!status.IsOK())
      return fail(error, prefix + oneLine(status.ErrorMessage()));
  } catch (const std::exception &e) { // std::stoll & co. on bad numbers
    return fail(error, prefix + "bad literal at " + parser.GetCurrentPos() +
                           " (" + e.what() + ")");
  }
  return true;
}

bool parseAndConvert(const std::string &contents, bool textual, Model &model,
                     std::string &error) {
  if (contents.empty())
    return fail(error, "not a valid ONNX model (the file is empty)");
  onnx::ModelProto proto;
  bool parsed = textual ? parseText(contents, proto, error)
                        : parseBinary(contents, proto, error);
  return parsed && convertModel(proto, model, error);
}

/// Reads the whole file, stopping early once it exceeds `maxBytes`.
bool readFile(const std::string &path, size_t maxBytes, std::string &contents,
              std::string &error) {
  auto close = [](std::FILE *file) { std::fclose(file); };
  std::unique_ptr<std::FILE, decltype(close)> file(
      std::fopen(path.c_str(), "rb"), close);
  if (!file)
    return fail(error, std::string("cannot open: ") + std::strerror(errno));
  char buffer[1 << 16];
  size_t count;
  while ((count = std::fread(buffer, 1, sizeof(buffer), file.get())) > 0 &&
         contents.size() <= maxBytes)
    contents.append(buffer, count); // may throw std::bad_alloc
  int readErrno = std::ferror(file.get()) ? (errno ? errno : EIO) : 0;
  if (readErrno != 0)
    return fail(error, std::string("cannot read: ") + std::strerror(readErrno));
  return true;
}

/// Runs `step`, turning any exception into `error`.
template <typename Step> bool guarded(Step step, std::string &error) {
  try {
    return step();
  } catch (const std::exception &e) {
    return fail(error, std::string("internal error while reading the model: ") +
                           e.what());
  } catch (...) {
    return fail(error, "internal error while reading the model");
  }
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

bool parseModel(const std::string &contents, bool textual,
                const std::string &displayName, Model &model,
                std::string &error) {
  Model result;
  result.path = displayName;
  std::string message;
  if (!guarded(
          [&] { return parseAndConvert(contents, textual, result, message); },
          message))
    return fail(error, displayName + ": " + message);
  model = std::move(result);
  return true;
}

bool readModel(const std::string &path, Model &model, std::string &error) {
  bool textual = endsWith(path, ".onnxtxt");
  // One byte over protobuf's limit is enough for parseModel to reject it.
  size_t maxBytes = textual ? SIZE_MAX : kMaxProtobufBytes;
  std::string contents, message;
  if (!guarded([&] { return readFile(path, maxBytes, contents, message); },
               message))
    return fail(error, path + ": " + message);
  return parseModel(contents, textual, path, model, error);
}

} // namespace cellc::onnx_model
