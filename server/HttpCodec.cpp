//===- HttpCodec.cpp - KServe v2 REST bodies, JSON and binary -------------===//
#include "HttpCodec.h"
#include "JsonReader.h"
#include "SessionRouting.h"

#include "cellrun/RequestJson.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <limits>

using namespace cellrun;
using namespace cellrun::serve;
using json = nlohmann::json;

namespace {

Status bad(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

/// The values of nested arrays that follow `shape` from level `depth` on.
Status nested(const json &value, const std::vector<int64_t> &shape,
              size_t depth, std::vector<const json *> &leaves) {
  if (depth == shape.size()) {
    if (value.is_array())
      return bad("\"data\" is nested deeper than the shape " +
                 shapeText(shape));
    leaves.push_back(&value);
    return Status::ok();
  }
  if (!value.is_array())
    return bad("\"data\" is ragged: a value where the shape " +
               shapeText(shape) + " has a level of " +
               std::to_string(shape[depth]) + " items");
  if (static_cast<int64_t>(value.size()) != shape[depth])
    return bad("\"data\" is ragged: an array of " +
               std::to_string(value.size()) + " items at level " +
               std::to_string(depth) + " of the shape " + shapeText(shape));
  for (const json &item : value)
    if (Status status = nested(item, shape, depth + 1, leaves); !status.isOk())
      return status;
  return Status::ok();
}

/// The values of `data` in row-major order: a flat array (its count is
/// checked against the shape by the caller), or arrays nested exactly as
/// `shape` is. Ragged rows, and arrays beside values, are refused.
Status flatten(const json &data, const std::vector<int64_t> &shape,
               std::vector<const json *> &leaves) {
  if (!data.is_array()) {
    if (!shape.empty())
      return bad("\"data\" must be an array");
    leaves.push_back(&data);
    return Status::ok();
  }
  bool anyArray = false;
  for (const json &item : data)
    anyArray |= item.is_array();
  if (!anyArray) {
    for (const json &item : data)
      leaves.push_back(&item);
    return Status::ok();
  }
  return nested(data, shape, 0, leaves);
}

template <typename T> void append(std::vector<uint8_t> &data, T value) {
  size_t at = data.size();
  data.resize(at + sizeof(T));
  std::memcpy(data.data() + at, &value, sizeof(T));
}

/// One JSON element into `data` as `type`; false when it does not fit.
bool appendElement(const json &value, TensorType type,
                   std::vector<uint8_t> &data) {
  if (type == TensorType::Bool) {
    if (!value.is_boolean())
      return false;
    append<uint8_t>(data, value.get<bool>() ? 1 : 0);
    return true;
  }
  if (isFloatTensorType(type)) {
    if (!value.is_number())
      return false;
    double number = value.get<double>();
    if (type == TensorType::Fp64)
      append<double>(data, number);
    else if (type == TensorType::Fp32)
      append<float>(data, static_cast<float>(number));
    else
      return false; // FP16 has no JSON form here
    return true;
  }
  if (!value.is_number_integer())
    return false;
  // nlohmann keeps non-negative integers as unsigned: compare as such.
  bool negative = !value.is_number_unsigned() && value.get<int64_t>() < 0;
  int64_t signedValue = negative ? value.get<int64_t>() : 0;
  uint64_t magnitude = negative ? 0 : value.get<uint64_t>();
  auto fits = [&](int64_t low, uint64_t high) {
    return negative ? signedValue >= low : magnitude <= high;
  };
  auto as = [&](auto type) {
    using T = decltype(type);
    append<T>(data, negative ? static_cast<T>(signedValue)
                             : static_cast<T>(magnitude));
    return true;
  };
  switch (type) {
  case TensorType::UInt8:
    return fits(0, UINT8_MAX) && as(uint8_t());
  case TensorType::UInt16:
    return fits(0, UINT16_MAX) && as(uint16_t());
  case TensorType::UInt32:
    return fits(0, UINT32_MAX) && as(uint32_t());
  case TensorType::UInt64:
    return fits(0, UINT64_MAX) && as(uint64_t());
  case TensorType::Int8:
    return fits(INT8_MIN, INT8_MAX) && as(int8_t());
  case TensorType::Int16:
    return fits(INT16_MIN, INT16_MAX) && as(int16_t());
  case TensorType::Int32:
    return fits(INT32_MIN, INT32_MAX) && as(int32_t());
  case TensorType::Int64:
    return fits(INT64_MIN, INT64_MAX) && as(int64_t());
  default:
    return false;
  }
}

Result<bool> boolParameter(const json &parameters, const char *name,
                           const std::string &where) {
  auto found = parameters.find(name);
  if (found == parameters.end())
    return false;
  if (!found->is_boolean())
    return bad(where + ": parameter \"" + name + "\" must be true or false");
  return found->get<bool>();
}

/// The parameters object of `owner` (or an empty one); InvalidArgument when
/// it is not an object or names a parameter outside `known`.
Result<json> parametersOf(const json &owner, const std::string &where,
                          std::initializer_list<const char *> known) {
  auto found = owner.find("parameters");
  if (found == owner.end())
    return json::object();
  if (!found->is_object())
    return bad(where + ": \"parameters\" must be an object");
  for (const auto &[key, unused] : found->items()) {
    bool isKnown = false;
    std::string list;
    for (const char *name : known) {
      isKnown |= key == name;
      list += (list.empty() ? "" : ", ") + std::string(name);
    }
    if (!isKnown)
      return bad(where + ": unknown parameter \"" + key + "\"" +
                 (list.empty() ? std::string(" (none are taken here)")
                               : " (known: " + list + ")"));
  }
  return *found;
}

Result<NamedTensor> decodeInput(const json &input, size_t index,
                                std::string_view binary, size_t &binaryUsed) {
  std::string where = "input " + std::to_string(index);
  if (!input.is_object())
    return bad(where + ": expected an object");
  auto name = input.find("name");
  if (name == input.end() || !name->is_string())
    return bad(where + ": \"name\" must be a string");
  NamedTensor tensor;
  tensor.name = name->get<std::string>();
  where = "input '" + tensor.name + "'";
  for (const auto &[key, unused] : input.items())
    if (key != "name" && key != "shape" && key != "datatype" && key != "data" &&
        key != "parameters")
      return bad(where + ": unknown member \"" + key + "\"");
  auto datatype = input.find("datatype");
  if (datatype == input.end() || !datatype->is_string())
    return bad(where + ": \"datatype\" must be a string such as \"FP32\"");
  auto type = parseTensorType(datatype->get<std::string>());
  if (!type)
    return bad(where + ": unknown datatype \"" + datatype->get<std::string>() +
               "\"");
  tensor.type = *type;
  auto shape = input.find("shape");
  if (shape == input.end() || !shape->is_array())
    return bad(where + ": \"shape\" must be an array of dimensions");
  int64_t elements = 1;
  for (const json &extent : *shape) {
    if (!extent.is_number_integer() || extent.get<int64_t>() < 0 ||
        extent.get<int64_t>() > (int64_t(1) << 31))
      return bad(where + ": \"shape\" must hold integers from 0 to 2^31");
    tensor.shape.push_back(extent.get<int64_t>());
    elements *= tensor.shape.back();
    if (elements > (int64_t(1) << 31))
      return bad(where + ": the shape has more than 2^31 elements");
  }
  auto parameters = parametersOf(input, where, {"binary_data_size"});
  if (!parameters.ok())
    return parameters.status();
  auto size = parameters->find("binary_data_size");
  auto data = input.find("data");
  if (size != parameters->end()) {
    if (data != input.end())
      return bad(where + ": give \"data\" or binary_data_size, not both");
    if (!size->is_number_integer() || size->get<int64_t>() < 0)
      return bad(where + ": binary_data_size must be an integer >= 0");
    uint64_t bytes = size->get<uint64_t>();
    if (bytes > binary.size() - binaryUsed)
      return bad(where + ": binary_data_size " + std::to_string(bytes) +
                 " goes past the end of the binary data (" +
                 std::to_string(binary.size() - binaryUsed) + " bytes left)");
    tensor.data.assign(binary.begin() + binaryUsed,
                       binary.begin() + binaryUsed + bytes);
    binaryUsed += bytes;
    return tensor;
  }
  if (data == input.end())
    return bad(where + ": no \"data\" (and no binary_data_size)");
  if (tensor.type == TensorType::Bytes || tensor.type == TensorType::Fp16)
    return tensor; // no element conversion: refused by type further on
  std::vector<const json *> leaves;
  if (Status status = flatten(*data, tensor.shape, leaves); !status.isOk())
    return bad(where + ": " + status.message());
  if (static_cast<int64_t>(leaves.size()) != elements)
    return bad(where + ": \"data\" has " + std::to_string(leaves.size()) +
               " values; the shape needs " + std::to_string(elements));
  tensor.data.reserve(leaves.size() * tensorTypeSize(tensor.type));
  for (size_t e = 0; e < leaves.size(); ++e)
    if (!appendElement(*leaves[e], tensor.type, tensor.data))
      return bad(where + ": value " + std::to_string(e) + " (" +
                 leaves[e]->dump() + ") is not a " +
                 tensorTypeName(tensor.type));
  return tensor;
}

/// The request's parameters into `decoded`: the session's, max_decode_length,
/// deadline_ms and binary_data_output.
Status decodeRequestParameters(const json &root, const std::string &where,
                               HttpInferRequest &decoded) {
  InferCall &call = decoded.call;
  auto parameters =
      parametersOf(root, where,
                   {"max_decode_length", "deadline_ms", "binary_data_output",
                    "sequence_id", "sequence_start", "sequence_end"});
  if (!parameters.ok())
    return parameters.status();
  SessionChunk &session = call.options.session;
  if (auto id = parameters->find("sequence_id"); id != parameters->end()) {
    if (!id->is_number_integer() || id->get<int64_t>() < 1)
      return bad(where + ": sequence_id must be an integer >= 1");
    session.id = id->get<uint64_t>();
  }
  auto start = boolParameter(*parameters, "sequence_start", where);
  auto end = boolParameter(*parameters, "sequence_end", where);
  if (!start.ok() || !end.ok())
    return start.ok() ? end.status() : start.status();
  session.start = start.value();
  session.end = end.value();
  if (auto limit = parameters->find("max_decode_length");
      limit != parameters->end()) {
    if (!limit->is_number_integer() || limit->get<int64_t>() < 1)
      return bad(where + ": max_decode_length must be an integer >= 1");
    call.options.maxDecodeLength = limit->get<int64_t>();
  }
  if (auto deadline = parameters->find("deadline_ms");
      deadline != parameters->end()) {
    if (!deadline->is_number() || deadline->get<double>() < 0)
      return bad(where + ": deadline_ms must be a number >= 0");
    call.options.deadlineMicros = deadline->get<double>() * 1000;
  }
  auto binaryDefault = boolParameter(*parameters, "binary_data_output", where);
  if (!binaryDefault.ok())
    return binaryDefault.status();
  decoded.binaryByDefault = binaryDefault.value();
  return Status::ok();
}

/// The request's "inputs" into `call`, their binary data taken in order
/// from `binary`, all of which they must claim.
Status decodeInputs(const json &root, const std::string &where,
                    std::string_view binary, InferCall &call) {
  auto inputs = root.find("inputs");
  if (inputs == root.end() || !inputs->is_array())
    return bad(where + ": \"inputs\" must be an array of tensors");
  size_t binaryUsed = 0;
  for (size_t i = 0; i < inputs->size(); ++i) {
    auto tensor = decodeInput((*inputs)[i], i, binary, binaryUsed);
    if (!tensor.ok())
      return bad(where + ": " + tensor.status().message());
    call.inputs.push_back(std::move(tensor).value());
  }
  if (binaryUsed != binary.size())
    return bad(where + ": " + std::to_string(binary.size() - binaryUsed) +
               " bytes of binary data follow the JSON that no input's "
               "binary_data_size claims");
  return Status::ok();
}

/// The requested "outputs", if any, into `decoded`: names and binary or not.
Status decodeRequestedOutputs(const json &root, const std::string &where,
                              HttpInferRequest &decoded) {
  auto outputs = root.find("outputs");
  if (outputs == root.end())
    return Status::ok();
  if (!outputs->is_array())
    return bad(where + ": \"outputs\" must be an array");
  for (const json &output : *outputs) {
    auto name = output.is_object() ? output.find("name") : output.end();
    if (!output.is_object() || name == output.end() || !name->is_string())
      return bad(where + ": each requested output needs a \"name\"");
    std::string at = where + ", output '" + name->get<std::string>() + "'";
    for (const auto &[key, unused] : output.items())
      if (key != "name" && key != "parameters")
        return bad(at + ": unknown member \"" + key + "\"");
    auto outputParameters = parametersOf(output, at, {"binary_data"});
    if (!outputParameters.ok())
      return outputParameters.status();
    auto binaryData = boolParameter(*outputParameters, "binary_data", at);
    if (!binaryData.ok())
      return binaryData.status();
    decoded.call.outputs.push_back(name->get<std::string>());
    decoded.binaryOutputs.push_back(outputParameters->count("binary_data")
                                        ? binaryData.value()
                                        : decoded.binaryByDefault);
  }
  return Status::ok();
}

} // namespace

Result<HttpInferRequest>
serve::decodeInferRequest(std::string_view body,
                          const std::optional<std::string> &headerLength,
                          const std::optional<std::string> &sequenceIdHeader) {
  size_t jsonLength = body.size();
  if (headerLength) {
    const std::string &text = *headerLength;
    char *end = nullptr;
    unsigned long long value = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || *end || text[0] == '-' || value > body.size())
      return bad("Inference-Header-Content-Length '" + text +
                 "' is not a length within the body (" +
                 std::to_string(body.size()) + " bytes)");
    jsonLength = static_cast<size_t>(value);
  }
  std::string_view header = body.substr(0, jsonLength);
  std::string_view binary = body.substr(jsonLength);
  // The runtime's strict reading (duplicate members and deep nesting are
  // refused, as for `cellrun run`), through simdjson.
  auto parsed = readRequestJsonFast(header);
  if (!parsed.ok())
    return bad("the request is not valid JSON: " + parsed.status().message());
  json root = std::move(parsed).value();
  if (!root.is_object())
    return bad("the request must be a JSON object");
  HttpInferRequest decoded;
  InferCall &call = decoded.call;
  for (const auto &[key, unused] : root.items())
    if (key != "id" && key != "parameters" && key != "inputs" &&
        key != "outputs")
      return bad("unknown member \"" + key + "\" in the request");
  if (auto id = root.find("id"); id != root.end()) {
    if (!id->is_string())
      return bad("\"id\" must be a string");
    call.id = id->get<std::string>();
  }
  std::string where = "request" + (call.id.empty() ? "" : " " + call.id);
  if (Status status = decodeRequestParameters(root, where, decoded);
      !status.isOk())
    return status;
  if (Status status =
          applySequenceIdHeader(sequenceIdHeader, where, call.options.session);
      !status.isOk())
    return status;
  if (Status status = decodeInputs(root, where, binary, call); !status.isOk())
    return status;
  if (Status status = decodeRequestedOutputs(root, where, decoded);
      !status.isOk())
    return status;
  return decoded;
}
