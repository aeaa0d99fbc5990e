//===- BenchSession.h - One `cellrun bench` run -----------------*- C++ -*-===//
//
// What `cellrun bench` does once its options are read (Bench.cpp): loads the
// model and the workload, prepares the peers and the list of systems, runs
// every system on the trace of each rate (and offline), then prints the
// peaks and writes bench.csv, bench.json and the charts.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_BENCHSESSION_H
#define CELLRUN_TOOLS_BENCHSESSION_H

#include "loadgen/BenchPlot.h"
#include "loadgen/BenchReport.h"
#include "loadgen/LoadRunner.h"
#include "loadgen/PeerRunner.h"
#include "loadgen/ServerLoad.h"
#include "loadgen/Workload.h"

#include "cellrun/Engine.h"
#include "cellrun/RequestParser.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cellrun::tool {

/// The build's virtual environment (it sees Debian's torch and has
/// onnxruntime from PyPI) where there is one, else Debian's python3.
std::string defaultPeerPython();

#ifndef CELLRUN_PEERS_DIR
#define CELLRUN_PEERS_DIR "bench/peers"
#endif

struct BenchArgs {
  std::string model, workload, out = "bench-out", device = "auto",
                               chainOrder = "turns";
  std::vector<double> rates;
  bool saturate = false, quiet = false, plot = false, noMove = false,
       noChainBatch = false, pinnedResults = false, cudaGraphs = false;
  double duration = 10, warmup = -1, cooldown = -1, deadlineMs = 0;
  std::vector<std::string> policies = {"cellular", "padded", "graph"};
  uint64_t seed = 2018;
  uint64_t memoryBudget = 0; // bytes; 0: poolRows
  uint32_t workers = 1, workersPerDevice = 1, threads = 0, copyThreads = 0,
           poolRows = 4096, maxQueue = 0, bucketWidth = 10, fillRows = 32,
           peerBuckets = 0, peerMaxBatch = 0, offline = 0, repeat = 1,
           maxRunning = 0;
  std::string server, serverModel;
  uint32_t connections = 64;
  std::string peerWeights, python = defaultPeerPython(),
                           peersDir = CELLRUN_PEERS_DIR;
  std::vector<std::string> peers = {"pytorch"};
};

/// Requests by number, drawn on demand: `lines` for the peer, `requests`
/// for the engine.
struct RequestBank {
  const loadgen::Workload *workload = nullptr;
  const loadgen::RequestSynthesizer *synthesizer = nullptr;
  const RequestParser *parser = nullptr;
  uint64_t seed = 0;
  double deadlineMicros = 0;
  std::vector<std::string> lines;
  std::vector<Request> requests;

  Status growTo(size_t count);
};

class BenchSession {
public:
  /// Loads the model and the workload, writes the peers' reference outputs
  /// and chooses the systems to run. `command` is the command line, for
  /// bench.json; `device` the device the runs use.
  static Result<std::unique_ptr<BenchSession>>
  create(BenchArgs args, std::string command, DeviceKind device);

  /// Every system on the trace of each rate (--rate, --sweep; --saturate
  /// adds rates until every system has diverged).
  Status runRates();
  /// Every system but a server on --offline requests at once.
  Status runOffline();
  /// --saturate: the most each system served before latency diverged.
  void printPeaks() const;
  /// bench.csv, bench.json and, with --plot, the charts.
  Status writeOutputs();

private:
  BenchSession() = default;
  Status load(DeviceKind device);
  Status preparePeers();
  void chooseSystems();
  /// One run of `system` on `trace`: at the rate `rate` names, or offline
  /// (the peer then sorts the requests into full batches).
  Result<loadgen::RunRecord>
  runSystem(const std::string &system,
            const std::vector<loadgen::TraceEntry> &trace,
            const std::string &rate, bool offline);
  /// `repeat` runs of each of `systems`, taken in turn (run 1 of every
  /// system, then run 2, ...: a slow spell of the machine falls on all of
  /// them alike); each system's median row is added to the table.
  Status runRepeated(const std::vector<std::string> &systems,
                     const std::vector<loadgen::TraceEntry> &trace, double rate,
                     bool offline);

  BenchArgs args_;
  DeviceKind device_ = DeviceKind::Cpu;
  std::shared_ptr<const LoadedArtifact> artifact_;
  ModelInfo model_; // what artifact_ holds
  std::unique_ptr<RequestParser> parser_;
  std::unique_ptr<loadgen::Workload> workload_;
  std::unique_ptr<loadgen::RequestSynthesizer> synthesizer_;
  RequestBank bank_;
  EngineOptions base_;
  uint32_t largestBatch_ = 1;
  loadgen::BenchSetup setup_;
  std::map<std::string, loadgen::PeerOptions> peers_; // by name
  loadgen::ServerOptions server_;
  std::vector<std::string> systems_;
  std::vector<loadgen::BenchRow> rows_;
  /// Per system, the first rate's p90, and whether it has diverged.
  std::map<std::string, double> firstP90_;
  std::map<std::string, bool> diverged_;
  std::map<std::string, loadgen::BatchSeries> lastRun_; // per policy
};

} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_BENCHSESSION_H
