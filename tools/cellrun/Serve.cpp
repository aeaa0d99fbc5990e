//===- Serve.cpp - `cellrun serve`: the KServe v2 inference server --------===//
//
// Loads one artifact, starts the engine and the HTTP, gRPC and metrics
// front ends, logs a start-up summary, and on SIGTERM or SIGINT stops
// taking requests (503 / UNAVAILABLE), answers the accepted ones within the
// drain deadline and cancels the rest, closes the ports and exits 0. Built only
// on the public runtime API.
//
//===----------------------------------------------------------------------===//
#include "Serve.h"

#include "server/GrpcServer.h"
#include "server/HttpServer.h"

#include "cellrun/Device.h"
#include "cellrun/Model.h"

#include <spdlog/spdlog.h>

#include <csignal>
#include <optional>
#include <pthread.h>

namespace cellrun::tool {
namespace {

struct ServeArgs {
  std::string model;
  std::string host = "0.0.0.0";
  int httpPort = 8000, grpcPort = 8001, metricsPort = 8002;
  std::string device = "auto", policy = "cellular", logLevel = "info";
  uint32_t maxQueue = 1024, poolRows = 4096, workers = 1, threads = 0,
           copyThreads = 0, fillRows = EngineOptions().fillRows,
           workersPerDevice = 1, maxRunning = 0;
  uint64_t memoryBudget = 0;
  bool noMove = false, noChainBatch = false, pinnedResults = false,
       cudaGraphs = false, timeDevice = false;
  uint64_t maxBodyBytes = 64u << 20;
  unsigned httpThreads = 4;
  uint32_t httpMaxConnections = 4096;
  double httpTimeout = 30;
  double sessionTimeout = 60;
  double drainTimeout = 30;
  uint32_t maxSteps = RequestLimits().maxSteps;
  bool allowNonFinite = false;
};

/// The model and the addresses it is served on.
void addModelAndPortOptions(CLI::App &app, ServeArgs &args) {
  app.add_option("model", args.model, "the compiled model (.cellpack)")
      ->required();
  app.add_option("--host", args.host, "address to listen on")
      ->capture_default_str();
  app.add_option("--http-port", args.httpPort,
                 "KServe v2 REST port (0: no REST endpoint)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--grpc-port", args.grpcPort,
                 "KServe v2 gRPC port (0: no gRPC endpoint)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--metrics-port", args.metricsPort,
                 "Prometheus GET /metrics port (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
}

/// The engine's backend, batching policy, queue, memory and workers.
void addEngineOptions(CLI::App &app, ServeArgs &args) {
  app.add_option("--device", args.device, "backend")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--policy", args.policy, "batching policy")
      ->capture_default_str()
      ->check(CLI::IsMember({"cellular", "padded", "graph"}));
  app.add_option("--max-queue", args.maxQueue,
                 "requests waiting for admission; beyond it: 429 at once")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 24));
  app.add_option("--max-running", args.maxRunning, kMaxRunningHelp)
      ->capture_default_str();
  app.add_option("--pool-rows", args.poolRows,
                 "rows of every state pool (the memory budget in rows)")
      ->capture_default_str()
      ->check(CLI::Range(2u, 1u << 28));
  app.add_option("--memory-budget", args.memoryBudget, kMemoryBudgetHelp)
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--fill-rows", args.fillRows, kFillRowsHelp)
      ->capture_default_str();
  app.add_option("--workers", args.workers,
                 "workers, one per device unless --workers-per-device says "
                 "otherwise")
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_option("--workers-per-device", args.workersPerDevice,
                 kWorkersPerDeviceHelp)
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_flag("--no-move", args.noMove, kNoMoveHelp);
  app.add_flag("--no-chain-batch", args.noChainBatch, kNoChainBatchHelp);
  app.add_option("--threads", args.threads,
                 "cpu backend: threads a task (0: one per core, shared "
                 "among --workers)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 256u));
  app.add_option("--copy-threads", args.copyThreads, kCopyThreadsHelp)
      ->capture_default_str()
      ->check(CLI::Range(0u, 64u));
  app.add_flag("--pinned-results", args.pinnedResults, kPinnedResultsHelp);
  app.add_flag("--cuda-graphs", args.cudaGraphs, kCudaGraphsHelp);
  app.add_flag("--time-device", args.timeDevice,
               std::string(kTimeDeviceHelp) +
                   " (cellrun_device_task_seconds_total)");
}

/// The HTTP front end's body size, threads, connections and timeout.
void addHttpOptions(CLI::App &app, ServeArgs &args) {
  app.add_option("--max-body-bytes", args.maxBodyBytes,
                 "largest HTTP request body (larger: 413)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--http-threads", args.httpThreads,
                 "threads serving the HTTP connections (event-driven: a "
                 "connection waiting for its client or the engine holds "
                 "none; one more thread accepts them)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  app.add_option("--http-max-connections", args.httpMaxConnections,
                 "HTTP connections open at once; past it a new one gets 503 "
                 "and is closed")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--http-timeout", args.httpTimeout,
                 "seconds a client may take to send a request's header, then "
                 "its body, or to start its next request on a kept-alive "
                 "connection")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
}

/// Requests' limits, the drain on shutdown, sessions and logging.
void addRequestAndShutdownOptions(CLI::App &app, ServeArgs &args) {
  app.add_option("--max-steps", args.maxSteps,
                 "steps of one cell a request may run: a longer input is "
                 "refused (400), a decode stops after this many tokens (stop "
                 "reason \"limit\")")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 24));
  app.add_option("--drain-timeout", args.drainTimeout,
                 "on SIGTERM or SIGINT, seconds to answer the requests in "
                 "flight; those still running then are cancelled (503, gRPC "
                 "CANCELLED)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  app.add_flag("--allow-non-finite", args.allowNonFinite,
               "take NaN and infinite input values (by default a request "
               "with one gets 400, naming the input)");
  app.add_option("--session-timeout", args.sessionTimeout,
                 "seconds a streaming session may stay idle before its state "
                 "is freed (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--log-level", args.logLevel, "log level")
      ->capture_default_str()
      ->check(CLI::IsMember(
          {"trace", "debug", "info", "warn", "error", "critical", "off"}));
}

