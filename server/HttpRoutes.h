//===- HttpRoutes.h - What each HTTP request gets ---------------*- C++ -*-===//
//
// The KServe v2 REST routes (server and model metadata, health, readiness,
// infer with JSON or binary tensors) and the metrics route, apart from the
// connections they arrive on (HttpConnection): a route answers a request
// once, at once or later from another thread (infer answers when the
// engine has the result).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SERVE_HTTPROUTES_H
#define CELLRUN_TOOLS_SERVE_HTTPROUTES_H

#include "InferenceService.h"

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace cellrun::serve {

/// A request as the routes see it: its body already decoded.
struct HttpRequest {
  std::string method; // "GET", "POST", ...
  std::string path;   // percent-decoded, without the query
  std::string body;
  /// Inference-Header-Content-Length, when given.
  std::optional<std::string> inferenceHeaderLength;
  /// x-sequence-id (SessionRouting.h), when given.
  std::optional<std::string> sequenceIdHeader;
  /// When the whole request had been read (refusals are timed from it).
  std::chrono::steady_clock::time_point received;
  /// Cancels the request's work when its client goes away (HttpRoutes::
  /// cancel).
  std::shared_ptr<CancelToken> cancel;
  /// Runs work on the connection's own thread: an inference answer is
  /// encoded there, not on the engine's thread that produced it. Empty: the
  /// work runs at once, on the caller's thread.
  std::function<void(std::function<void()>)> onConnection;
};

struct HttpResponse {
  int status = 200;
  std::string contentType = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

using Respond = std::function<void(HttpResponse)>;

class HttpRoutes {
public:
  virtual ~HttpRoutes() = default;
  /// Answers `request` by calling `respond` exactly once, on any thread.
  virtual void handle(HttpRequest request, Respond respond) = 0;
  /// The client of the request given `token` closed its connection before
  /// the answer: the work for it stops (it is still answered, unread).
  virtual void cancel(const std::shared_ptr<CancelToken> &token) {}
};

/// The inference protocol's routes for `service`.
class KServeRoutes final : public HttpRoutes {
public:
  explicit KServeRoutes(InferenceService &service) : service_(service) {}
  void handle(HttpRequest request, Respond respond) override;
  void cancel(const std::shared_ptr<CancelToken> &token) override {
    service_.cancel(token, "its client closed the connection");
  }

private:
  void infer(HttpRequest &request, const std::string &model,
             const std::string &version, Respond respond);
  InferenceService &service_;
};

/// GET /metrics: the Prometheus text of `service`.
class MetricsRoutes final : public HttpRoutes {
public:
  explicit MetricsRoutes(InferenceService &service) : service_(service) {}
  void handle(HttpRequest request, Respond respond) override;

private:
  InferenceService &service_;
};

/// {"error": message} with `status`.
HttpResponse errorResponse(int status, const std::string &message);

/// `text` with %XX escapes decoded (a bad escape is kept as is).
std::string percentDecode(std::string_view text);

} // namespace cellrun::serve

#endif // CELLRUN_TOOLS_SERVE_HTTPROUTES_H
