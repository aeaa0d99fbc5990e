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

const std::vector<OptionSpec> kRunOptions = {
    {"input", true, "FILE", "requests, one JSON object a line (required)"},
    {"output", true, "FILE", "results, one JSON object a line (default: none)"},
    {"policy", true, "cellular|padded|graph",
     "batching policy (default cellular)"},
    {"device", true, "cuda|cpu|auto", "backend (default auto)"},
    {"pool-rows", true, "N",
     "rows of every state pool: the memory budget (default 4096)"},
    {"max-queue", true, "N", "requests waiting for admission (default 1024)"},
    {"batch-requests", true, "N",
     "padded/graph: requests a batch (default: the largest batch size)"},
    {"bucket-width", true, "N", "padded: lengths a bucket (default 8)"},
    {"threads", true, "N", "cpu backend: threads a kernel step (default 1)"},
    {"workers", true, "N",
     "workers, one per device (cuda: devices 0..N-1; default 1)"},
    {"task-log", true, "FILE",
     "one CSV line per task: cell, nodes, batch size, times"},
    {"quiet", false, "", "no progress bar"},
    {"help", false, "", "show this help"},
};

Result<uint32_t> positive(const ParsedArgs &args, const std::string &name,
                          uint32_t fallback) {
  if (!args.has(name))
    return fallback;
  const std::string &text = args.options.at(name);
  char *end = nullptr;
  unsigned long value = std::strtoul(text.c_str(), &end, 10);
  if (text.empty() || *end || value == 0 || value > 1u << 30)
    return Status(StatusCode::InvalidArgument,
                  "--" + name + " takes a positive integer, not '" + text +
                      "'");
  return static_cast<uint32_t>(value);
}

void printHelp() {
  std::cout << "Usage: cellrun run MODEL.cellpack --input REQUESTS.jsonl "
               "[--output RESULTS.jsonl] [options]\n\n"
               "Serves a file of requests through the scheduler (cellular "
               "batching unless --policy says otherwise) and prints a "
               "summary.\n\nRequest lines (see docs/runtime.md):\n"
               "  chain/seq2seq  {\"id\": \"r1\", \"tokens\": [5, 17, 3]}  or "
               "{\"steps\": [{\"x\": [...]}, ...]}\n"
               "  tree           {\"id\": \"t1\", \"nodes\": [{\"token\": 4}, "
               "{\"token\": 9}, {\"children\": [0, 1]}]}\n\nOptions:\n"
            << formatOptions(kRunOptions);
}

} // namespace

int runRun(const std::vector<std::string> &args) {
  Result<ParsedArgs> parsed = parseArgs(args, kRunOptions);
  if (!parsed.ok()) {
    std::cerr << "cellrun run: " << parsed.status().message() << "\n";
    return kExitUsage;
  }
  const ParsedArgs &options = parsed.value();
  if (options.has("help")) {
    printHelp();
    return kExitOk;
  }
  if (options.positionals.size() != 1 || !options.has("input")) {
    std::cerr << "cellrun run: give one MODEL.cellpack and --input FILE "
                 "(cellrun run --help)\n";
    return kExitUsage;
  }
  EngineOptions engineOptions;
  auto policy = parsePolicy(options.has("policy") ? options.options.at("policy")
                                                  : "cellular");
  auto device = parseDeviceChoice(
      options.has("device") ? options.options.at("device") : "auto");
  auto poolRows = positive(options, "pool-rows", 4096);
  auto maxQueue = positive(options, "max-queue", 1024);
  auto batchRequests = positive(options, "batch-requests", 1u << 30);
  auto bucketWidth = positive(options, "bucket-width", 8);
  auto threads = positive(options, "threads", 1);
  auto workers = positive(options, "workers", 1);
  for (const Status &status :
       {policy.status(), device.status(), poolRows.status(), maxQueue.status(),
        batchRequests.status(), bucketWidth.status(), threads.status(),
        workers.status()})
    if (!status.isOk()) {
      std::cerr << "cellrun run: " << status.message() << "\n";
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
  engineOptions.policy = policy.value();
  engineOptions.executor.device = kind.value();
  engineOptions.executor.threads = threads.value();
  engineOptions.workers = workers.value();
  engineOptions.poolRows = poolRows.value();
  engineOptions.maxQueue = maxQueue.value();
  engineOptions.batchRequests =
      options.has("batch-requests") ? batchRequests.value() : 0;
  engineOptions.bucketWidth = bucketWidth.value();

  auto artifact = loadArtifact(options.positionals[0]);
  if (!artifact.ok()) {
    std::cerr << "cellrun: error: " << artifact.status().message() << "\n";
    return kExitFailure;
  }
  auto start = std::chrono::steady_clock::now();
  TaskLog taskLog(start);
  bool logging = options.has("task-log");
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
  std::ifstream input(options.options.at("input"));
  if (!input) {
    std::cerr << "cellrun: error: cannot open " << options.options.at("input")
              << "\n";
    return kExitFailure;
  }
  std::ofstream output;
  bool writing = options.has("output");
  if (writing) {
    output.open(options.options.at("output"));
    if (!output) {
      std::cerr << "cellrun: error: cannot write "
                << options.options.at("output") << "\n";
      return kExitFailure;
    }
  }

  // Results come back on the engine's thread in any order; they are kept
  // by input line and the bar counts them as they arrive.
  bool progress = !options.has("quiet") && isatty(STDERR_FILENO);
  std::vector<std::shared_ptr<RequestResult>> results;
  std::atomic<size_t> done{0};
  auto lastDraw = std::chrono::steady_clock::now();
  auto redraw = [&](bool force) {
    auto now = std::chrono::steady_clock::now();
    if (progress && (force || now - lastDraw > std::chrono::milliseconds(100))) {
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
      slot->id = fallback;
      if (auto json = parseJson(line); json.ok() && json->isObject())
        if (const JsonValue *id = json->find("id"))
          slot->id = id->isString()    ? id->string()
                     : id->isInteger() ? std::to_string(id->integer())
                                       : fallback;
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
    std::ofstream log(options.options.at("task-log"));
    if (!log) {
      std::cerr << "cellrun: error: cannot write "
                << options.options.at("task-log") << "\n";
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