/// All of serve's options, in --help's order.
void addOptions(CLI::App &app, ServeArgs &args) {
  addModelAndPortOptions(app, args);
  addEngineOptions(app, args);
  addHttpOptions(app, args);
  addRequestAndShutdownOptions(app, args);
}

std::string batchSizesText(const ModelInfo &model) {
  std::string text;
  for (const CellInfo &cell : model.cells) {
    text += (text.empty() ? "" : "; ") + cell.name + " ";
    std::string sizes;
    for (uint32_t size : cell.batchSizes)
      sizes += (sizes.empty() ? "" : ",") + std::to_string(size);
    text += sizes;
  }
  return text;
}

/// Blocks SIGTERM and SIGINT: every thread started from here on inherits
/// the blocked signals; the main thread takes them with sigwait.
sigset_t blockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

/// The engine's options from `args` on device `kind`; --memory-budget sets
/// the pool rows from the model's bytes a row. None (logged) when the
/// budget is less than two rows.
std::optional<EngineOptions>
engineOptionsOf(const ServeArgs &args, DeviceKind kind, const ModelInfo &info) {
  EngineOptions options;
  options.policy = parsePolicy(args.policy).value();
  options.executor.device = kind;
  options.executor.threads = args.threads;
  options.executor.copyThreads = args.copyThreads;
  options.executor.pinnedResults = args.pinnedResults;
  options.executor.cudaGraphs = args.cudaGraphs;
  options.executor.timeDevice = args.timeDevice;
  options.workers = args.workers;
  options.workersPerDevice = args.workersPerDevice;
  options.maxQueue = args.maxQueue;
  options.maxRunning = args.maxRunning;
  options.poolRows = args.poolRows;
  options.fillRows = args.fillRows;
  options.moveRequests = !args.noMove;
  options.chainBatch = !args.noChainBatch;
  options.sessionTimeoutSeconds = args.sessionTimeout;
  options.limits.allowNonFinite = args.allowNonFinite;
  options.limits.maxSteps = args.maxSteps;
  size_t rowBytes = info.poolBytesPerRow;
  if (args.memoryBudget > 0) {
    std::string error;
    std::optional<uint32_t> rows =
        poolRowsOfBudget(args.memoryBudget, rowBytes, error);
    if (!rows) {
      spdlog::error("{}", error);
      return std::nullopt;
    }
    options.poolRows = *rows;
  }
  return options;
}

/// Logs the model served and how: its cells' batch sizes, the policy,
/// device, state pools and queue.
void logStartupSummary(const ServeArgs &args, serve::InferenceService &model,
                       const ModelInfo &info, const EngineOptions &options) {
  size_t rowBytes = info.poolBytesPerRow;
  spdlog::info("model '{}' ({}, {} cells: {}) from {}", model.modelName(),
               model.structureName(), info.cells.size(), batchSizesText(info),
               args.model);
  spdlog::info(
      "{} batching on {}{}; state pools {} rows ({:.1f} MB), "
      "queue {}",
      args.policy, model.engine().deviceDescription(),
      args.workers > 1 ? " and " + std::to_string(args.workers - 1) + " more"
                       : std::string(),
      options.poolRows,
      double(rowBytes) * options.poolRows * args.workers / 1e6, args.maxQueue);
}

