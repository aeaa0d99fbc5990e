//===- GrpcCodec.cpp - KServe v2 gRPC messages to calls and back ----------===//
#include "GrpcCodec.h"
#include "SessionRouting.h"

#include <cstring>
#include <string>
#include <vector>

using namespace cellrun;
using namespace cellrun::serve;

namespace {

Status bad(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

template <typename T, typename Repeated>
void pack(const Repeated &values, std::vector<uint8_t> &data) {
  data.resize(values.size() * sizeof(T));
  for (int i = 0; i < values.size(); ++i) {
    T value = static_cast<T>(values.Get(i));
    std::memcpy(data.data() + i * sizeof(T), &value, sizeof(T));
  }
}

/// The typed contents of `input` as packed bytes of its datatype; the
/// element count is checked against the shape by the request's parser.
Status
contentsToBytes(const inference::ModelInferRequest::InferInputTensor &input,
                NamedTensor &tensor) {
  const inference::InferTensorContents &c = input.contents();
  switch (tensor.type) {
  case TensorType::Bool:
    pack<uint8_t>(c.bool_contents(), tensor.data);
    break;
  case TensorType::Int8:
    pack<int8_t>(c.int_contents(), tensor.data);
    break;
  case TensorType::Int16:
    pack<int16_t>(c.int_contents(), tensor.data);
    break;
  case TensorType::Int32:
    pack<int32_t>(c.int_contents(), tensor.data);
    break;
  case TensorType::Int64:
    pack<int64_t>(c.int64_contents(), tensor.data);
    break;
  case TensorType::UInt8:
    pack<uint8_t>(c.uint_contents(), tensor.data);
    break;
  case TensorType::UInt16:
    pack<uint16_t>(c.uint_contents(), tensor.data);
    break;
  case TensorType::UInt32:
    pack<uint32_t>(c.uint_contents(), tensor.data);
    break;
  case TensorType::UInt64:
    pack<uint64_t>(c.uint64_contents(), tensor.data);
    break;
  case TensorType::Fp32:
    pack<float>(c.fp32_contents(), tensor.data);
    break;
  case TensorType::Fp64:
    pack<double>(c.fp64_contents(), tensor.data);
    break;
  case TensorType::Fp16:
  case TensorType::Bytes:
    break; // no typed contents: refused by type further on
  }
  return Status::ok();
}

/// The typed contents field a datatype's values go in.
const char *contentsField(TensorType type) {
  switch (type) {
  case TensorType::Bool:
    return "bool_contents";
  case TensorType::Int8:
  case TensorType::Int16:
  case TensorType::Int32:
    return "int_contents";
  case TensorType::Int64:
    return "int64_contents";
  case TensorType::UInt8:
  case TensorType::UInt16:
  case TensorType::UInt32:
    return "uint_contents";
  case TensorType::UInt64:
    return "uint64_contents";
  case TensorType::Fp32:
    return "fp32_contents";
  case TensorType::Fp64:
    return "fp64_contents";
  case TensorType::Fp16:
  case TensorType::Bytes:
    break;
  }
  return "";
}

/// The typed contents fields `contents` fills, by name.
std::vector<std::string>
filledFields(const inference::InferTensorContents &contents) {
  std::vector<std::string> filled;
  auto note = [&](int size, const char *name) {
    if (size > 0)
      filled.push_back(name);
  };
  note(contents.bool_contents_size(), "bool_contents");
  note(contents.int_contents_size(), "int_contents");
  note(contents.int64_contents_size(), "int64_contents");
  note(contents.uint_contents_size(), "uint_contents");
  note(contents.uint64_contents_size(), "uint64_contents");
  note(contents.fp32_contents_size(), "fp32_contents");
  note(contents.fp64_contents_size(), "fp64_contents");
  note(contents.bytes_contents_size(), "bytes_contents");
  return filled;
}

/// One request parameter into `call`: max_decode_length, deadline_ms,
/// sequence_id, sequence_start or sequence_end; any other is refused.
Status decodeParameter(const std::string &key,
                       const inference::InferParameter &parameter,
                       const std::string &where, InferCall &call) {
  if (key == "max_decode_length") {
    if (parameter.parameter_choice_case() !=
            inference::InferParameter::kInt64Param ||
        parameter.int64_param() < 1)
      return bad(where + ": max_decode_length must be an int64 >= 1");
    call.options.maxDecodeLength = parameter.int64_param();
  } else if (key == "deadline_ms") {
    double value = parameter.parameter_choice_case() ==
                           inference::InferParameter::kDoubleParam
                       ? parameter.double_param()
                   : parameter.parameter_choice_case() ==
                           inference::InferParameter::kInt64Param
                       ? static_cast<double>(parameter.int64_param())
                       : -1;
    if (value < 0)
      return bad(where + ": deadline_ms must be a number >= 0");
    call.options.deadlineMicros = value * 1000;
  } else if (key == "sequence_id") {
    int64_t id = parameter.parameter_choice_case() ==
                         inference::InferParameter::kInt64Param
                     ? parameter.int64_param()
                 : parameter.parameter_choice_case() ==
                         inference::InferParameter::kUint64Param
                     ? static_cast<int64_t>(parameter.uint64_param())
                     : -1;
    if (id < 1)
      return bad(where + ": sequence_id must be an integer >= 1");
    call.options.session.id = static_cast<uint64_t>(id);
  } else if (key == "sequence_start" || key == "sequence_end") {
    if (parameter.parameter_choice_case() !=
        inference::InferParameter::kBoolParam)
      return bad(where + ": " + key + " must be a bool");
    (key == "sequence_start" ? call.options.session.start
                             : call.options.session.end) =
        parameter.bool_param();
  } else {
    return bad(where + ": unknown parameter \"" + key +
               "\" (known: max_decode_length, deadline_ms, sequence_id, "
               "sequence_start, sequence_end)");
  }
  return Status::ok();
}

/// Input `i` of `in` as a tensor: its name, datatype, shape and values,
/// from raw_input_contents when `raw` or else from its typed contents.
Result<NamedTensor> decodeInput(const inference::ModelInferRequest &in, int i,
                                const std::string &where, bool raw) {
  const auto &input = in.inputs(i);
  NamedTensor tensor;
  tensor.name = input.name();
  std::string at = where + ": input '" + tensor.name + "'";
  if (!input.parameters().empty())
    return bad(at + ": takes no parameters");
  auto type = parseTensorType(input.datatype());
  if (!type)
    return bad(at + ": unknown datatype \"" + input.datatype() + "\"");
  tensor.type = *type;
  int64_t elements = 1;
  for (int64_t extent : input.shape()) {
    if (extent < 0 || extent > (int64_t(1) << 31))
      return bad(at + ": shape dimensions must be from 0 to 2^31");
    tensor.shape.push_back(extent);
    elements *= extent;
    if (elements > (int64_t(1) << 31))
      return bad(at + ": the shape has more than 2^31 elements");
  }
  // Exactly one way to give the values: raw bytes, or the typed field
  // of the datatype.
  std::vector<std::string> filled = filledFields(input.contents());
  if (raw && !filled.empty())
    return bad(at + ": give the values in raw_input_contents or in " +
               filled[0] + ", not both");
  if (raw) {
    const std::string &bytes = in.raw_input_contents(i);
    tensor.data.assign(bytes.begin(), bytes.end());
  } else {
    std::string field = contentsField(tensor.type);
    for (const std::string &given : filled)
      if (given != field)
        return bad(at + ": a " + input.datatype() + " tensor's values go in " +
                   (field.empty() ? "raw_input_contents" : field) + ", not " +
                   given);
    if (Status status = contentsToBytes(input, tensor); !status.isOk())
      return bad(at + ": " + status.message());
  }
  return tensor;
}

} // namespace

Result<InferCall>
serve::decodeInferRequest(const inference::ModelInferRequest &in,
                          const std::optional<std::string> &sequenceIdHeader) {
  InferCall call;
  call.modelName = in.model_name();
  call.modelVersion = in.model_version();
  call.id = in.id();
  std::string where = "request" + (call.id.empty() ? "" : " " + call.id);
  for (const auto &[key, parameter] : in.parameters())
    if (Status status = decodeParameter(key, parameter, where, call);
        !status.isOk())
      return status;
  if (Status status =
          applySequenceIdHeader(sequenceIdHeader, where, call.options.session);
      !status.isOk())
    return status;
  bool raw = in.raw_input_contents_size() > 0;
  if (raw && in.raw_input_contents_size() != in.inputs_size())
    return bad(where + ": " + std::to_string(in.raw_input_contents_size()) +
               " raw_input_contents for " + std::to_string(in.inputs_size()) +
               " inputs (one each, in input order)");
  for (int i = 0; i < in.inputs_size(); ++i) {
    auto tensor = decodeInput(in, i, where, raw);
    if (!tensor.ok())
      return tensor.status();
    call.inputs.push_back(std::move(tensor).value());
  }
  for (const auto &output : in.outputs()) {
    if (!output.parameters().empty())
      return bad(where + ": output '" + output.name() +
                 "': takes no parameters");
    call.outputs.push_back(output.name());
  }
  return call;
}

void serve::encodeInferReply(const InferReply &reply,
                             const ModelSignature &signature,
                             const std::string &modelName,
                             const std::string &modelVersion,
                             inference::ModelInferResponse &out) {
  out.set_model_name(modelName);
  out.set_model_version(modelVersion);
  out.set_id(reply.id);
  auto &parameters = *out.mutable_parameters();
  parameters["queue_us"].set_double_param(reply.queueMicros);
  parameters["compute_us"].set_double_param(reply.computeMicros);
  if (!reply.stopReason.empty())
    parameters["stop_reason"].set_string_param(reply.stopReason);
  for (const OutputTensor &tensor : reply.outputs) {
    bool isFloat = true;
    for (const TensorDescription &description : signature.outputs)
      if (description.name == tensor.name)
        isFloat = isFloatTensorType(description.type);
    auto *output = out.add_outputs();
    output->set_name(tensor.name);
    output->set_datatype(isFloat ? "FP32" : "INT64");
    for (int64_t extent : tensor.shape)
      output->add_shape(extent);
    std::string *raw = out.add_raw_output_contents();
    if (isFloat)
      raw->assign(reinterpret_cast<const char *>(tensor.floats.data()),
                  tensor.floats.size() * sizeof(float));
    else
      raw->assign(reinterpret_cast<const char *>(tensor.integers.data()),
                  tensor.integers.size() * sizeof(int64_t));
  }
}
