//===- BenchSession.cpp - One `cellrun bench` run
//--------------------------===//
#include "BenchSession.h"
#include "CommandLine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

using namespace cellrun;
using namespace cellrun::loadgen;
using namespace cellrun::tool;

std::string cellrun::tool::defaultPeerPython() {
#ifdef CELLRUN_PEER_PYTHON
  if (std::filesystem::exists(CELLRUN_PEER_PYTHON))
    return CELLRUN_PEER_PYTHON;
#endif
  return "/usr/bin/python3";
}

Status RequestBank::growTo(size_t count) {
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

namespace {
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

Result<std::unique_ptr<BenchSession>>
BenchSession::create(BenchArgs args, std::string command, DeviceKind device) {
  std::unique_ptr<BenchSession> session(new BenchSession());
  session->args_ = std::move(args);
  session->setup_.command = std::move(command);
  if (Status loaded = session->load(device); !loaded.isOk())
    return loaded;
  if (Status prepared = session->preparePeers(); !prepared.isOk())
    return prepared;
  session->chooseSystems();
  if (session->systems_.empty())
    return Status(StatusCode::Unsupported, "nothing left to run");
  return session;
}

Status BenchSession::load(DeviceKind device) {
  device_ = device;
  auto artifact = loadArtifact(args_.model);
  if (!artifact.ok())
    return artifact.status();
  artifact_ = artifact.value();
  model_ = describeModel(*artifact_);
  auto workload = loadWorkload(args_.workload);
  if (!workload.ok())
    return workload.status();
  workload_ = std::make_unique<Workload>(std::move(workload).value());
  auto parser = RequestParser::create(artifact_);
  if (!parser.ok())
    return parser.status();
  parser_ = std::move(parser).value();
  auto synthesizer =
      RequestSynthesizer::create(*artifact_, parser_->signature());
  if (!synthesizer.ok())
    return synthesizer.status();
  synthesizer_ =
      std::make_unique<RequestSynthesizer>(std::move(synthesizer).value());
  bank_.workload = workload_.get();
  bank_.synthesizer = synthesizer_.get();
  bank_.parser = parser_.get();
  bank_.seed = args_.seed;
  bank_.deadlineMicros = args_.deadlineMs * 1000;
  std::error_code made;
  std::filesystem::create_directories(args_.out, made);
  if (made)
    return Status(StatusCode::Internal,
                  "cannot create " + args_.out + ": " + made.message());

  base_.executor.device = device_;
  base_.executor.threads = args_.threads;
  base_.executor.copyThreads = args_.copyThreads;
  base_.executor.pinnedResults = args_.pinnedResults;
  base_.executor.cudaGraphs = args_.cudaGraphs;
  if (std::string unused = cudaOnlyFlagsNote(base_.executor); !unused.empty())
    std::cerr << "cellrun: " << unused << "\n";
  base_.workers = args_.workers;
  base_.workersPerDevice = args_.workersPerDevice;
  base_.poolRows = args_.poolRows;
  if (args_.memoryBudget > 0) {
    std::string error;
    std::optional<uint32_t> rows =
        poolRowsOfBudget(args_.memoryBudget, model_.poolBytesPerRow, error);
    if (!rows)
      return Status(StatusCode::InvalidArgument, error);
    base_.poolRows = *rows;
  }
  base_.bucketWidth = args_.bucketWidth;
  base_.fillRows = args_.fillRows;
  base_.moveRequests = !args_.noMove;
  base_.chainBatch = !args_.noChainBatch;
  base_.chainOrder = parseChainOrder(args_.chainOrder).value();
  base_.maxRunning = args_.maxRunning;
  for (const CellInfo &cell : model_.cells)
    largestBatch_ = std::max(largestBatch_, cell.batchSizes.back());
  setup_.model = args_.model;
  setup_.workload = args_.workload;
  setup_.device = device_ == DeviceKind::Cuda ? "cuda" : "cpu";
  setup_.date = today();
  setup_.seed = args_.seed;
  setup_.repeat = args_.repeat;
  setup_.duration = args_.duration;
  setup_.warmup = args_.warmup;
  setup_.cooldown = args_.cooldown;
  return Status::ok();
}

Status BenchSession::preparePeers() {
  if (args_.peerWeights.empty())
    return Status::ok();
  std::string reference = args_.out + "/reference.jsonl";
  for (const std::string &name : args_.peers) {
    if (peers_.count(name))
      continue;
    PeerOptions &peer = peers_[name];
    Status scripted = choosePeerScript(model_, args_.peersDir, name, peer);
    if (!scripted.isOk())
      return scripted;
    if (name == "onnxruntime" && device_ == DeviceKind::Cuda)
      return Status(StatusCode::Unsupported,
                    "the onnxruntime peer runs on the CPU only; on a GPU the "
                    "peer is pytorch (cuDNN)");
    peer.python = args_.python;
    // The peer runs where we run: cuDNN against our CUDA kernels.
    peer.device = device_ == DeviceKind::Cuda ? "cuda" : "cpu";
    peer.weights = args_.peerWeights;
    peer.threads = args_.threads
                       ? args_.threads
                       : std::max(1u, std::thread::hardware_concurrency());
    peer.bucketWidth = args_.peerBuckets;
    peer.maxBatch = args_.peerMaxBatch ? args_.peerMaxBatch : largestBatch_;
    peer.reference = reference;
    // Our GEMMs' products in reduced precision: the check against the
    // peer's fp32 allows for it (measured at hidden 1024 on WMT-like
    // lengths: the bf16 LSTM up to 3x the fp32 tolerance, the bf16 GRU 1.4x
    // of 3e-2,3e-3, with or without AMX).
    // On cuda the peer computes in the same precision: TF32 in cuDNN and
    // cuBLAS for tf32; for bf16 the model in bfloat16 (weights and
    // activations, what a PyTorch user runs; on an H200 the hidden-1024
    // LSTM's worst difference was 0.099 of 1e-1,3e-2, so within this).
    bool cuda = device_ == DeviceKind::Cuda;
    switch (model_.precision) {
    case ComputePrecision::BF16:
      peer.extra += cuda ? " --precision bf16" : "";
      peer.extra += " --tolerance 6e-2,6e-3";
      break;
    case ComputePrecision::FP16:
      peer.extra += " --tolerance 6e-2,6e-3";
      break;
    case ComputePrecision::TF32:
      peer.extra += cuda ? " --precision tf32 --tolerance 1e-2,1e-3"
                         : " --tolerance 1e-2,1e-3";
      break;
    case ComputePrecision::FP32:
      break;
    }
  }
  if (Status grown = bank_.growTo(8); !grown.isOk())
    return grown;
  std::vector<Request> first(bank_.requests.begin(),
                             bank_.requests.begin() + 8);
  return writeReference(artifact_, base_, first, reference);
}

void BenchSession::chooseSystems() {
  // Padded batching needs sequences: trees go without it.
  auto padded = std::find(args_.policies.begin(), args_.policies.end(),
                          std::string("padded"));
  if (model_.unfolding == UnfoldingKind::Tree &&
      padded != args_.policies.end()) {
    args_.policies.erase(padded);
    std::cout << "cellrun bench: padded batching needs sequences; this model "
                 "unfolds trees, so it runs without it\n";
  }
  for (const std::string &policy : args_.policies) // each once
    if (std::find(systems_.begin(), systems_.end(), policy) == systems_.end())
      systems_.push_back(policy);
  if (!args_.server.empty()) {
    server_.url = args_.server;
    server_.model = args_.serverModel;
    if (server_.model.empty())
      server_.model = model_.name;
    server_.connections = args_.connections;
    server_.deadlineMs = args_.deadlineMs;
    systems_.push_back(args_.server.rfind("grpc://", 0) == 0 ? "serve-grpc"
                                                             : "serve-http");
  }
  for (const std::string &name : args_.peers)
    if (peers_.count(name) &&
        std::find(systems_.begin(), systems_.end(), name) == systems_.end())
      systems_.push_back(name);
  std::cout << "cellrun bench: " << args_.model << ", workload "
            << args_.workload << " (" << workload_->shapes.size()
            << " shapes), " << setup_.device << ", " << args_.duration
            << " s of arrivals a run; the first " << args_.warmup
            << " s and the last " << args_.cooldown
            << " s of arrivals are not measured\n";
  if (base_.chainOrder != EngineOptions::ChainOrder::Turns && args_.offline)
    std::cout << "cellular offline: a chain's tasks take the requests with "
                 "the most steps left first (--chain-order "
              << chainOrderName(base_.chainOrder) << ")\n";
}

Result<RunRecord> BenchSession::runSystem(const std::string &system,
                                          const std::vector<TraceEntry> &trace,
                                          const std::string &rate,
                                          bool offline) {
  std::string progress = system + " " + (offline ? "offline" : rate + "/s");
  if (isServer(system))
    return runServer(server_, bank_.lines, parser_->signature(), trace,
                     progress, args_.quiet);
  if (peers_.count(system)) {
    PeerOptions &peer = peers_[system];
    PeerOptions options = peer;
    if (offline)
      options.mode = "sorted";
    std::string summary;
    Result<RunRecord> record = runPeer(
        options, bank_.lines, trace, args_.out,
        system + "-" + (offline ? "offline" : "online-" + rate), summary);
    // The first run's summary says what the peer checked.
    if (record.ok() && !setup_.peerSummaries.count(system))
      setup_.peerSummaries[system] = summary;
    peer.reference.clear(); // checked once
    return record;
  }
  EngineOptions options = base_;
  options.policy = parsePolicy(system).value();
  if (!offline) // live traffic takes turns (--chain-order is for --offline)
    options.chainOrder = EngineOptions::ChainOrder::Turns;
  options.maxQueue =
      args_.maxQueue ? args_.maxQueue : std::max<uint32_t>(1, trace.size());
  return runEngine(artifact_, options, bank_.requests, trace, progress,
                   args_.quiet);
}

Status BenchSession::runRepeated(const std::vector<std::string> &systems,
                                 const std::vector<TraceEntry> &trace,
                                 double rate, bool offline) {
  char label[64] = "";
  if (!offline)
    std::snprintf(label, sizeof(label), "%g", rate);
  std::vector<std::vector<BenchRow>> runs(systems.size());
  for (uint32_t run = 0; run < args_.repeat; ++run)
    for (size_t s = 0; s < systems.size(); ++s) {
      const std::string &system = systems[s];
      Result<RunRecord> record = runSystem(system, trace, label, offline);
      if (!record.ok())
        return record.status();
      if (offline) {
        runs[s].push_back(
            makeRow(system, 0, record.value(), 0, kOfflineWindowEnd));
        continue;
      }
      if (!peers_.count(system))
        lastRun_[system] = {system + " at " + label + "/s", record.value()};
      runs[s].push_back(makeRow(system, rate, record.value(), args_.warmup,
                                args_.duration - args_.cooldown));
    }
  for (std::vector<BenchRow> &systemRuns : runs) {
    rows_.push_back(medianRow(systemRuns));
    printRow(std::cout, rows_.back());
  }
  std::cout.flush();
  return Status::ok();
}

Status BenchSession::runRates() {
  std::vector<double> rates = args_.rates;
  for (size_t r = 0; r < rates.size(); ++r) {
    double rate = rates[r];
    std::vector<TraceEntry> trace =
        poissonTrace(args_.seed, rate, args_.duration);
    if (trace.empty()) {
      std::cout << "\nno request arrives in " << args_.duration << " s at "
                << rate << "/s: skipped\n";
      continue;
    }
    if (Status grown = bank_.growTo(trace.back().request + 1); !grown.isOk())
      return grown;
    std::printf("\n%zu requests at %g/s\n", trace.size(), rate);
    std::fflush(stdout);
    printHeader(std::cout);
    std::vector<std::string> running;
    for (const std::string &system : systems_)
      if (!diverged_[system])
        running.push_back(system);
    if (Status ran = runRepeated(running, trace, rate, false); !ran.isOk())
      return ran;
    bool anyLeft = false;
    for (size_t s = 0; s < running.size(); ++s) {
      const std::string &system = running[s];
      const LatencySummary &summary =
          rows_[rows_.size() - running.size() + s].summary;
      if (!firstP90_.count(system))
        firstP90_[system] = summary.p90;
      if (args_.saturate &&
          (summary.achievedPerSecond < 0.9 * summary.offeredPerSecond ||
           summary.p90 > 10 * firstP90_[system]))
        diverged_[system] = true;
      anyLeft |= !diverged_[system];
    }
    if (args_.saturate && r + 1 == rates.size() && anyLeft && rates.size() < 24)
      rates.push_back(rate * 1.5);
  }
  return Status::ok();
}

Status BenchSession::runOffline() {
  if (args_.offline == 0)
    return Status::ok();
  std::vector<TraceEntry> trace = offlineTrace(args_.offline);
  if (Status grown = bank_.growTo(args_.offline); !grown.isOk())
    return grown;
  std::cout << "\n"
            << args_.offline
            << " requests at once (offline: served as fast as each system "
               "takes them; the peer sorts them by length into full "
               "batches)\n";
  printHeader(std::cout);
  std::vector<std::string> measured;
  for (const std::string &system : systems_)
    if (!isServer(system)) // a server is measured under load, not offline
      measured.push_back(system);
  return runRepeated(measured, trace, 0, true);
}

void BenchSession::printPeaks() const {
  if (!args_.saturate)
    return;
  std::cout << "\npeak throughput (the most served before latency "
               "diverged):\n";
  for (const std::string &system : systems_) {
    bool diverged = diverged_.count(system) && diverged_.at(system);
    // The most served at a rate before the one where latency diverged.
    double peak = 0;
    size_t seen = 0, rowsOfSystem = 0;
    for (const BenchRow &row : rows_)
      rowsOfSystem += row.system == system && row.rate > 0;
    for (const BenchRow &row : rows_)
      if (row.system == system && row.rate > 0 &&
          (++seen < rowsOfSystem || !diverged))
        peak = std::max(peak, row.summary.achievedPerSecond);
    std::printf("  %-11s %10.1f requests/s%s\n", system.c_str(), peak,
                diverged ? "" : " (did not diverge: raise the rates)");
  }
}

Status BenchSession::writeOutputs() {
  std::ofstream csv(args_.out + "/bench.csv"), json(args_.out + "/bench.json");
  writeCsv(csv, rows_);
  writeJson(json, setup_, rows_);
  if (!csv || !json)
    return Status(StatusCode::Internal, "cannot write under " + args_.out);
  std::cout << "\nwrote " << args_.out << "/bench.csv and " << args_.out
            << "/bench.json\n";
  bool anyRate = std::any_of(rows_.begin(), rows_.end(),
                             [](const BenchRow &row) { return row.rate > 0; });
  if (!args_.plot)
    return Status::ok();
  if (!anyRate) {
    std::cout << "--plot: the charts need runs at a rate; none ran\n";
    return Status::ok();
  }
  std::vector<BatchSeries> batches;
  for (const std::string &system : args_.policies)
    if (lastRun_.count(system))
      batches.push_back(std::move(lastRun_[system]));
  std::string title = std::filesystem::path(args_.model).filename().string() +
                      ", " +
                      std::filesystem::path(args_.workload).stem().string() +
                      ", " + setup_.device;
  if (Status plotted = writePlots(args_.out, title, rows_, batches);
      !plotted.isOk())
    return plotted;
  std::cout << "drew " << args_.out << "/latency.{png,svg} and " << args_.out
            << "/batch.{png,svg}\n";
  return Status::ok();
}
