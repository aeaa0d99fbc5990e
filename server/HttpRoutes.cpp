//===- HttpRoutes.cpp - What each HTTP request gets -----------------------===//
#include "HttpRoutes.h"
#include "HttpCodec.h"
#include "ServerInfo.h"
#include "SessionRouting.h"

#include <nlohmann/json.hpp>

#include <memory>

using namespace cellrun;
using namespace cellrun::serve;
using json = nlohmann::json;

HttpResponse cellrun::serve::errorResponse(int status,
                                           const std::string &message) {
  HttpResponse response;
  response.status = status;
  response.body = jsonText(json{{"error", message}});
  return response;
}

std::string cellrun::serve::percentDecode(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 &&
        hex(text[i + 2]) >= 0) {
      out.push_back(
          static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

namespace {

HttpResponse jsonResponse(int status, const json &body) {
  HttpResponse response;
  response.status = status;
  response.body = jsonText(body);
  return response;
}

HttpResponse fromReply(HttpReply &&reply) {
  HttpResponse response;
  response.status = reply.status;
  response.contentType = std::move(reply.contentType);
  response.body = std::move(reply.body); // an answer's body, not copied
  if (reply.headerLength)
    response.headers.emplace_back("Inference-Header-Content-Length",
                                  std::to_string(*reply.headerLength));
  return response;
}

json tensorList(const std::vector<TensorDescription> &tensors) {
  json list = json::array();
  for (const TensorDescription &tensor : tensors)
    list.push_back({{"name", tensor.name},
                    {"datatype", tensorTypeName(tensor.type)},
                    {"shape", tensor.shape}});
  return list;
}

/// The path's segments, each percent-decoded ("/v2/models/m" -> v2,
/// models, m).
std::vector<std::string> segments(const std::string &path) {
  std::vector<std::string> parts;
  size_t at = 1;
  while (at <= path.size()) {
    size_t slash = std::min(path.find('/', at), path.size());
    parts.push_back(percentDecode(path.substr(at, slash - at)));
    at = slash + 1;
  }
  return parts;
}

} // namespace

void KServeRoutes::handle(HttpRequest request, Respond respond) {
  std::vector<std::string> parts = segments(request.path);
  auto notFound = [&] {
    respond(errorResponse(404, "no such endpoint: " + request.method + " " +
                                   request.path));
  };
  bool get = request.method == "GET", post = request.method == "POST";
  if (parts.empty() || parts[0] != "v2")
    return notFound();
  if (parts.size() == 1 && get)
    return respond(jsonResponse(200, {{"name", kServerName},
                                      {"version", kServerVersion},
                                      {"extensions", serverExtensions()}}));
  if (parts.size() == 3 && parts[1] == "health" && get) {
    if (parts[2] == "live")
      return respond(jsonResponse(service_.live() ? 200 : 503,
                                  {{"live", service_.live()}}));
    if (parts[2] == "ready")
      return respond(jsonResponse(service_.ready() ? 200 : 503,
                                  {{"ready", service_.ready()}}));
    return notFound();
  }
  // /v2/models/NAME[/versions/VERSION][/ready | /infer]
  if (parts.size() < 3 || parts[1] != "models" || parts[2].empty())
    return notFound();
  std::string model = parts[2], version;
  size_t next = 3;
  if (parts.size() >= 5 && parts[3] == "versions" && !parts[4].empty()) {
    version = parts[4];
    next = 5;
  }
  std::string action = next < parts.size() ? parts[next] : "";
  if (next + 1 < parts.size() || (next < parts.size() && action.empty()))
    return notFound();
  if (action.empty() && get) {
    if (Status status = service_.checkModel(model, version); !status.isOk())
      return respond(errorResponse(404, status.message()));
    return respond(jsonResponse(
        200, {{"name", service_.modelName()},
              {"versions", {service_.modelVersion()}},
              {"platform", kPlatform},
              {"parameters", {{"structure", service_.structureName()}}},
              {"inputs", tensorList(service_.signature().inputs)},
              {"outputs", tensorList(service_.signature().outputs)}}));
  }
  if (action == "ready" && get) {
    if (Status status = service_.checkModel(model, version); !status.isOk())
      return respond(errorResponse(404, status.message()));
    return respond(jsonResponse(
        service_.ready() ? 200 : 503,
        {{"name", service_.modelName()}, {"ready", service_.ready()}}));
  }
  if (action == "infer" && post)
    return infer(request, model, version, std::move(respond));
  notFound();
}

void KServeRoutes::infer(HttpRequest &request, const std::string &model,
                         const std::string &version, Respond respond) {
  InferenceService &service = service_;
  auto received = request.received;
  auto observeRefusal = [&service, received] {
    service.metrics().observeRefusal(
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      received)
            .count());
  };
  // Overloaded or stopping: refuse before the body is decoded.
  if (service.refuseEarly(model, version, "", [&respond](InferReply reply) {
        respond(
            errorResponse(httpStatusOf(reply.outcome), reply.status.message()));
      }))
    return observeRefusal();
  auto decoded = decodeInferRequest(request.body, request.inferenceHeaderLength,
                                    request.sequenceIdHeader);
  if (!decoded.ok()) {
    service.metrics().countRequest(Outcome::Invalid);
    return respond(errorResponse(400, decoded.status().message()));
  }
  // The tensors go to the engine; what the reply's encoder reads (which
  // outputs go back binary) stays here until the reply comes.
  auto call = std::make_shared<HttpInferRequest>(std::move(decoded).value());
  uint64_t session = call->call.options.session.id;
  InferCall inputs = std::move(call->call);
  inputs.cancel = request.cancel;
  inputs.modelName = model;
  inputs.modelVersion = version;
  // The reply is encoded on the connection's thread: the engine's thread,
  // which answers, only hands it over (JSON of a hidden-1024 LSTM's outputs
  // takes about a millisecond to write).
  // Held once: the engine's thread hands over pointers, copies nothing.
  auto answer = std::make_shared<std::function<void(InferReply)>>(
      [&service, call, session, respond = std::move(respond),
       observeRefusal](InferReply reply) {
        bool refused =
            reply.refusedAtOnce && (reply.outcome == Outcome::Overload ||
                                    reply.outcome == Outcome::Unavailable);
        HttpResponse response = fromReply(
            encodeInferReply(std::move(reply), *call, service.signature(),
                             service.modelName(), service.modelVersion()));
        // The session's id where a proxy sees it, as the request may have sent.
        if (session != 0)
          response.headers.emplace_back(kSequenceIdHeader,
                                        std::to_string(session));
        respond(std::move(response));
        if (refused)
          observeRefusal();
      });
  service.infer(
      std::move(inputs),
      [answer, onConnection = request.onConnection](InferReply reply) {
        if (!onConnection)
          return (*answer)(std::move(reply));
        // std::function copies what it holds: the reply is shared.
        auto held = std::make_shared<InferReply>(std::move(reply));
        onConnection([answer, held] { (*answer)(std::move(*held)); });
      });
}

void MetricsRoutes::handle(HttpRequest request, Respond respond) {
  if (request.method != "GET" || request.path != "/metrics")
    return respond(errorResponse(404, "no such endpoint: " + request.method +
                                          " " + request.path));
  HttpResponse response;
  response.contentType = "text/plain; version=0.0.4; charset=utf-8";
  response.body = service_.renderMetrics();
  respond(std::move(response));
}
