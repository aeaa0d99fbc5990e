//===- HttpServer.cpp - The KServe v2 REST front end ----------------------===//
#include "HttpServer.h"
#include "HttpCodec.h"
#include "ServerInfo.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <sys/socket.h>

#include <chrono>

#include <future>

using namespace cellrun;
using namespace cellrun::serve;
using json = nlohmann::json;

namespace {

void send(httplib::Response &response, const HttpReply &reply) {
  response.status = reply.status;
  if (reply.headerLength)
    response.set_header("Inference-Header-Content-Length",
                        std::to_string(*reply.headerLength));
  response.set_content(reply.body, reply.contentType.c_str());
}

void sendJson(httplib::Response &response, int status, const json &body) {
  response.status = status;
  response.set_content(jsonText(body), "application/json");
}

json tensorList(const std::vector<TensorDescription> &tensors) {
  json list = json::array();
  for (const TensorDescription &tensor : tensors)
    list.push_back({{"name", tensor.name},
                    {"datatype", tensorTypeName(tensor.type)},
                    {"shape", tensor.shape}});
  return list;
}

std::string versionOf(const httplib::Request &request) {
  return request.matches.size() > 2 ? request.matches[2].str() : "";
}

constexpr const char *kModelPath =
    R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";

} // namespace

HttpServer::HttpServer(InferenceService &service) : service_(service) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::addRoutes() {
  InferenceService &service = service_;
  httplib::Server &api = *api_;
  api.Get("/v2", [](const httplib::Request &, httplib::Response &res) {
    sendJson(res, 200,
             {{"name", kServerName},
              {"version", kServerVersion},
              {"extensions", serverExtensions()}});
  });
  api.Get("/v2/health/live", [&service](const httplib::Request &,
                                        httplib::Response &res) {
    sendJson(res, service.live() ? 200 : 503, {{"live", service.live()}});
  });
  api.Get("/v2/health/ready", [&service](const httplib::Request &,
                                         httplib::Response &res) {
    sendJson(res, service.ready() ? 200 : 503, {{"ready", service.ready()}});
  });
  api.Get(kModelPath, [&service](const httplib::Request &req,
                                 httplib::Response &res) {
    if (Status status = service.checkModel(req.matches[1], versionOf(req));
        !status.isOk())
      return send(res, errorReply(404, status.message()));
    sendJson(res, 200,
             {{"name", service.modelName()},
              {"versions", {service.modelVersion()}},
              {"platform", kPlatform},
              {"parameters", {{"structure", service.structureName()}}},
              {"inputs", tensorList(service.signature().inputs)},
              {"outputs", tensorList(service.signature().outputs)}});
  });
  api.Get(
      std::string(kModelPath) + "/ready",
      [&service](const httplib::Request &req, httplib::Response &res) {
        if (Status status = service.checkModel(req.matches[1], versionOf(req));
            !status.isOk())
          return send(res, errorReply(404, status.message()));
        sendJson(res, service.ready() ? 200 : 503,
                 {{"name", service.modelName()}, {"ready", service.ready()}});
      });
  api.Post(std::string(kModelPath) + "/infer", [&service](
                                                   const httplib::Request &req,
                                                   httplib::Response &res) {
    auto received = std::chrono::steady_clock::now();
    auto observeRefusal = [&service, received] {
      service.metrics().observeRefusal(
          std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                        received)
              .count());
    };
    // Overloaded or stopping: refuse before the body is decoded.
    if (service.refuseEarly(req.matches[1], versionOf(req), "",
                            [&res](InferReply reply) {
                              send(res, errorReply(httpStatusOf(reply.outcome),
                                                   reply.status.message()));
                            }))
      return observeRefusal();
    std::optional<std::string> headerLength;
    if (req.has_header("Inference-Header-Content-Length"))
      headerLength = req.get_header_value("Inference-Header-Content-Length");
    auto decoded = decodeInferRequest(req.body, headerLength);
    if (!decoded.ok()) {
      service.metrics().countRequest(Outcome::Invalid);
      return send(res, errorReply(400, decoded.status().message()));
    }
    HttpInferRequest &request = decoded.value();
    request.call.modelName = req.matches[1];
    request.call.modelVersion = versionOf(req);
    std::promise<InferReply> promise;
    std::future<InferReply> future = promise.get_future();
    service.infer(request.call, [&promise](InferReply reply) {
      promise.set_value(std::move(reply));
    });
    InferReply reply = future.get();
    bool refused =
        reply.refusedAtOnce && (reply.outcome == Outcome::Overload ||
                                reply.outcome == Outcome::Unavailable);
    send(res, encodeInferReply(std::move(reply), request, service.signature(),
                               service.modelName(), service.modelVersion()));
    if (refused)
      observeRefusal();
  });
  // Unknown paths and refusals by the library (413) get a JSON body too.
  api.set_error_handler([](const httplib::Request &req,
                           httplib::Response &res) {
    if (!res.body.empty())
      return;
    std::string message =
        res.status == 404 ? "no such endpoint: " + req.method + " " + req.path
        : res.status == 413
            ? "the request body is larger than the server's limit "
              "(--max-body-bytes)"
            : "HTTP error " + std::to_string(res.status);
    res.set_content(jsonText(json{{"error", message}}), "application/json");
  });
}

