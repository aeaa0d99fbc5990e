//===- serve_bench.cpp - The front ends' own cost -------------------------===//
//
// What HTTP and gRPC add to a request: the same requests (random token
// sequences of one length) through the Engine API in process (the
// baseline), HTTP with JSON tensors, HTTP with binary tensor data, and
// gRPC, each closed-loop with C clients. The servers run in this process
// on loopback ports, exactly as `cellrun serve` runs them; the clients are
// cpp-httplib and a gRPC stub. Prints requests per second and p50/p99
// latency per path and concurrency, and the latency each front end adds
// over the in-process call at the same concurrency; --csv writes the rows.
//
//===----------------------------------------------------------------------===//
#include "GrpcServer.h"
#include "HttpServer.h"
#include "grpc_service.grpc.pb.h"
#include "loadgen/LatencyStats.h"

#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

using namespace cellrun;
using namespace cellrun::serve;
using Clock = std::chrono::steady_clock;

namespace {

struct Row {
  std::string path;
  unsigned clients;
  double perSecond, p50, p99; // latencies in microseconds
};

/// Runs `one(client, k)` `perClient` times on each of `clients` threads.
Row measure(const std::string &path, unsigned clients, unsigned perClient,
            const std::function<void(unsigned, unsigned)> &one) {
  std::vector<std::vector<double>> latencies(clients);
  auto start = Clock::now();
  std::vector<std::thread> threads;
  for (unsigned c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      for (unsigned k = 0; k < perClient; ++k) {
        auto begin = Clock::now();
        one(c, k);
        latencies[c].push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - begin)
                .count());
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto &list : latencies)
    all.insert(all.end(), list.begin(), list.end());
  std::sort(all.begin(), all.end());
  return {path, clients, all.size() / seconds,
          cellrun::loadgen::nearestRank(all, 0.5),
          cellrun::loadgen::nearestRank(all, 0.99)};
}

void fail(const std::string &what) {
  std::fprintf(stderr, "serve_bench: %s\n", what.c_str());
  std::exit(1);
}

/// The command line.
struct Options {
  std::string model, csv;
  unsigned length = 24, requests = 2000, httpPort = 18700, grpcPort = 18701;
  std::vector<unsigned> concurrency = {1, 8};
  unsigned httpThreads = HttpOptions().threads;
};

/// Declares the command line's options, each writing into `options`.
void defineOptions(CLI::App &app, Options &options) {
  app.add_option("model", options.model,
                 "the compiled model (a chain of tokens)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--length", options.length, "tokens a request")
      ->capture_default_str();
  app.add_option("--requests", options.requests, "requests a measurement")
      ->capture_default_str();
  app.add_option("--clients", options.concurrency,
                 "concurrent clients (e.g. 1,8)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--http-port", options.httpPort, "loopback port")
      ->capture_default_str();
  app.add_option("--grpc-port", options.grpcPort, "loopback port")
      ->capture_default_str();
  app.add_option("--csv", options.csv, "write the rows here");
  app.add_option("--http-threads", options.httpThreads,
                 "threads of the HTTP server (as cellrun serve's)")
      ->capture_default_str();
}

/// Starts the HTTP server on loopback, as `cellrun serve` does.
void startHttp(HttpServer &http, const Options &options) {
  HttpOptions httpOptions;
  httpOptions.host = "127.0.0.1";
  httpOptions.port = static_cast<int>(options.httpPort);
  httpOptions.metricsPort = 0;
  httpOptions.threads = options.httpThreads;
  if (Status status = http.start(httpOptions); !status.isOk())
    fail(status.message());
}

/// The same requests in the form each path sends them.
struct PreparedRequests {
  std::vector<Request> engineRequests;
  std::vector<std::string> jsonBodies, binaryHeaders, binaryBodies;
  std::vector<inference::ModelInferRequest> grpcRequests;
};

/// Adds `tokens` as one request of each path to `prepared`.
void addRequest(PreparedRequests &prepared, InferenceService &service,
                const std::string &input, const std::vector<int64_t> &tokens) {
  NamedTensor tensor{
      input, TensorType::Int64, {static_cast<int64_t>(tokens.size())}, {}};
  tensor.data.resize(tokens.size() * 8);
  std::memcpy(tensor.data.data(), tokens.data(), tensor.data.size());
  TensorRequestOptions requestOptions;
  requestOptions.id = "r";
  auto request =
      service.engine().parser().fromTensors({tensor}, requestOptions);
  if (!request.ok())
    fail(request.status().message());
  prepared.engineRequests.push_back(request.value());
  nlohmann::json tensorJson = {{"name", input},
                               {"datatype", "INT64"},
                               {"shape", {tokens.size()}},
                               {"data", tokens}};
  prepared.jsonBodies.push_back(
      nlohmann::json{{"inputs", {tensorJson}}}.dump());
  tensorJson.erase("data");
  tensorJson["parameters"] = {{"binary_data_size", tensor.data.size()}};
  std::string header =
      nlohmann::json{{"inputs", {tensorJson}},
                     {"parameters", {{"binary_data_output", true}}}}
          .dump();
  prepared.binaryHeaders.push_back(std::to_string(header.size()));
  prepared.binaryBodies.push_back(
      header + std::string(tensor.data.begin(), tensor.data.end()));
  inference::ModelInferRequest grpcRequest;
  grpcRequest.set_model_name(service.modelName());
  auto *grpcInput = grpcRequest.add_inputs();
  grpcInput->set_name(input);
  grpcInput->set_datatype("INT64");
  grpcInput->add_shape(static_cast<int64_t>(tokens.size()));
  grpcRequest.add_raw_input_contents(
      std::string(tensor.data.begin(), tensor.data.end()));
  prepared.grpcRequests.push_back(std::move(grpcRequest));
}

