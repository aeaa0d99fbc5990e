//===- GrpcCodec.h - KServe v2 gRPC messages to calls and back --*- C++ -*-===//
//
// ModelInferRequest -> InferCall (tensor contents or raw_input_contents)
// and InferReply -> ModelInferResponse (raw_output_contents, as Triton
// answers). Pure functions: the unit tests and fuzzers call them directly.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SERVE_GRPCCODEC_H
#define CELLRUN_TOOLS_SERVE_GRPCCODEC_H

#include "InferenceService.h"

#include "grpc_service.pb.h"

#include <optional>
#include <string>

namespace cellrun::serve {

/// InvalidArgument naming the input or parameter at fault.
/// `sequenceIdHeader`: the call's x-sequence-id metadata (SessionRouting.h).
Result<InferCall>
decodeInferRequest(const inference::ModelInferRequest &in,
                   const std::optional<std::string> &sequenceIdHeader = {});

void encodeInferReply(const InferReply &reply, const ModelSignature &signature,
                      const std::string &modelName,
                      const std::string &modelVersion,
                      inference::ModelInferResponse &out);

} // namespace cellrun::serve

#endif // CELLRUN_TOOLS_SERVE_GRPCCODEC_H
