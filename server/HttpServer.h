//===- HttpServer.h - The KServe v2 REST front end --------------*- C++ -*-===//
//
// The Open Inference Protocol over HTTP/1.1 (HttpRoutes): health, server
// and model metadata, readiness and infer (JSON and binary tensor data),
// and, on its own port, GET /metrics in the Prometheus text format. Errors
// are {"error": "..."} with 400, 404, 413, 415, 429, 431, 503 or 500.
//
// Event-driven (Boost.Beast on Asio): a few threads serve every connection,
// and a connection waiting for its client or for the engine holds none, so
// slow or idle clients cannot starve others. Each thread runs an event loop
// of its own and new connections go to the loops in turn: a connection's
// work never moves between threads, and an answer from the engine wakes
// only the thread that owns its connection. One more thread accepts the
// connections of every port. Keep-alive and pipelining
// (answers in order); per-connection timeouts for a request's header, its
// body and the wait for the next request; a limit on open connections,
// past which a new one is answered 503 at once and closed; the body limit
// on the decoded body too.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SERVE_HTTPSERVER_H
#define CELLRUN_TOOLS_SERVE_HTTPSERVER_H

#include "HttpConnection.h"
#include "InferenceService.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cellrun::serve {

struct HttpOptions {
  std::string host = "0.0.0.0";
  int port = 8000;        // 0: no REST endpoint
  int metricsPort = 8002; // 0: no metrics endpoint
  size_t maxBodyBytes = 64u << 20;
  /// Threads running the connections (not one a connection), besides the
  /// one that accepts them.
  unsigned threads = 4;
  /// Open connections on the REST port; past it, 503 and close.
  uint32_t maxConnections = 4096;
  /// Seconds a client may take to send a request's header, then its
  /// body, or to start its next request on a kept-alive connection.
  double timeoutSeconds = 30;
};

class HttpServer {
public:
  /// `api`: the routes of the REST port, when not the KServe routes over
  /// `service` (tests wrap those to see what a connection hands them).
  explicit HttpServer(InferenceService &service, HttpRoutes *api = nullptr);
  ~HttpServer();

  /// Binds the ports and starts serving on threads of its own.
  Status start(const HttpOptions &options);
  /// Stops listening; requests being answered finish first, then every
  /// connection closes.
  void stop();
  /// The ports listened on (0: none).
  int port() const { return boundPort_; }
  int metricsPort() const { return boundMetricsPort_; }
  /// Connections open on the REST port now.
  uint32_t openConnections() const { return apiCount_.open; }

  class Listener;

private:
  Status listen(const std::string &host, int port, HttpRoutes &routes,
                ConnectionCount &count, uint32_t maxConnections,
                const char *what);

  InferenceService &service_;
  /// The next loop a new connection goes to (in turn).
  boost::asio::io_context &nextLoop();

  /// One event loop a thread: the first accepts, the others serve the
  /// connections.
  std::vector<std::unique_ptr<boost::asio::io_context>> loops_;
  std::atomic<size_t> nextLoop_{0};
  std::vector<std::thread> threads_;
  std::vector<std::shared_ptr<Listener>> listeners_;
  KServeRoutes api_;
  HttpRoutes *apiRoutes_; // api_, or the routes given
  MetricsRoutes metrics_;
  HttpLimits limits_;
  ConnectionCount apiCount_, metricsCount_;
  /// Every connection made (pruned as they close), to close them on stop.
  std::mutex connectionsMutex_;
  std::vector<std::weak_ptr<HttpConnection>> connections_;
  int boundPort_ = 0, boundMetricsPort_ = 0;
  bool started_ = false;
};

} // namespace cellrun::serve

#endif // CELLRUN_TOOLS_SERVE_HTTPSERVER_H