namespace {

/// Binds `server` to host:port and listens with the system's largest
/// backlog. Debian's cpp-httplib listens with a backlog of 5
/// (CPPHTTPLIB_LISTEN_BACKLOG, fixed when the library was built): a burst of
/// new connections overflowed it, and clients saw their requests fail after
/// the SYN-ACK retransmit, a second later (found by cellrun-soak). The
/// socket-options hook sees the listening socket; Linux takes a second
/// listen() on it as a new backlog.
bool bindWithFullBacklog(httplib::Server &server, const std::string &host,
                         int port) {
  int listening = -1;
  server.set_socket_options([&listening](socket_t socket) {
    httplib::default_socket_options(socket);
    listening = socket;
  });
  bool bound = server.bind_to_port(host.c_str(), port);
  server.set_socket_options(httplib::default_socket_options);
  return bound && listening >= 0 && ::listen(listening, SOMAXCONN) == 0;
}

} // namespace

Status HttpServer::start(const HttpOptions &options) {
  if (options.port > 0) {
    api_ = std::make_unique<httplib::Server>();
    unsigned threads = options.threads;
    api_->new_task_queue = [threads] {
      return new httplib::ThreadPool(threads);
    };
    api_->set_payload_max_length(options.maxBodyBytes);
    api_->set_keep_alive_max_count(100000);
    // Replies go out as header and body writes: without TCP_NODELAY,
    // Nagle's algorithm and the client's delayed ACK add ~40 ms to each.
    api_->set_tcp_nodelay(true);
    addRoutes();
    if (!bindWithFullBacklog(*api_, options.host, options.port))
      return Status(StatusCode::Unavailable,
                    "cannot listen on " + options.host + ":" +
                        std::to_string(options.port) +
                        " for HTTP (in use, or not allowed)");
    boundPort_ = options.port;
    apiThread_ = std::thread([this] { api_->listen_after_bind(); });
  }
  if (options.metricsPort > 0) {
    metrics_ = std::make_unique<httplib::Server>();
    metrics_->set_tcp_nodelay(true);
    InferenceService &service = service_;
    metrics_->Get("/metrics",
                  [&service](const httplib::Request &, httplib::Response &res) {
                    res.set_content(service.renderMetrics(),
                                    "text/plain; version=0.0.4; charset=utf-8");
                  });
    if (!bindWithFullBacklog(*metrics_, options.host, options.metricsPort))
      return Status(StatusCode::Unavailable,
                    "cannot listen on " + options.host + ":" +
                        std::to_string(options.metricsPort) +
                        " for metrics (in use, or not allowed)");
    boundMetricsPort_ = options.metricsPort;
    metricsThread_ = std::thread([this] { metrics_->listen_after_bind(); });
  }
  return Status::ok();
}

void HttpServer::stop() {
  for (auto *server : {api_.get(), metrics_.get()})
    if (server)
      server->stop();
  for (std::thread *thread : {&apiThread_, &metricsThread_})
    if (thread->joinable())
      thread->join();
}
