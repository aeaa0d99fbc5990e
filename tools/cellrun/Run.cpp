//===- Run.cpp - `cellrun run`: offline inference of a request file -------===//
//
// Reads requests (one JSON object a line), serves them through the engine
// with the chosen batching policy on the chosen device, writes one result a
// line in input order, shows progress on a terminal and ends with a
// summary: requests, throughput, latency percentiles, mean batch per cell
// type; optionally a CSV line per task. A bad line becomes an error result;
// the others still run.
//
//===----------------------------------------------------------------------===//
#include "Run.h"
#include "RunReport.h"

#include "cellrun/Engine.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

namespace cellrun::tool {
namespace {

struct RunArgs {
  std::string model, input, output, taskLog;
  std::string policy = "cellular", device = "auto";
  uint32_t poolRows = 4096, maxQueue = 1024, batchRequests = 0, bucketWidth = 8,
           threads = 0, workers = 1;
  bool quiet = false;
};

void addOptions(CLI::App &app, RunArgs &args) {
  app.footer("Request lines (see docs/runtime.md):\n"
             "  chain/seq2seq  {\"id\": \"r1\", \"tokens\": [5, 17, 3]}  or "
             "{\"steps\": [{\"x\": [...]}, ...]}\n"
             "  tree           {\"id\": \"t1\", \"nodes\": [{\"token\": 4}, "
             "{\"token\": 9}, {\"children\": [0, 1]}]}");
  app.add_option("model", args.model, "the compiled model (.cellpack)")
      ->required();
  app.add_option("--input", args.input, "requests, one JSON object a line")
      ->required();
  app.add_option("--output", args.output, "results, one JSON object a line");
  app.add_option("--policy", args.policy, "batching policy")
      ->capture_default_str()
      ->check(CLI::IsMember({"cellular", "padded", "graph"}));
  app.add_option("--device", args.device, "backend: cuda, cpu or auto")
      ->capture_default_str();
  auto positive = CLI::Range(1u, 1u << 30);
  app.add_option("--pool-rows", args.poolRows,
                 "rows of every state pool: the memory budget")
      ->capture_default_str()
      ->check(positive);
  app.add_option("--max-queue", args.maxQueue, "requests waiting for admission")
      ->capture_default_str()
      ->check(positive);
  app.add_option("--batch-requests", args.batchRequests,
                 "padded/graph: requests a batch (default: the largest batch "
                 "size)")
      ->check(positive);
  app.add_option("--bucket-width", args.bucketWidth, "padded: lengths a bucket")
      ->capture_default_str()
      ->check(positive);
  app.add_option("--threads", args.threads,
                 "cpu backend: threads a task (0: one per core, shared "
                 "among --workers)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1024u));
  app.add_option("--workers", args.workers,
                 "workers, one per device (cuda: devices 0..N-1)")
      ->capture_default_str()
      ->check(positive);
  app.add_option("--task-log", args.taskLog,
                 "one CSV line per task: cell, nodes, batch size, times");
  app.add_flag("--quiet", args.quiet, "no progress bar");
}

} // namespace

int runRun(const std::vector<std::string> &arguments) {
  CLI::App app("Serves a file of requests through the scheduler (cellular "
               "batching unless --policy says otherwise) and prints a "
               "summary.",
               "cellrun run");
  RunArgs args;
  addOptions(app, args);
  if (auto exit = parseCommandLine(app, arguments))
    return *exit;
  EngineOptions engineOptions;
  auto device = parseDeviceChoice(args.device);
  if (!device.ok()) {
    std::cerr << "cellrun run: " << device.status().message() << "\n";
    return kExitUsage;
  }
  std::string note;
  auto kind = resolveDevice(device.value(), note);
  if (!kind.ok()) {
    std::cerr << "cellrun: error: " << kind.status().message() << "\n";
    return kExitFailure;
  }
  if (!note.empty())
    std::cerr << "cellrun: " << note << "\n";
  engineOptions.policy = parsePolicy(args.policy).value();
  engineOptions.executor.device = kind.value();
  engineOptions.executor.threads = args.threads;
  engineOptions.workers = args.workers;
  engineOptions.poolRows = args.poolRows;
  engineOptions.maxQueue = args.maxQueue;
  engineOptions.batchRequests = args.batchRequests;
  engineOptions.bucketWidth = args.bucketWidth;

  auto artifact = loadArtifact(args.model);
  if (!artifact.ok()) {
    std::cerr << "cellrun: error: " << artifact.status().message() << "\n";
    return kExitFailure;
  }
  auto start = std::chrono::steady_clock::now();
  TaskLog taskLog(start);
  bool logging = !args.taskLog.empty();
  if (logging)
    engineOptions.onTask = [&taskLog](const TaskRecord &record) {
      taskLog.add(record);
    };
  auto created = Engine::create(artifact.value(), engineOptions);
  if (!created.ok()) {
    std::cerr << "cellrun: error: " << created.status().message() << "\n";
    return kExitFailure;
  }
  Engine &engine = *created.value();
  std::ifstream input(args.input);
  if (!input) {
    std::cerr << "cellrun: error: cannot open " << args.input << "\n";
    return kExitFailure;
  }
  std::ofstream output;
  bool writing = !args.output.empty();
  if (writing) {
    output.open(args.output);
    if (!output) {
      std::cerr << "cellrun: error: cannot write " << args.output << "\n";
      return kExitFailure;
    }
  }

  // Results come back on the engine's thread in any order; they are kept
  // by input line and the bar counts them as they arrive.
  bool progress = !args.quiet && isatty(STDERR_FILENO);
  std::vector<std::shared_ptr<RequestResult>> results;
  std::atomic<size_t> done{0};
  auto lastDraw = std::chrono::steady_clock::now();
  auto redraw = [&](bool force) {
    auto now = std::chrono::steady_clock::now();
    if (progress &&
        (force || now - lastDraw > std::chrono::milliseconds(100))) {
      drawProgress(done.load(), results.size());
      lastDraw = now;
    }
  };
  std::string line;
  size_t lineNumber = 0;
  while (std::getline(input, line)) {
    ++lineNumber;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto slot = std::make_shared<RequestResult>();
    results.push_back(slot);
    std::string fallback = "line " + std::to_string(lineNumber);
    auto request = engine.parser().parse(line, fallback);
    if (!request.ok()) {
      slot->id = RequestParser::requestId(line, fallback);
      slot->status = request.status();
      ++done;
      continue;
    }
    // Offline: wait for room in the queue instead of failing.
    while (true) {
      Status status =
          engine.submit(request.value(), [slot, &done](RequestResult r) {
            *slot = std::move(r);
            ++done;
          });
      if (status.isOk())
        break;
      if (status.code() != StatusCode::ResourceExhausted) {
        slot->id = request.value().id;
        slot->status = status;
        ++done;
        break;
      }
      redraw(false);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    redraw(false);
  }
  while (done.load() < results.size()) {
    redraw(false);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  redraw(true);
  if (progress)
    std::fprintf(stderr, "\n");
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  std::vector<double> latencies;
  size_t failed = 0;
  for (const auto &result : results) {
    if (result->status.isOk()) {
      latencies.push_back((result->queueMicros + result->computeMicros) / 1000);
    } else {
      ++failed;
      if (!writing)
        std::cerr << "cellrun: " << result->status.message() << "\n";
    }
    if (writing)
      output << resultLine(*result) << "\n";
  }
  EngineStats stats = engine.stats();
  if (logging) {
    std::ofstream log(args.taskLog);
    if (!log) {
      std::cerr << "cellrun: error: cannot write " << args.taskLog << "\n";
      return kExitFailure;
    }
    taskLog.write(log, stats);
  }
  const auto *name = artifact.value()->model().model_name();
  std::string where = engine.executor().describe();
  if (engine.workers() > 1)
    where += " and " + std::to_string(engine.workers() - 1) + " more";
  printSummary(name ? name->str() : "?", policyName(engineOptions.policy),
               where, results.size(), std::move(latencies), seconds, stats);
  return failed ? kExitFailure : kExitOk;
}

} // namespace cellrun::tool
