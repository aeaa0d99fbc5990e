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
#include "BenchSession.h"
#include "Devices.h"

#include <cmath>
#include <iostream>
#include <optional>

namespace cellrun::tool {
namespace {

using namespace cellrun::loadgen;

/// The model, the workload and the trace: rates, duration and the
/// unmeasured warm-up and cool-down.
void addTraceOptions(CLI::App &app, BenchArgs &args) {
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
}

/// Our engine: policies, backend, threads, pools, queue and deadline.
void addEngineOptions(CLI::App &app, BenchArgs &args) {
  app.add_option("--policy", args.policies, "our policies to run")
      ->delimiter(',')
      ->check(CLI::IsMember({"cellular", "padded", "graph"}))
      ->capture_default_str();
  app.add_option("--device", args.device, "backend: cuda, cpu or auto")
      ->capture_default_str();
  app.add_option("--threads", args.threads,
                 "cpu: threads a task, and the peer's torch threads (0: one "
                 "per core, shared among --workers)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1024u));
  app.add_option("--copy-threads", args.copyThreads, kCopyThreadsHelp)
      ->capture_default_str()
      ->check(CLI::Range(0u, 64u));
  app.add_flag("--pinned-results", args.pinnedResults, kPinnedResultsHelp);
  app.add_flag("--cuda-graphs", args.cudaGraphs, kCudaGraphsHelp);
  app.add_option("--workers", args.workers,
                 "our workers, one per device, each with its own pools "
                 "(cuda: devices 0..N-1 unless --workers-per-device says "
                 "otherwise; cpu: each with --threads threads)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_option("--workers-per-device", args.workersPerDevice,
                 kWorkersPerDeviceHelp)
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_option("--pool-rows", args.poolRows, "rows of every state pool")
      ->capture_default_str()
      ->check(CLI::Range(2u, 1u << 30));
  app.add_option("--memory-budget", args.memoryBudget, kMemoryBudgetHelp)
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--max-queue", args.maxQueue,
                 "requests waiting for admission (default: the whole trace, "
                 "so nothing is dropped)");
  app.add_option("--max-running", args.maxRunning, kMaxRunningHelp)
      ->capture_default_str();
  app.add_option("--chain-order", args.chainOrder,
                 "cellular, a chain model, the --offline round (online runs "
                 "take turns): which running requests a task takes (as in "
                 "cellrun run --help)")
      ->capture_default_str()
      ->check(chainOrderCheck());
  app.add_option("--fill-rows", args.fillRows, kFillRowsHelp)
      ->capture_default_str();
  app.add_flag("--no-move", args.noMove, kNoMoveHelp);
  app.add_flag("--no-chain-batch", args.noChainBatch, kNoChainBatchHelp);
  app.add_option("--bucket-width", args.bucketWidth,
                 "padded policy: lengths a bucket")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100000u));
  app.add_option("--deadline-ms", args.deadlineMs,
                 "a latency goal for every request (ms); results later than "
                 "that count as deadline misses (0: none)")
      ->check(CLI::Range(0.0, 86400000.0));
}

/// The runs: seed, repeats, output directory and the --server target.
void addRunOptions(CLI::App &app, BenchArgs &args) {
  app.add_option("--seed", args.seed, "arrivals and request contents")
      ->capture_default_str();
  app.add_option("--repeat", args.repeat,
                 "runs of every system at every rate on the same trace, the "
                 "systems taking turns: each column is their median, and the "
                 "spread of throughput, p50 "
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
}

/// The peers (PyTorch, ONNX Runtime): weights, batching and scripts.
void addPeerOptions(CLI::App &app, BenchArgs &args) {
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
}

/// Plots and the progress line.
void addDisplayOptions(CLI::App &app, BenchArgs &args) {
  app.add_flag("--plot", args.plot,
               "draw latency.{png,svg} (latency against throughput) and "
               "batch.{png,svg} (batch size over time) with gnuplot");
  app.add_flag("--quiet", args.quiet, "no progress line");
}

/// All of bench's options, in --help's order.
void addOptions(CLI::App &app, BenchArgs &args) {
  addTraceOptions(app, args);
  addEngineOptions(app, args);
  addRunOptions(app, args);
  addPeerOptions(app, args);
  addDisplayOptions(app, args);
}

/// Checks what the options leave to run and fills in the defaults; an exit
/// code when they do not make a benchmark.
std::optional<int> checkArgs(BenchArgs &args) {
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
  return std::nullopt;
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
  if (auto exit = checkArgs(args))
    return *exit;
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
  std::string command = "cellrun bench";
  for (const std::string &word : arguments)
    command += " " + word;
  auto session = BenchSession::create(std::move(args), command, kind.value());
  if (!session.ok())
    return fail(session.status());
  BenchSession &bench = *session.value();
  if (Status ran = bench.runRates(); !ran.isOk())
    return fail(ran);
  if (Status ran = bench.runOffline(); !ran.isOk())
    return fail(ran);
  bench.printPeaks();
  if (Status written = bench.writeOutputs(); !written.isOk())
    return fail(written);
  return kExitOk;
}

} // namespace cellrun::tool
