//===- ServerLoad.cpp - The same open-loop load against a server ----------===//
#include "ServerLoad.h"

#include "grpc_service.grpc.pb.h"

#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

using namespace cellrun;
using namespace cellrun::loadgen;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

const char *datatypeOf(TensorType type) {
  return isIntegerTensorType(type) ? "INT64" : "FP32";
}

/// One input's tensor over `items` (steps, or a tree's leaves): each
/// item's value of `input`, a scalar or a row.
json tensorOf(const TensorDescription &input, const std::vector<json> &values,
              int64_t rowSize) {
  json data = json::array();
  for (const json &value : values) {
    if (value.is_array())
      for (const json &element : value)
        data.push_back(element);
    else
      data.push_back(value);
  }
  json shape = json::array({static_cast<int64_t>(values.size())});
  if (rowSize != 1)
    for (size_t d = 1; d < input.shape.size(); ++d)
      shape.push_back(input.shape[d]);
  return {{"name", input.name},
          {"datatype", datatypeOf(input.type)},
          {"shape", shape},
          {"data", data}};
}

} // namespace

Result<json> cellrun::loadgen::kserveBody(const json &line,
                                          const ModelSignature &signature) {
  std::vector<const TensorDescription *> inputs;
  for (const TensorDescription &input : signature.inputs)
    if (input.name != "children")
      inputs.push_back(&input);
  auto rowSize = [](const TensorDescription &input) {
    int64_t size = 1;
    for (size_t d = 1; d < input.shape.size(); ++d)
      size *= input.shape[d];
    return size;
  };
  json body = {{"id", line.value("id", "")}, {"inputs", json::array()}};
  if (line.contains("nodes")) {
    // children [N, arity] (-1 for a leaf's row); each leaf input with a row
    // per leaf and each internal input ("internal_<name>") a row per
    // internal node, in node order.
    int64_t arity = 2;
    for (const TensorDescription &input : signature.inputs)
      if (input.name == "children" && input.shape.size() == 2)
        arity = input.shape[1];
    json children = json::array();
    std::vector<json> leaves, internals;
    for (const json &node : line["nodes"]) {
      if (node.contains("children")) {
        for (const json &child : node["children"])
          children.push_back(child);
        internals.push_back(node);
      } else {
        for (int64_t k = 0; k < arity; ++k)
          children.push_back(-1);
        leaves.push_back(node);
      }
    }
    body["inputs"].push_back(
        {{"name", "children"},
         {"datatype", "INT64"},
         {"shape", {static_cast<int64_t>(children.size()) / arity, arity}},
         {"data", children}});
    const std::string prefix = "internal_";
    for (const TensorDescription *input : inputs) {
      bool internal = input->name.rfind(prefix, 0) == 0;
      std::string key =
          internal ? input->name.substr(prefix.size()) : input->name;
      std::vector<json> values;
      for (const json &node : internal ? internals : leaves)
        values.push_back(node.contains("token") ? node["token"]
                                                : node.value(key, json()));
      body["inputs"].push_back(tensorOf(*input, values, rowSize(*input)));
    }
  } else if (line.contains("tokens")) {
    if (inputs.size() != 1)
      return Status(StatusCode::InvalidArgument,
                    "tokens for a model with " + std::to_string(inputs.size()) +
                        " inputs");
    std::vector<json> values(line["tokens"].begin(), line["tokens"].end());
    body["inputs"].push_back(tensorOf(*inputs[0], values, 1));
  } else if (line.contains("steps")) {
    for (const TensorDescription *input : inputs) {
      std::vector<json> values;
      for (const json &step : line["steps"])
        values.push_back(step.value(input->name, json()));
      body["inputs"].push_back(tensorOf(*input, values, rowSize(*input)));
    }
  } else {
    return Status(StatusCode::InvalidArgument,
                  "a request line with no tokens, steps or nodes");
  }
  if (line.contains("max_decode_length"))
    body["parameters"] = {{"max_decode_length", line["max_decode_length"]}};
  return body;
}

