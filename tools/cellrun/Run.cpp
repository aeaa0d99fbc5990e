//===- Run.cpp - `cellrun run`: offline inference of a request file -------===//
//
// Reads requests (one JSON object a line), serves them through the engine
// with the chosen batching policy on the chosen device, writes one result a
// line in input order, shows progress on a terminal and ends with a
// summary: requests, throughput, latency percentiles, mean batch per cell
// type. A bad line becomes an error result; the others still run.
//
//===----------------------------------------------------------------------===//
#include "Run.h"

#include "cellrun/Engine.h"
#include "cellrun/JsonWriter.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
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

std::string resultLine(const RequestResult &result) {
  std::ostringstream text;
  text << "{\"id\": " << jsonQuote(result.id);
  if (!result.status.isOk()) {
    text << ", \"error\": " << jsonQuote(result.status.message()) << "}";
    return text.str();
  }
  text << ", \"outputs\": {";
  for (size_t t = 0; t < result.outputs.size(); ++t) {
    const OutputTensor &tensor = result.outputs[t];
    text << (t ? ", " : "") << jsonQuote(tensor.name) << ": {\"shape\": [";
    for (size_t d = 0; d < tensor.shape.size(); ++d)
      text << (d ? ", " : "") << tensor.shape[d];
    text << "], \"data\": [";
    char number[32];
    for (size_t i = 0; i < tensor.floats.size(); ++i) {
      std::snprintf(number, sizeof number, "%.9g", tensor.floats[i]);
      text << (i ? ", " : "") << number;
    }
    for (size_t i = 0; i < tensor.integers.size(); ++i)
      text << (i ? ", " : "") << tensor.integers[i];
    text << "]}";
  }
  text << "}";
  if (!result.stopReason.empty())
    text << ", \"stop\": " << jsonQuote(result.stopReason);
  char times[96];
  std::snprintf(times, sizeof times,
                ", \"queue_us\": %.1f, \"compute_us\": %.1f",
                result.queueMicros, result.computeMicros);
  text << times << "}";
  return text.str();
}

double percentile(std::vector<double> values, double fraction) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t index = static_cast<size_t>(fraction * (values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
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

  bool progress = !options.has("quiet") && isatty(STDERR_FILENO);
  auto start = std::chrono::steady_clock::now();
  std::vector<std::future<RequestResult>> futures;
  std::string line;
  size_t lineNumber = 0;
  while (std::getline(input, line)) {
    ++lineNumber;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    std::string fallback = "line " + std::to_string(lineNumber);
    auto request = engine.parser().parse(line, fallback);
    if (!request.ok()) {
      std::promise<RequestResult> failed;
      RequestResult result;
      result.id = fallback;
      if (auto json = parseJson(line); json.ok() && json->isObject())
        if (const JsonValue *id = json->find("id"))
          result.id = id->isString()    ? id->string()
                      : id->isInteger() ? std::to_string(id->integer())
                                        : fallback;
      result.status = request.status();
      failed.set_value(std::move(result));
      futures.push_back(failed.get_future());
      continue;
    }
    // Offline: wait for room in the queue instead of failing.
    while (true) {
      auto promise = std::make_shared<std::promise<RequestResult>>();
      auto future = promise->get_future();
      Status status =
          engine.submit(request.value(), [promise](RequestResult r) {
            promise->set_value(std::move(r));
          });
      if (status.isOk()) {
        futures.push_back(std::move(future));
        break;
      }
      if (status.code() != StatusCode::ResourceExhausted) {
        RequestResult result;
        result.id = request.value().id;
        result.status = status;
        promise->set_value(std::move(result));
        futures.push_back(std::move(future));
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  std::vector<double> latencies;
  size_t ok = 0, failed = 0;
  for (size_t i = 0; i < futures.size(); ++i) {
    RequestResult result = futures[i].get();
    if (result.status.isOk()) {
      ++ok;
      latencies.push_back((result.queueMicros + result.computeMicros) / 1000);
    } else {
      ++failed;
      if (!writing)
        std::cerr << "cellrun: " << result.status.message() << "\n";
    }
    if (writing)
      output << resultLine(result) << "\n";
    if (progress && (i + 1 == futures.size() || i % 16 == 0)) {
      size_t width = 30, filled = width * (i + 1) / futures.size();
      std::fprintf(
          stderr, "\r[%s%s] %zu/%zu requests", std::string(filled, '#').c_str(),
          std::string(width - filled, ' ').c_str(), i + 1, futures.size());
    }
  }
  if (progress)
    std::fprintf(stderr, "\n");
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EngineStats stats = engine.stats();
  std::printf("model %s, %s batching on %s\n",
              artifact.value()->model().model_name()
                  ? artifact.value()->model().model_name()->c_str()
                  : "?",
              policyName(engineOptions.policy),
              (engine.executor().describe() +
               (engine.workers() > 1
                    ? " and " + std::to_string(engine.workers() - 1) + " more"
                    : std::string()))
                  .c_str());
  std::printf("requests: %zu (%zu ok, %zu failed) in %.3f s: %.1f requests/s\n",
              futures.size(), ok, failed, seconds,
              seconds > 0 ? ok / seconds : 0.0);
  std::printf("latency ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n",
              percentile(latencies, 0.5), percentile(latencies, 0.9),
              percentile(latencies, 0.99), percentile(latencies, 1.0));
  for (const CellTypeStats &cell : stats.cells)
    std::printf("cell %-10s %8llu tasks, mean batch %.1f nodes%s\n",
                cell.name.c_str(), (unsigned long long)cell.tasks,
                cell.tasks ? double(cell.nodes) / cell.tasks : 0.0,
                cell.paddingRows ? (" (+" + std::to_string(cell.paddingRows) +
                                    " padding rows)")
                                       .c_str()
                                 : "");
  return failed ? kExitFailure : kExitOk;
}

} // namespace cellrun::tool
