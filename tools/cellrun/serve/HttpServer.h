//===- HttpServer.h - The KServe v2 REST front end --------------*- C++ -*-===//
//
// The Open Inference Protocol over HTTP/1.1 (cpp-httplib): health, server
// and model metadata, readiness and infer (JSON and binary tensor data),
// and, on its own port, GET /metrics in the Prometheus text format.
// Errors are {"error": "..."} with 400, 404, 413, 429, 503 or 500.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SERVE_HTTPSERVER_H
#define CELLRUN_TOOLS_SERVE_HTTPSERVER_H

#include "InferenceService.h"

#include <memory>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace cellrun::serve {

struct HttpOptions {
  std::string host = "0.0.0.0";
  int port = 8000;        // 0: no REST endpoint
  int metricsPort = 8002; // 0: no metrics endpoint
  size_t maxBodyBytes = 64u << 20;
  unsigned threads = 64; // connections served at once
};

class HttpServer {
public:
  explicit HttpServer(InferenceService &service);
  ~HttpServer();

  /// Binds the ports and starts serving on threads of its own.
  Status start(const HttpOptions &options);
  /// Stops listening; requests being answered finish first.
  void stop();
  /// The ports listened on (0: none).
  int port() const { return boundPort_; }
  int metricsPort() const { return boundMetricsPort_; }

private:
  void addRoutes();
  InferenceService &service_;
  std::unique_ptr<httplib::Server> api_, metrics_;
  std::thread apiThread_, metricsThread_;
  int boundPort_ = 0, boundMetricsPort_ = 0;
};

} // namespace cellrun::serve

#endif // CELLRUN_TOOLS_SERVE_HTTPSERVER_H
