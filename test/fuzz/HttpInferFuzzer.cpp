//===- HttpInferFuzzer.cpp - KServe v2 infer bodies, HTTP and gRPC
//---------===//
//
// The bytes as an infer request the way `cellrun serve` receives it, then
// as tensors for the example models (RequestParser::fromTensors). The first
// byte picks the front end: even, an HTTP body whose first line is the
// Inference-Header-Content-Length header ("-" for none); odd, a gRPC
// ModelInferRequest in protobuf wire format. Every input must decode or give
// an error, never crash. scripts/fuzz.sh runs it under libFuzzer; the test
// suite replays its corpus.
//
//===----------------------------------------------------------------------===//
#include "FuzzTargets.h"

#include "GrpcCodec.h"
#include "HttpCodec.h"
#include "cellrun/RequestParser.h"

#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

using namespace cellrun;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const auto parsers = [] {
    // protobuf logs every malformed string field; the fuzzer makes many.
    google::protobuf::SetLogHandler(nullptr);
    std::vector<std::unique_ptr<RequestParser>> made;
    for (const auto &artifact : cellfuzz::exampleArtifacts()) {
      auto parser = RequestParser::create(artifact);
      if (!parser.ok())
        std::abort();
      made.push_back(std::move(parser).value());
    }
    return made;
  }();
  if (size == 0)
    return 0;
  std::optional<serve::InferCall> call;
  std::string_view rest(reinterpret_cast<const char *>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    size_t newline = rest.find('\n');
    std::string_view header =
        newline == std::string_view::npos ? rest : rest.substr(0, newline);
    std::string_view body = newline == std::string_view::npos
                                ? std::string_view()
                                : rest.substr(newline + 1);
    std::optional<std::string> length;
    if (header != "-")
      length = std::string(header);
    auto decoded = serve::decodeInferRequest(body, length);
    if (decoded.ok())
      call = std::move(decoded).value().call;
  } else {
    inference::ModelInferRequest request;
    if (!request.ParseFromArray(rest.data(), static_cast<int>(rest.size())))
      return 0;
    auto decoded = serve::decodeInferRequest(request);
    if (decoded.ok())
      call = std::move(decoded).value();
  }
  if (!call)
    return 0;
  for (const auto &parser : parsers)
    (void)parser->fromTensors(call->inputs, call->options);
  return 0;
}
