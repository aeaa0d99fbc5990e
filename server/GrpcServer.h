//===- GrpcServer.h - The KServe v2 gRPC front end --------------*- C++ -*-===//
//
// inference.GRPCInferenceService on Debian's gRPC: ServerLive, ServerReady,
// ModelReady, ServerMetadata, ModelMetadata, ModelInfer and the
// bidirectional ModelStreamInfer (replies in completion order, each naming
// its request id; a failed request is a reply with error_message and the
// stream goes on). Errors map to INVALID_ARGUMENT, NOT_FOUND,
// RESOURCE_EXHAUSTED, UNAVAILABLE or INTERNAL.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SERVE_GRPCSERVER_H
#define CELLRUN_TOOLS_SERVE_GRPCSERVER_H

#include "InferenceService.h"

#include <memory>

namespace cellrun::serve {

class GrpcServer {
public:
  explicit GrpcServer(InferenceService &service);
  ~GrpcServer();

  /// Listens on host:port (insecure) with threads of its own.
  Status start(const std::string &host, int port);
  /// Stops listening; calls being answered finish first.
  void stop();

  class Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace cellrun::serve

#endif // CELLRUN_TOOLS_SERVE_GRPCSERVER_H