/// The same token sequences for every path: 64 random ones of `length`.
PreparedRequests prepareRequests(InferenceService &service,
                                 const std::string &input, unsigned length) {
  std::mt19937 random(11);
  std::vector<std::vector<int64_t>> sequences(64);
  for (auto &tokens : sequences)
    for (unsigned t = 0; t < length; ++t)
      tokens.push_back(random() % 500);
  PreparedRequests prepared;
  for (const auto &tokens : sequences)
    addRequest(prepared, service, input, tokens);
  return prepared;
}

/// Measures every path at `clients` concurrent clients; appends their rows.
void measurePaths(std::vector<Row> &rows, unsigned clients, unsigned perClient,
                  InferenceService &service, const PreparedRequests &prepared,
                  const Options &options) {
  const auto &engineRequests = prepared.engineRequests;
  const auto &jsonBodies = prepared.jsonBodies;
  const auto &binaryHeaders = prepared.binaryHeaders;
  const auto &binaryBodies = prepared.binaryBodies;
  const auto &grpcRequests = prepared.grpcRequests;
  std::string inferPath = "/v2/models/" + service.modelName() + "/infer";
  rows.push_back(
      measure("engine", clients, perClient, [&](unsigned c, unsigned k) {
        auto result =
            service.engine()
                .submit(engineRequests[(c * 7 + k) % engineRequests.size()])
                .get();
        if (!result.status.isOk())
          fail(result.status.message());
      }));
  std::vector<std::unique_ptr<httplib::Client>> httpClients;
  for (unsigned c = 0; c < clients; ++c) {
    httpClients.push_back(
        std::make_unique<httplib::Client>("127.0.0.1", options.httpPort));
    httpClients.back()->set_keep_alive(true);
    httpClients.back()->set_tcp_nodelay(true);
  }
  rows.push_back(
      measure("http-json", clients, perClient, [&](unsigned c, unsigned k) {
        auto reply = httpClients[c]->Post(
            inferPath, jsonBodies[(c * 7 + k) % jsonBodies.size()],
            "application/json");
        if (!reply || reply->status != 200)
          fail("http-json request failed");
      }));
  rows.push_back(
      measure("http-binary", clients, perClient, [&](unsigned c, unsigned k) {
        size_t at = (c * 7 + k) % binaryBodies.size();
        httplib::Headers headers = {
            {"Inference-Header-Content-Length", binaryHeaders[at]}};
        auto reply = httpClients[c]->Post(inferPath, headers, binaryBodies[at],
                                          "application/octet-stream");
        if (!reply || reply->status != 200)
          fail("http-binary request failed");
      }));
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(options.grpcPort),
                          grpc::InsecureChannelCredentials());
  auto stub = inference::GRPCInferenceService::NewStub(channel);
  rows.push_back(
      measure("grpc", clients, perClient, [&](unsigned c, unsigned k) {
        grpc::ClientContext context;
        inference::ModelInferResponse response;
        grpc::Status status = stub->ModelInfer(
            &context, grpcRequests[(c * 7 + k) % grpcRequests.size()],
            &response);
        if (!status.ok())
          fail("grpc request failed: " + status.error_message());
      }));
}

/// Prints the table (and writes the CSV when asked): each row with the p50
/// its front end adds over the in-process call at the same concurrency.
void printRows(const std::vector<Row> &rows, const std::string &csv) {
  std::printf("%-12s %7s %10s %10s %10s %14s\n", "path", "clients", "req/s",
              "p50 us", "p99 us", "p50 added us");
  std::ofstream out;
  if (!csv.empty()) {
    out.open(csv);
    out << "path,clients,requests_per_second,p50_us,p99_us,p50_added_us\n";
  }
  for (const Row &row : rows) {
    double base = 0;
    for (const Row &other : rows)
      if (other.path == "engine" && other.clients == row.clients)
        base = other.p50;
    std::printf("%-12s %7u %10.0f %10.1f %10.1f %14.1f\n", row.path.c_str(),
                row.clients, row.perSecond, row.p50, row.p99, row.p50 - base);
    if (out)
      out << row.path << "," << row.clients << "," << row.perSecond << ","
          << row.p50 << "," << row.p99 << "," << row.p50 - base << "\n";
  }
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app("The KServe v2 front ends' cost against the in-process "
               "Engine API.");
  Options options;
  defineOptions(app, options);
  CLI11_PARSE(app, argc, argv);

  auto artifact = loadArtifact(options.model);
  if (!artifact.ok())
    fail(artifact.status().message());
  EngineOptions engineOptions;
  engineOptions.executor.device = DeviceKind::Cpu;
  auto created = InferenceService::create(artifact.value(), engineOptions);
  if (!created.ok())
    fail(created.status().message());
  InferenceService &service = *created.value();
  const ModelSignature &signature = service.signature();
  if (signature.inputs.size() != 1 || signature.inputs[0].shape.size() != 1)
    fail("the model must take one token a step (e.g. the LSTM example)");
  const std::string input = signature.inputs[0].name;
  HttpServer http(service);
  startHttp(http, options);
  GrpcServer grpc(service);
  if (Status status =
          grpc.start("127.0.0.1", static_cast<int>(options.grpcPort));
      !status.isOk())
    fail(status.message());

  PreparedRequests prepared = prepareRequests(service, input, options.length);
  std::vector<Row> rows;
  for (unsigned clients : options.concurrency) {
    unsigned perClient = std::max(1u, options.requests / clients);
    measurePaths(rows, clients, perClient, service, prepared, options);
  }
  grpc.stop();
  http.stop();
  printRows(rows, options.csv);
  return 0;
}
