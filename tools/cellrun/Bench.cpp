//===- Bench.cpp - `cellrun bench`: open-loop load, policies and peers ----===//
//
// Draws one trace per rate from the seed (Poisson arrivals; request k is the
// same at every rate), serves it with every requested batching policy and,
// with --peer-weights, the peers (PyTorch, ONNX Runtime), and prints a table
// per rate; the
// rows also go to bench.csv and bench.json under --out. --saturate raises
// the rate by half at a time until latency diverges (p90 beyond ten times
// the first rate's, or less than 90% of the offered load served), as the
// paper finds peak throughput.
//
//===----------------------------------------------------------------------===//
#include "Bench.h"
#include "Devices.h"
#include "bench/BenchPlot.h"
#include "bench/BenchReport.h"
#include "bench/PeerRunner.h"
#include "bench/ServerLoad.h"
#include "bench/Workload.h"

#include "cellrun/RequestParser.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#ifndef CELLRUN_PEERS_DIR
#define CELLRUN_PEERS_DIR "bench/peers"
#endif

namespace cellrun::tool {
namespace {

using namespace cellrun::bench;

/// The build's virtual environment (it sees Debian's torch and has
/// onnxruntime from PyPI) where there is one, else Debian's python3.
std::string defaultPeerPython() {
#ifdef CELLRUN_PEER_PYTHON
  if (std::filesystem::exists(CELLRUN_PEER_PYTHON))
    return CELLRUN_PEER_PYTHON;
#endif
  return "/usr/bin/python3";
}

struct BenchArgs {
  std::string model, workload, out = "bench-out", device = "auto";
  std::vector<double> rates;
  bool saturate = false, quiet = false, plot = false;
  double duration = 10, warmup = -1, cooldown = -1, deadlineMs = 0;
  std::vector<std::string> policies = {"cellular", "padded", "graph"};
  uint64_t seed = 2018;
  uint32_t threads = 0, poolRows = 4096, maxQueue = 0, bucketWidth = 10,
           peerBuckets = 0, peerMaxBatch = 0, offline = 0, repeat = 1;
  std::string server, serverModel;
  uint32_t connections = 64;
  std::string peerWeights, python = defaultPeerPython(),
                           peersDir = CELLRUN_PEERS_DIR;
  std::vector<std::string> peers = {"pytorch"};
};

void addOptions(CLI::App &app, BenchArgs &args) {
  app.add_option("model", args.model, "the compiled model (.cellpack)")
      ->required();
  app.add_option("--workload", args.workload,
                 "request shapes (bench/workloads/*.csv)")
      ->required();
  auto *rate = app.add_option("--rate", args.rates,
                              "offered requests a second (one or a list "
                              "R1,R2,..; --sweep is the same)")
                   ->delimiter(',')
                   ->check(CLI::PositiveNumber);
  app.add_option("--sweep", args.rates, "offered rates R1,R2,..")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->excludes(rate);
  app.add_flag("--saturate", args.saturate,
               "from the first --rate (default 50/s), raise the rate by half "
               "until latency diverges");
  app.add_option("--offline", args.offline,
                 "also serve N requests all at once, as fast as each system "
                 "takes them (the peer sorts them by length into full "
                 "batches: the peer at its best)")
      ->check(CLI::Range(1u, 1000000u));
  app.add_option("--duration", args.duration, "seconds of arrivals a run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", args.warmup,
                 "seconds of arrivals not measured at the start (default: "
                 "10% of the duration)");
  app.add_option("--cooldown", args.cooldown,
                 "seconds of arrivals not measured at the end (default: 10% "
                 "of the duration)");
  app.add_option("--policy", args.policies, "our policies to run")
      ->delimiter(',')
      ->check(CLI::IsMember({"cellular", "padded", "graph"}))
      ->capture_default_str();
  app.add_option("--device", args.device, "backend: cuda, cpu or auto")
      ->capture_default_str();
  app.add_option("--threads", args.threads,
                 "cpu: threads a task, and the peer's torch threads (0: one "
                 "per core)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1024u));
  app.add_option("--pool-rows", args.poolRows, "rows of every state pool")
      ->capture_default_str()
      ->check(CLI::Range(2u, 1u << 30));
  app.add_option("--max-queue", args.maxQueue,
                 "requests waiting for admission (default: the whole trace, "
                 "so nothing is dropped)");
  app.add_option("--bucket-width", args.bucketWidth,
                 "padded policy: lengths a bucket")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100000u));
  app.add_option("--deadline-ms", args.deadlineMs,
                 "a latency goal for every request (ms); results later than "
                 "that count as deadline misses (0: none)")
      ->check(CLI::Range(0.0, 86400000.0));
  app.add_option("--seed", args.seed, "arrivals and request contents")
      ->capture_default_str();
  app.add_option("--repeat", args.repeat,
                 "runs of every system at every rate on the same trace: each "
                 "column is their median, and the spread of throughput, p50 "
                 "and p99 is printed and written")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  app.add_option("--out", args.out, "directory for bench.csv, bench.json")
      ->capture_default_str();
  app.add_option("--server", args.server,
                 "also send each rate's trace to a running KServe v2 server "
                 "(http://HOST:PORT or grpc://HOST:PORT, e.g. cellrun "
                 "serve): the row serve-http or serve-grpc");
  app.add_option("--server-model", args.serverModel,
                 "the model's name on --server (default: the artifact's)");
  app.add_option("--connections", args.connections,
                 "--server: keep-alive connections sending the trace")
      ->capture_default_str()
      ->check(CLI::Range(1u, 4096u));
  app.add_option("--peer-weights", args.peerWeights,
                 "run the peers with these weights: the generator's "
                 "<cell>.pt (chain), or the directory of its .pt files; they "
                 "run on our device (cpu, or cuda with cuDNN)");
  app.add_option("--peers", args.peers,
                 "with --peer-weights, the peers to run: pytorch, "
                 "onnxruntime (CPU only; chains), or both")
      ->delimiter(',')
      ->check(CLI::IsMember(peerNames()))
      ->capture_default_str();
  app.add_option("--peer-buckets", args.peerBuckets,
                 "online, the peer batches only the oldest request's length "
                 "bucket of this width (0: every waiting request, packed)")
      ->capture_default_str();
  app.add_option("--peer-max-batch", args.peerMaxBatch,
                 "the largest batch a peer forms (default: our largest batch "
                 "size; ONNX Runtime's LSTM is fastest near 64 on a CPU)")
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--python", args.python,
                 "the peers' interpreter (default: the build's virtual "
                 "environment, which has onnxruntime, where it exists)")
      ->capture_default_str();
  app.add_option("--peers-dir", args.peersDir, "where the peer scripts are")
      ->capture_default_str();
  app.add_flag("--plot", args.plot,
               "draw latency.{png,svg} (latency against throughput) and "
               "batch.{png,svg} (batch size over time) with gnuplot");
  app.add_flag("--quiet", args.quiet, "no progress line");
}

