//===- HttpReplyCodec.cpp - KServe v2 REST replies, JSON and binary -------===//
//
// The reply side of HttpCodec.h: an inference reply's outputs as JSON
// "data" or binary data after the JSON header, its parameters, and the
// error bodies every endpoint answers with.
//
//===----------------------------------------------------------------------===//
#include "HttpCodec.h"
#include "JsonWriter.h"

#include <nlohmann/json.hpp>

using namespace cellrun;
using namespace cellrun::serve;
using json = nlohmann::json;

namespace {

/// One output tensor's object, keys sorted: its values as JSON "data", or
/// appended to `binary` with their binary_data_size.
void writeOutputTensor(JsonWriter &writer, const OutputTensor &tensor,
                       bool isFloat, bool asBinary, std::string &binary) {
  writer.beginObject();
  if (!asBinary) {
    writer.key("data");
    if (isFloat)
      writer.numbers(tensor.floats.data(), tensor.floats.size());
    else
      writer.numbers(tensor.integers.data(), tensor.integers.size());
  }
  writer.key("datatype");
  writer.string(isFloat ? "FP32" : "INT64");
  writer.key("name");
  writer.string(tensor.name);
  if (asBinary) {
    size_t bytes = isFloat ? tensor.floats.size() * sizeof(float)
                           : tensor.integers.size() * sizeof(int64_t);
    const char *data =
        isFloat ? reinterpret_cast<const char *>(tensor.floats.data())
                : reinterpret_cast<const char *>(tensor.integers.data());
    binary.append(data, bytes);
    writer.key("parameters");
    writer.beginObject();
    writer.key("binary_data_size");
    writer.number(static_cast<uint64_t>(bytes));
    writer.endObject();
  }
  writer.key("shape");
  writer.numbers(tensor.shape.data(), tensor.shape.size());
  writer.endObject();
}

/// The reply's "parameters": compute and queue times, any stop reason.
void writeReplyParameters(JsonWriter &writer, const InferReply &reply) {
  writer.key("parameters");
  writer.beginObject();
  writer.key("compute_us");
  writer.number(static_cast<float>(reply.computeMicros));
  writer.key("queue_us");
  writer.number(static_cast<float>(reply.queueMicros));
  if (!reply.stopReason.empty()) {
    writer.key("stop_reason");
    writer.string(reply.stopReason);
  }
  writer.endObject();
}

} // namespace

std::string serve::jsonText(const nlohmann::json &value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

HttpReply serve::errorReply(int status, const std::string &message) {
  HttpReply reply;
  reply.status = status;
  reply.body = jsonText(json{{"error", message}});
  return reply;
}

HttpReply serve::encodeInferReply(const InferReply &reply,
                                  const HttpInferRequest &request,
                                  const ModelSignature &signature,
                                  const std::string &modelName,
                                  const std::string &modelVersion) {
  if (!reply.status.isOk())
    return errorReply(httpStatusOf(reply.outcome), reply.status.message());
  // Written straight into the body: a reply's floats as a JSON tree cost
  // more to build and dump than the step that computed them. Keys in the
  // order nlohmann::json writes them (sorted).
  HttpReply http;
  JsonWriter writer(http.body);
  writer.beginObject();
  if (!reply.id.empty()) {
    writer.key("id");
    writer.string(reply.id);
  }
  writer.key("model_name");
  writer.string(modelName);
  writer.key("model_version");
  writer.string(modelVersion);
  writer.key("outputs");
  writer.beginArray();
  std::string binary;
  bool anyBinary = false;
  for (size_t o = 0; o < reply.outputs.size(); ++o) {
    const OutputTensor &tensor = reply.outputs[o];
    bool isFloat = true;
    for (const TensorDescription &description : signature.outputs)
      if (description.name == tensor.name)
        isFloat = isFloatTensorType(description.type);
    bool asBinary = o < request.binaryOutputs.size() ? request.binaryOutputs[o]
                                                     : request.binaryByDefault;
    anyBinary |= asBinary;
    writeOutputTensor(writer, tensor, isFloat, asBinary, binary);
  }
  writer.endArray();
  writeReplyParameters(writer, reply);
  writer.endObject();
  if (anyBinary) {
    http.headerLength = http.body.size();
    http.contentType = "application/octet-stream";
    http.body += binary;
  }
  return http;
}