namespace {

/// The KServe JSON body as a gRPC ModelInferRequest (typed contents).
inference::ModelInferRequest grpcRequestOf(const json &body,
                                           const std::string &model) {
  inference::ModelInferRequest request;
  request.set_model_name(model);
  request.set_id(body.value("id", ""));
  for (const json &input : body["inputs"]) {
    auto *tensor = request.add_inputs();
    tensor->set_name(input["name"].get<std::string>());
    std::string datatype = input["datatype"].get<std::string>();
    tensor->set_datatype(datatype);
    for (const json &dim : input["shape"])
      tensor->add_shape(dim.get<int64_t>());
    for (const json &value : input["data"]) {
      if (datatype == "INT64")
        tensor->mutable_contents()->add_int64_contents(value.get<int64_t>());
      else
        tensor->mutable_contents()->add_fp32_contents(value.get<float>());
    }
  }
  if (body.contains("parameters"))
    for (const auto &[key, value] : body["parameters"].items()) {
      if (value.is_number_integer())
        (*request.mutable_parameters())[key].set_int64_param(
            value.get<int64_t>());
      else
        (*request.mutable_parameters())[key].set_double_param(
            value.get<double>());
    }
  return request;
}

/// The trace's requests, converted before the load: HTTP bodies for an
/// http:// target, gRPC requests for a grpc:// one (the other stays empty).
struct PreparedRequests {
  std::vector<std::string> bodies;
  std::vector<inference::ModelInferRequest> grpcRequests;
};

/// Converts each trace entry's request line into `prepared`, with the
/// deadline parameter when one is set; the first line that does not convert
/// fails the run.
Status prepareRequests(const ServerOptions &options,
                       const std::vector<std::string> &lines,
                       const ModelSignature &signature,
                       const std::vector<TraceEntry> &trace, bool grpcTarget,
                       PreparedRequests &prepared) {
  prepared.bodies.resize(grpcTarget ? 0 : trace.size());
  prepared.grpcRequests.resize(grpcTarget ? trace.size() : 0);
  for (size_t k = 0; k < trace.size(); ++k) {
    auto body = kserveBody(json::parse(lines.at(trace[k].request)), signature);
    if (!body.ok())
      return body.status();
    if (options.deadlineMs > 0)
      body.value()["parameters"]["deadline_ms"] = options.deadlineMs;
    if (grpcTarget)
      prepared.grpcRequests[k] = grpcRequestOf(body.value(), options.model);
    else
      prepared.bodies[k] = body.value().dump();
  }
  return Status::ok();
}

/// Unavailable unless the gRPC server behind `stub` answers ModelReady for
/// the model within 10 seconds.
Status checkGrpcModelReady(const ServerOptions &options,
                           inference::GRPCInferenceService::Stub &stub) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  inference::ModelReadyRequest ask;
  ask.set_name(options.model);
  inference::ModelReadyResponse ready;
  grpc::Status status = stub.ModelReady(&context, ask, &ready);
  if (!status.ok() || !ready.ready())
    return Status(
        StatusCode::Unavailable,
        options.url + " does not serve a ready model '" + options.model +
            "' (ModelReady: " +
            (status.ok() ? std::string("not ready") : status.error_message()) +
            ")");
  return Status::ok();
}

/// Unavailable unless the HTTP server answers 200 to the model's ready GET.
Status checkHttpModelReady(const ServerOptions &options) {
  httplib::Client probe(options.url);
  auto ready = probe.Get("/v2/models/" + options.model + "/ready");
  if (!ready || ready->status != 200)
    return Status(StatusCode::Unavailable,
                  options.url + " does not serve a ready model '" +
                      options.model + "' (GET /v2/models/" + options.model +
                      "/ready: " +
                      (ready ? std::to_string(ready->status)
                             : httplib::to_string(ready.error())) +
                      ")");
  return Status::ok();
}

/// Whether a request that arrived at `timing.arrival` and finished at
/// `finished` (seconds) was late by the bench's clock (from the scheduled
/// arrival), as the engine counts it in-process from the submission.
bool missedDeadline(const RequestTiming &timing, double finished,
                    double deadlineMs) {
  return deadlineMs > 0 && (finished - timing.arrival) * 1e3 > deadlineMs;
}

/// `timing` of a gRPC call that ended at `finished`: RESOURCE_EXHAUSTED and
/// UNAVAILABLE are drops, other errors failures.
void recordGrpcReply(const grpc::Status &status,
                     const inference::ModelInferResponse &reply,
                     double finished, double deadlineMs,
                     RequestTiming &timing) {
  if (status.ok()) {
    timing.ok = true;
    timing.finished = finished;
    timing.missedDeadline = missedDeadline(timing, finished, deadlineMs);
    auto compute = reply.parameters().find("compute_us");
    timing.started = compute != reply.parameters().end()
                         ? finished - compute->second.double_param() * 1e-6
                         : -1;
  } else {
    timing.dropped =
        status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED ||
        status.error_code() == grpc::StatusCode::UNAVAILABLE;
    timing.finished = timing.dropped ? -1 : finished;
  }
}

/// `timing` of an HTTP POST that ended at `finished`: 429 and 503 are
/// drops, other errors failures.
void recordHttpReply(const httplib::Result &reply, double finished,
                     double deadlineMs, RequestTiming &timing) {
  timing.finished = finished;
  if (reply && reply->status == 200) {
    timing.ok = true;
    timing.missedDeadline = missedDeadline(timing, finished, deadlineMs);
    json parsed = json::parse(reply->body, nullptr, false);
    double compute = -1;
    if (parsed.is_object() && parsed.contains("parameters") &&
        parsed["parameters"].is_object())
      compute = parsed["parameters"].value("compute_us", -1.0);
    timing.started = compute >= 0 ? finished - compute * 1e-6 : -1;
  } else {
    timing.dropped = reply && (reply->status == 429 || reply->status == 503);
    timing.finished = timing.dropped ? -1 : finished;
  }
}

