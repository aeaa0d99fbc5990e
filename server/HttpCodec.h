//===- HttpCodec.h - KServe v2 REST bodies, JSON and binary -----*- C++ -*-===//
//
// Decoding of an infer request body and encoding of its reply, per the Open
// Inference Protocol's REST binding with the binary tensor data extension:
// the body is a JSON header, optionally followed by the raw bytes of inputs
// that say `"parameters": {"binary_data_size": N}`, in input order; the
// header's length is the `Inference-Header-Content-Length` HTTP header.
// Outputs come back as JSON `data` or, when asked for (`binary_data` on
// the output, or `binary_data_output` on the request), as raw bytes after
// the JSON. Pure functions of their inputs: the fuzzers and unit tests call
// them without a server.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SERVE_HTTPCODEC_H
#define CELLRUN_TOOLS_SERVE_HTTPCODEC_H

#include "InferenceService.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace cellrun::serve {

struct HttpInferRequest {
  InferCall call;
  /// Per requested output (call.outputs), whether it goes back binary.
  std::vector<bool> binaryOutputs;
  bool binaryByDefault = false; // outputs not listed, or listed without it
};

/// Decodes `body`; `headerLength` is the Inference-Header-Content-Length
/// header's text when present, `sequenceIdHeader` the x-sequence-id
/// header's (SessionRouting.h). InvalidArgument naming the member, input or
/// byte offset at fault.
Result<HttpInferRequest>
decodeInferRequest(std::string_view body,
                   const std::optional<std::string> &headerLength,
                   const std::optional<std::string> &sequenceIdHeader = {});

struct HttpReply {
  int status = 200;
  std::string body;
  std::string contentType = "application/json";
  /// Set when binary output data follows the JSON header.
  std::optional<size_t> headerLength;
};

HttpReply encodeInferReply(const InferReply &reply,
                           const HttpInferRequest &request,
                           const ModelSignature &signature,
                           const std::string &modelName,
                           const std::string &modelVersion);

/// JSON text that never throws: bytes that are not UTF-8 (a model name
/// from the URL, a parser's message quoting the body) become U+FFFD.
std::string jsonText(const nlohmann::json &value);

/// {"error": message} with `status`.
HttpReply errorReply(int status, const std::string &message);

} // namespace cellrun::serve

#endif // CELLRUN_TOOLS_SERVE_HTTPCODEC_H