/// Requests by number, drawn on demand: `lines` for the peer, `requests`
/// for the engine.
struct RequestBank {
  const Workload *workload = nullptr;
  const RequestSynthesizer *synthesizer = nullptr;
  const RequestParser *parser = nullptr;
  uint64_t seed = 0;
  double deadlineMicros = 0;
  std::vector<std::string> lines;
  std::vector<Request> requests;

  Status growTo(size_t count) {
    while (requests.size() < count) {
      uint32_t k = static_cast<uint32_t>(requests.size());
      const RequestShape &shape = workload->shapes[k % workload->shapes.size()];
      lines.push_back(synthesizer->requestLine(k, shape, seed));
      auto request = parser->parse(lines.back(), "r" + std::to_string(k));
      if (!request.ok())
        return request.status();
      requests.push_back(std::move(request).value());
      requests.back().deadlineMicros = deadlineMicros;
    }
    return Status::ok();
  }
};

/// Rows sent to a running server (serve-http, serve-grpc).
bool isServer(const std::string &system) {
  return system.rfind("serve-", 0) == 0;
}

std::string today() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return text;
}

} // namespace

int runBench(const std::vector<std::string> &arguments) {
  CLI::App app("Open-loop benchmark: Poisson arrivals drawn from a seed, the "
               "same trace for every batching policy and the peers; a "
               "table per rate, CSV and JSON under --out.",
               "cellrun bench");
  BenchArgs args;
  addOptions(app, args);
  if (auto exit = parseCommandLine(app, arguments))
    return *exit;
  if (args.rates.empty() && !args.saturate && args.offline == 0) {
    std::cerr << "cellrun bench: give --rate, --sweep, --saturate or "
                 "--offline\n";
    return kExitUsage;
  }
  if (args.rates.empty() && args.saturate)
    args.rates = {50};
  // A trace is held in memory: at most a million requests a run.
  for (double rate : args.rates)
    if (!std::isfinite(rate) || rate * args.duration > 1e6) {
      std::cerr << "cellrun bench: " << rate << "/s for " << args.duration
                << " s is more than the million requests a run can hold\n";
      return kExitUsage;
    }
  if (std::isnan(args.warmup) || std::isnan(args.cooldown)) {
    std::cerr << "cellrun bench: --warmup and --cooldown take seconds\n";
    return kExitUsage;
  }
  if (args.warmup < 0)
    args.warmup = 0.1 * args.duration;
  if (args.cooldown < 0)
    args.cooldown = 0.1 * args.duration;
  if (args.warmup + args.cooldown >= args.duration) {
    std::cerr << "cellrun bench: the warm-up and cool-down leave nothing of "
                 "the duration to measure\n";
    return kExitUsage;
  }
  auto fail = [](const Status &status) {
    std::cerr << "cellrun bench: error: " << status.message() << "\n";
    return kExitFailure;
  };
  auto device = parseDeviceChoice(args.device);
  if (!device.ok()) {
    std::cerr << "cellrun bench: " << device.status().message() << "\n";
    return kExitUsage;
  }
  std::string note;
  auto kind = resolveDevice(device.value(), note);
  if (!kind.ok())
    return fail(kind.status());
  if (!note.empty())
    std::cerr << "cellrun: " << note << "\n";
  auto artifact = loadArtifact(args.model);
  if (!artifact.ok())
    return fail(artifact.status());
  auto workload = loadWorkload(args.workload);
  if (!workload.ok())
    return fail(workload.status());
  auto parser = RequestParser::create(artifact.value());
  if (!parser.ok())
    return fail(parser.status());
  auto synthesizer = RequestSynthesizer::create(*artifact.value(),
                                                parser.value()->signature());
  if (!synthesizer.ok())
    return fail(synthesizer.status());
  RequestBank bank;
  bank.workload = &workload.value();
  bank.synthesizer = &synthesizer.value();
  bank.parser = parser.value().get();
  bank.seed = args.seed;
  bank.deadlineMicros = args.deadlineMs * 1000;
  std::error_code made;
  std::filesystem::create_directories(args.out, made);
  if (made)
    return fail(Status(StatusCode::Internal,
                       "cannot create " + args.out + ": " + made.message()));

  EngineOptions base;
  base.executor.device = kind.value();
  base.executor.threads = args.threads;
  base.poolRows = args.poolRows;
  base.bucketWidth = args.bucketWidth;
  uint32_t largestBatch = 1;
  for (const cellpack::CellType *cell : *artifact.value()->model().cells())
    largestBatch =
        std::max(largestBatch, artifact.value()->batchSizes(*cell).back());

  BenchSetup setup;
  setup.model = args.model;
  setup.workload = args.workload;
  setup.device = kind.value() == DeviceKind::Cuda ? "cuda" : "cpu";
  setup.date = today();
  setup.seed = args.seed;
  setup.repeat = args.repeat;
  setup.duration = args.duration;
  setup.warmup = args.warmup;
  setup.cooldown = args.cooldown;
  for (const std::string &word : arguments)
    setup.command += (setup.command.empty() ? "" : " ") + word;
  setup.command = "cellrun bench " + setup.command;

  std::map<std::string, PeerOptions> peers; // by name
  bool withPeer = !args.peerWeights.empty();
  if (withPeer) {
    std::string reference = args.out + "/reference.jsonl";
    for (const std::string &name : args.peers) {
      if (peers.count(name))
        continue;
      PeerOptions &peer = peers[name];
      Status scripted = choosePeerScript(*artifact.value()->model().unfolding(),
                                         args.peersDir, name, peer);
      if (!scripted.isOk())
        return fail(scripted);
      if (name == "onnxruntime" && kind.value() == DeviceKind::Cuda)
        return fail(Status(StatusCode::Unsupported,
                           "the onnxruntime peer runs on the CPU only; on a "
                           "GPU the peer is pytorch (cuDNN)"));
      peer.python = args.python;
      // The peer runs where we run: cuDNN against our CUDA kernels.
      peer.device = kind.value() == DeviceKind::Cuda ? "cuda" : "cpu";
      peer.weights = args.peerWeights;
      peer.threads = args.threads
                         ? args.threads
                         : std::max(1u, std::thread::hardware_concurrency());
      peer.bucketWidth = args.peerBuckets;
      peer.maxBatch = args.peerMaxBatch ? args.peerMaxBatch : largestBatch;
      peer.reference = reference;
      // Our GEMMs' products in reduced precision: the check against the
      // peer's fp32 allows for it (measured: bf16 at hidden 1024 up to 3x
      // the fp32 tolerance).
      switch (artifact.value()->model().precision()) {
      case cellpack::Precision::BF16:
      case cellpack::Precision::FP16:
        peer.extra += " --tolerance 3e-2,3e-3";
        break;
      case cellpack::Precision::TF32:
        peer.extra += " --tolerance 1e-2,1e-3";
        break;
      case cellpack::Precision::FP32:
        break;
      }
    }
    if (Status grown = bank.growTo(8); !grown.isOk())
      return fail(grown);
    std::vector<Request> first(bank.requests.begin(),
                               bank.requests.begin() + 8);
    if (Status written =
            writeReference(artifact.value(), base, first, reference);
        !written.isOk())
      return fail(written);
  }

  // Padded batching needs sequences: trees go without it.
  if (artifact.value()->model().unfolding()->structure() ==
          cellpack::Structure::Tree &&
      std::find(args.policies.begin(), args.policies.end(), "padded") !=
          args.policies.end()) {
    args.policies.erase(
        std::find(args.policies.begin(), args.policies.end(), "padded"));
    std::cout << "cellrun bench: padded batching needs sequences; this model "
                 "unfolds trees, so it runs without it\n";
    if (args.policies.empty() && !withPeer)
      return fail(Status(StatusCode::Unsupported, "nothing left to run"));
  }
  std::vector<std::string> systems;
  for (const std::string &policy : args.policies) // each once
    if (std::find(systems.begin(), systems.end(), policy) == systems.end())
      systems.push_back(policy);
  ServerOptions server;
  if (!args.server.empty()) {
    server.url = args.server;
    server.model = args.serverModel;
    if (server.model.empty() && artifact.value()->model().model_name())
      server.model = artifact.value()->model().model_name()->str();
    server.connections = args.connections;
    server.deadlineMs = args.deadlineMs;
    systems.push_back(args.server.rfind("grpc://", 0) == 0 ? "serve-grpc"
                                                           : "serve-http");
  }
  for (const std::string &name : args.peers)
    if (peers.count(name) &&
        std::find(systems.begin(), systems.end(), name) == systems.end())
      systems.push_back(name);
  double windowStart = args.warmup, windowEnd = args.duration - args.cooldown;
  std::cout << "cellrun bench: " << args.model << ", workload " << args.workload
            << " (" << workload.value().shapes.size() << " shapes), "
            << setup.device << ", " << args.duration
            << " s of arrivals a run; the first " << args.warmup
            << " s and the last " << args.cooldown
            << " s of arrivals are not measured\n";
  // One run of `system` on `trace`: at the rate `rate` names, or offline
  // (the peer then sorts the requests into full batches).
  auto runSystem =
      [&](const std::string &system, const std::vector<TraceEntry> &trace,
          const std::string &rate, bool offline) -> Result<RunRecord> {
    std::string progress = system + " " + (offline ? "offline" : rate + "/s");
    if (isServer(system))
      return runServer(server, bank.lines, parser.value()->signature(), trace,
                       progress, args.quiet);
    if (peers.count(system)) {
      PeerOptions &peer = peers[system];
      PeerOptions options = peer;
      if (offline)
        options.mode = "sorted";
      std::string summary;
      Result<RunRecord> record = runPeer(
          options, bank.lines, trace, args.out,
          system + "-" + (offline ? "offline" : "online-" + rate), summary);
      // The first run's summary says what the peer checked.
      if (record.ok() && !setup.peerSummaries.count(system))
        setup.peerSummaries[system] = summary;
      peer.reference.clear(); // checked once
      return record;
    }
    EngineOptions options = base;
    options.policy = parsePolicy(system).value();
    options.maxQueue =
        args.maxQueue ? args.maxQueue : std::max<uint32_t>(1, trace.size());
    return runEngine(artifact.value(), options, bank.requests, trace, progress,
                     args.quiet);
  };
  std::vector<BenchRow> rows;
  // Per system, the first rate's p90, and whether it has diverged.
  std::map<std::string, double> firstP90;
  std::map<std::string, bool> diverged;
  std::vector<double> rates = args.rates;
  std::map<std::string, BatchSeries> lastRun; // per policy, its last run
  for (size_t r = 0; r < rates.size(); ++r) {
    double rate = rates[r];
    std::vector<TraceEntry> trace =
        poissonTrace(args.seed, rate, args.duration);
    if (trace.empty()) {
      std::cout << "\nno request arrives in " << args.duration << " s at "
                << rate << "/s: skipped\n";
      continue;
    }
    if (Status grown = bank.growTo(trace.back().request + 1); !grown.isOk())
      return fail(grown);
    char label[64];
    std::snprintf(label, sizeof(label), "%g", rate);
    std::cout << "\n" << trace.size() << " requests at " << label << "/s\n";
    printHeader(std::cout);
    bool anyLeft = false;
    for (const std::string &system : systems) {
      if (diverged[system])
        continue;
      std::vector<BenchRow> runs;
      for (uint32_t run = 0; run < args.repeat; ++run) {
        Result<RunRecord> record = runSystem(system, trace, label, false);
        if (!record.ok())
          return fail(record.status());
        if (!peers.count(system))
          lastRun[system] = {system + " at " + label + "/s", record.value()};
        runs.push_back(
            makeRow(system, rate, record.value(), windowStart, windowEnd));
      }
      rows.push_back(medianRow(runs));
      printRow(std::cout, rows.back());
      std::cout.flush();
      const LatencySummary &s = rows.back().summary;
      if (!firstP90.count(system))
        firstP90[system] = s.p90;
      if (args.saturate && (s.achievedPerSecond < 0.9 * s.offeredPerSecond ||
                            s.p90 > 10 * firstP90[system]))
        diverged[system] = true;
      anyLeft |= !diverged[system];
    }
    if (args.saturate && r + 1 == rates.size() && anyLeft && rates.size() < 24)
      rates.push_back(rate * 1.5);
  }
  if (args.offline > 0) {
    std::vector<TraceEntry> trace = offlineTrace(args.offline);
    if (Status grown = bank.growTo(args.offline); !grown.isOk())
      return fail(grown);
    std::cout << "\n"
              << args.offline
              << " requests at once (offline: served as fast as each system "
                 "takes them; the peer sorts them by length into full "
                 "batches)\n";
    printHeader(std::cout);
    for (const std::string &system : systems) {
      if (isServer(system))
        continue; // a server is measured under load, not offline
      std::vector<BenchRow> runs;
      for (uint32_t run = 0; run < args.repeat; ++run) {
        Result<RunRecord> record = runSystem(system, trace, "", true);
        if (!record.ok())
          return fail(record.status());
        runs.push_back(
            makeRow(system, 0, record.value(), 0, kOfflineWindowEnd));
      }
      rows.push_back(medianRow(runs));
      printRow(std::cout, rows.back());
      std::cout.flush();
    }
  }
  if (args.saturate) {
    std::cout << "\npeak throughput (the most served before latency "
                 "diverged):\n";
    for (const std::string &system : systems) {
      // The most served at a rate before the one where latency diverged.
      double peak = 0;
      size_t seen = 0, rowsOfSystem = 0;
      for (const BenchRow &row : rows)
        rowsOfSystem += row.system == system && row.rate > 0;
      for (const BenchRow &row : rows)
        if (row.system == system && row.rate > 0 &&
            (++seen < rowsOfSystem || !diverged[system]))
          peak = std::max(peak, row.summary.achievedPerSecond);
      std::printf("  %-11s %10.1f requests/s%s\n", system.c_str(), peak,
                  diverged[system] ? ""
                                   : " (did not diverge: raise the rates)");
    }
  }
  std::ofstream csv(args.out + "/bench.csv"), json(args.out + "/bench.json");
  writeCsv(csv, rows);
  writeJson(json, setup, rows);
  if (!csv || !json)
    return fail(Status(StatusCode::Internal, "cannot write under " + args.out));
  std::cout << "\nwrote " << args.out << "/bench.csv and " << args.out
            << "/bench.json\n";
  bool anyRate = std::any_of(rows.begin(), rows.end(),
                             [](const BenchRow &row) { return row.rate > 0; });
  if (args.plot && !anyRate)
    std::cout << "--plot: the charts need runs at a rate; none ran\n";
  if (args.plot && anyRate) {
    std::vector<BatchSeries> batches;
    for (const std::string &system : args.policies)
      if (lastRun.count(system))
        batches.push_back(std::move(lastRun[system]));
    std::string title = std::filesystem::path(args.model).filename().string() +
                        ", " +
                        std::filesystem::path(args.workload).stem().string() +
                        ", " + setup.device;
    if (Status plotted = writePlots(args.out, title, rows, batches);
        !plotted.isOk())
      return fail(plotted);
    std::cout << "drew " << args.out << "/latency.{png,svg} and " << args.out
              << "/batch.{png,svg}\n";
  }
  return kExitOk;
}

} // namespace cellrun::tool