/// Starts the HTTP front end (and its metrics port); false (logged) when
/// it does not start.
bool startHttp(const ServeArgs &args, serve::HttpServer &http) {
  serve::HttpOptions httpOptions;
  httpOptions.host = args.host;
  httpOptions.port = args.httpPort;
  httpOptions.metricsPort = args.metricsPort;
  httpOptions.maxBodyBytes = args.maxBodyBytes;
  httpOptions.threads = args.httpThreads;
  httpOptions.maxConnections = args.httpMaxConnections;
  httpOptions.timeoutSeconds = args.httpTimeout;
  if (Status status = http.start(httpOptions); !status.isOk()) {
    spdlog::error("{}", status.message());
    return false;
  }
  return true;
}

/// Starts the gRPC front end when it has a port; false (logged, the
/// started `http` stopped again) when it does not start.
bool startGrpc(const ServeArgs &args, serve::HttpServer &http,
               serve::GrpcServer &grpc) {
  if (args.grpcPort > 0)
    if (Status status = grpc.start(args.host, args.grpcPort); !status.isOk()) {
      spdlog::error("{}", status.message());
      http.stop();
      return false;
    }
  return true;
}

/// Waits for SIGTERM or SIGINT, then stops taking requests, answers those
/// in flight within the drain deadline (cancelling the rest), closes the
/// front ends and logs the engine's totals.
void drainOnSignal(const ServeArgs &args, const sigset_t &signals,
                   serve::InferenceService &model, serve::HttpServer &http,
                   serve::GrpcServer &grpc) {
  int received = 0;
  sigwait(&signals, &received);
  spdlog::info("{}: no new requests; answering the {} in flight within {} s",
               received == SIGTERM ? "SIGTERM" : "SIGINT", model.inFlight(),
               args.drainTimeout);
  model.stopAccepting();
  if (!model.waitIdleFor(args.drainTimeout)) {
    spdlog::warn("drain deadline passed: cancelling the {} requests still "
                 "in flight",
                 model.inFlight());
    model.cancelAll("the server is shutting down and its drain deadline (" +
                    fmt::format("{}", args.drainTimeout) + " s) has passed");
    model.waitIdle();
  }
  grpc.stop();
  http.stop();
  EngineStats stats = model.engine().stats();
  spdlog::info("stopped: {} requests completed, {} failed, {} refused",
               stats.completed, stats.failed, stats.rejected);
}

int serveModel(const ServeArgs &args) {
  spdlog::set_level(spdlog::level::from_str(args.logLevel));
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
  sigset_t signals = blockShutdownSignals();

  auto artifact = loadArtifact(args.model);
  if (!artifact.ok()) {
    spdlog::error("{}", artifact.status().message());
    return kExitFailure;
  }
  std::string note;
  auto kind = resolveDevice(parseDeviceChoice(args.device).value(), note);
  if (!kind.ok()) {
    spdlog::error("{}", kind.status().message());
    return kExitFailure;
  }
  if (!note.empty())
    spdlog::warn("{}", note);
  ModelInfo info = describeModel(*artifact.value());
  std::optional<EngineOptions> options =
      engineOptionsOf(args, kind.value(), info);
  if (!options)
    return kExitFailure;
  if (std::string unused = cudaOnlyFlagsNote(options->executor);
      !unused.empty())
    spdlog::warn("{}", unused);
  auto service = serve::InferenceService::create(artifact.value(), *options);
  if (!service.ok()) {
    spdlog::error("{}", service.status().message());
    return kExitFailure;
  }
  serve::InferenceService &model = *service.value();
  logStartupSummary(args, model, info, *options);

  serve::HttpServer http(model);
  if (!startHttp(args, http))
    return kExitFailure;
  serve::GrpcServer grpc(model);
  if (!startGrpc(args, http, grpc))
    return kExitFailure;
  spdlog::info("serving: HTTP {}, gRPC {}, metrics {} on {}",
               args.httpPort ? std::to_string(args.httpPort) : "off",
               args.grpcPort ? std::to_string(args.grpcPort) : "off",
               args.metricsPort ? std::to_string(args.metricsPort) : "off",
               args.host);

  drainOnSignal(args, signals, model, http, grpc);
  return kExitOk;
}

} // namespace

int runServe(const std::vector<std::string> &arguments) {
  CLI::App app("Serves one compiled model over the KServe v2 protocol "
               "(HTTP/REST and gRPC) with Prometheus metrics; SIGTERM or "
               "SIGINT stops it gracefully (within --drain-timeout).",
               "cellrun serve");
  ServeArgs args;
  addOptions(app, args);
  if (auto exit = parseCommandLine(app, arguments))
    return *exit;
  return serveModel(args);
}

} // namespace cellrun::tool