/// The requests due to go out, in arrival order: the sender pushes each at
/// its arrival time and the connections' workers take them.
class DueQueue {
public:
  void push(size_t k) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(k);
    }
    due_.notify_one();
  }

  /// No more requests: the workers drain the queue and stop.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sending_ = false;
    }
    due_.notify_all();
  }

  /// The next due request, waiting for one; none once closed and drained.
  std::optional<size_t> next() {
    std::unique_lock<std::mutex> lock(mutex_);
    due_.wait(lock, [&] { return !queue_.empty() || !sending_; });
    if (queue_.empty())
      return std::nullopt;
    size_t k = queue_.front();
    queue_.pop_front();
    return k;
  }

private:
  std::mutex mutex_;
  std::condition_variable due_;
  std::deque<size_t> queue_;
  bool sending_ = true;
};

/// What the workers of one run share.
struct LoadState {
  const ServerOptions &options;
  bool grpcTarget;
  const PreparedRequests &requests;
  inference::GRPCInferenceService::Stub *stub; // gRPC only
  Clock::time_point start;
  DueQueue &queue;
  RunRecord &record;

  /// Seconds since the run started.
  double seconds() const {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }
};

/// One connection's worker: sends each request it takes from the queue (a
/// blocking gRPC call on the shared channel, or a POST on its own
/// keep-alive HTTP connection) and records its timing, until the queue
/// closes.
void runConnection(LoadState &state) {
  const ServerOptions &options = state.options;
  std::optional<httplib::Client> client; // HTTP only
  if (!state.grpcTarget) {
    client.emplace(options.url);
    client->set_keep_alive(true);
    client->set_tcp_nodelay(true); // headers and body are two writes
    client->set_read_timeout(600, 0);
  }
  std::string path = "/v2/models/" + options.model + "/infer";
  while (std::optional<size_t> k = state.queue.next()) {
    RequestTiming &timing = state.record.timings[*k]; // this thread's alone
    if (state.grpcTarget) {
      grpc::ClientContext context;
      inference::ModelInferResponse reply;
      grpc::Status status = state.stub->ModelInfer(
          &context, state.requests.grpcRequests[*k], &reply);
      recordGrpcReply(status, reply, state.seconds(), options.deadlineMs,
                      timing);
      continue;
    }
    auto reply =
        client->Post(path, state.requests.bodies[*k], "application/json");
    recordHttpReply(reply, state.seconds(), options.deadlineMs, timing);
  }
}

/// Pushes each trace entry onto the queue at its arrival time (seconds from
/// `start`), showing progress on a terminal unless `quiet`.
void sendAtArrivals(const std::vector<TraceEntry> &trace,
                    Clock::time_point start, DueQueue &queue, RunRecord &record,
                    const std::string &label, bool quiet) {
  for (size_t k = 0; k < trace.size(); ++k) {
    record.timings[k].arrival = trace[k].arrival;
    std::this_thread::sleep_until(
        start + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(trace[k].arrival)));
    queue.push(k);
    if (!quiet && k % 100 == 0 && isatty(fileno(stderr)))
      std::fprintf(stderr, "\r%-28s %7zu/%zu sent", label.c_str(), k,
                   trace.size());
  }
}

} // namespace

Result<RunRecord> cellrun::loadgen::runServer(
    const ServerOptions &options, const std::vector<std::string> &lines,
    const ModelSignature &signature, const std::vector<TraceEntry> &trace,
    const std::string &label, bool quiet) {
  bool grpcTarget = options.url.rfind("grpc://", 0) == 0;
  // Bodies first: converting is not part of the load.
  PreparedRequests requests;
  Status prepared =
      prepareRequests(options, lines, signature, trace, grpcTarget, requests);
  if (!prepared.isOk())
    return prepared;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub;
  if (grpcTarget) {
    channel = grpc::CreateChannel(options.url.substr(7),
                                  grpc::InsecureChannelCredentials());
    stub = inference::GRPCInferenceService::NewStub(channel);
  }
  Status ready = grpcTarget ? checkGrpcModelReady(options, *stub)
                            : checkHttpModelReady(options);
  if (!ready.isOk())
    return ready;
  RunRecord record;
  record.timings.resize(trace.size());
  DueQueue queue;
  LoadState state{options,      grpcTarget, requests, stub.get(),
                  Clock::now(), queue,      record};
  std::vector<std::thread> workers;
  for (uint32_t c = 0; c < std::max(1u, options.connections); ++c)
    workers.emplace_back([&state] { runConnection(state); });
  sendAtArrivals(trace, state.start, queue, record, label, quiet);
  queue.close();
  for (std::thread &thread : workers)
    thread.join();
  if (!quiet && isatty(fileno(stderr)))
    std::fprintf(stderr, "\r%60s\r", "");
  double last = 0;
  for (const RequestTiming &timing : record.timings)
    last = std::max(last, timing.finished);
  record.seconds = last - (trace.empty() ? 0 : trace.front().arrival);
  return record;
}
