//===- Run.cpp - `cellrun run`: offline inference of a request file -------===//
//
// Reads and checks the requests (one JSON object a line) ahead of the
// serving, all of them when they fit the read-ahead budget (RequestReader),
// and serves them through the engine with the chosen batching policy on the
// chosen device, while another thread writes one result a line in input
// order (ResultWriter). Shows progress on a terminal and ends with a
// summary: requests, throughput and latency percentiles of the serving,
// mean batch per cell type, the time spent parsing, serving and writing,
// and where the engine's time went per row-step; optionally a CSV line per
// task. A bad line becomes an error result; the others still run.
//
//===----------------------------------------------------------------------===//
#include "Run.h"
#include "RequestReader.h"
#include "ResultWriter.h"
#include "RunReport.h"

#include "cellrun/Engine.h"

#include <ext/stdio_filebuf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

namespace cellrun::tool {
namespace {

struct RunArgs {
  std::string model, input, output, taskLog;
  std::vector<std::string> outputs; // written; empty: all
  std::string policy = "cellular", device = "auto", chainOrder = "turns";
  uint32_t poolRows = 4096, maxQueue = 1024, batchRequests = 0, bucketWidth = 8,
           fillRows = 32, threads = 0, copyThreads = 0, workers = 1,
           workersPerDevice = 1, resultBufferMb = 256, maxRunning = 0,
           maxSteps = RequestLimits().maxSteps;
  uint64_t memoryBudget = 0;              // bytes; 0: poolRows
  uint64_t readAhead = uint64_t(1) << 30; // bytes of request text
  bool quiet = false, allowNonFinite = false, noMove = false,
       noChainBatch = false, pinnedResults = false, cudaGraphs = false,
       timeDevice = false;
};

void addOptions(CLI::App &app, RunArgs &args) {
  app.footer("Request lines (see docs/runtime.md):\n"
             "  chain/seq2seq  {\"id\": \"r1\", \"tokens\": [5, 17, 3]}  or "
             "{\"steps\": [{\"x\": [...]}, ...]}\n"
             "  tree           {\"id\": \"t1\", \"nodes\": [{\"token\": 4}, "
             "{\"token\": 9}, {\"children\": [0, 1]}]}");
  app.add_option("model", args.model, "the compiled model (.cellpack)")
      ->required();
  app.add_option("--input", args.input,
                 "requests, one JSON object a line (-: standard input)")
      ->required();
  app.add_option("--read-ahead", args.readAhead,
                 "request text read ahead of the serving, at most (e.g. 1GB, "
                 "the default): a file that fits is read whole before "
                 "serving starts, a larger one as it is served; a pipe is "
                 "served as lines come")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 40));
  app.add_option("--output", args.output,
                 "results, one JSON object a line (-: standard output, the "
                 "summary then on standard error)");
  app.add_option("--outputs", args.outputs,
                 "only these outputs in the results, by name (e.g. "
                 "final_h_next,final_c_next; default: all)")
      ->delimiter(',');
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
  app.add_option("--memory-budget", args.memoryBudget, kMemoryBudgetHelp)
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--max-queue", args.maxQueue, "requests waiting for admission")
      ->capture_default_str()
      ->check(positive);
  app.add_option("--batch-requests", args.batchRequests,
                 "padded/graph: requests a batch (default: the largest batch "
                 "size)")
      ->check(positive);
  app.add_option("--fill-rows", args.fillRows, kFillRowsHelp)
      ->capture_default_str();
  app.add_option("--chain-order", args.chainOrder, kChainOrderHelp)
      ->capture_default_str()
      ->check(chainOrderCheck());
  app.add_option("--max-running", args.maxRunning, kMaxRunningHelp)
      ->capture_default_str();
  app.add_option("--bucket-width", args.bucketWidth, "padded: lengths a bucket")
      ->capture_default_str()
      ->check(positive);
  app.add_option("--threads", args.threads,
                 "cpu backend: threads a task (0: one per core, shared "
                 "among --workers)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1024u));
  app.add_option("--copy-threads", args.copyThreads, kCopyThreadsHelp)
      ->capture_default_str()
      ->check(CLI::Range(0u, 64u));
  app.add_flag("--pinned-results", args.pinnedResults, kPinnedResultsHelp);
  app.add_flag("--cuda-graphs", args.cudaGraphs, kCudaGraphsHelp);
  app.add_flag("--time-device", args.timeDevice,
               std::string(kTimeDeviceHelp) +
                   " against the serving's wall time");
  app.add_option("--workers", args.workers,
                 "workers, one per device unless --workers-per-device says "
                 "otherwise (cuda: devices 0..N-1)")
      ->capture_default_str()
      ->check(positive);
  app.add_option("--workers-per-device", args.workersPerDevice,
                 kWorkersPerDeviceHelp)
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_flag("--no-move", args.noMove, kNoMoveHelp);
  app.add_flag("--no-chain-batch", args.noChainBatch, kNoChainBatchHelp);
  app.add_option("--task-log", args.taskLog,
                 "one CSV line per task: cell, nodes, batch size, times");
  app.add_flag("--quiet", args.quiet, "no progress bar");
  app.add_flag("--allow-non-finite", args.allowNonFinite,
               "take NaN and infinite input values (by default such a "
               "request fails, naming the input)");
  app.add_option("--max-steps", args.maxSteps,
                 "steps of one cell a request may run: a longer input fails, "
                 "a decode stops after this many tokens (stop \"limit\")")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 24));
  app.add_option("--result-buffer-mb", args.resultBufferMb,
                 "results waiting to be written, at most (MiB): beyond it "
                 "no more requests are submitted until some are written")
      ->capture_default_str()
      ->check(positive);
}

using SteadyClock = std::chrono::steady_clock;

/// A stream over a file descriptor, with a buffer of its own (std::cin,
/// kept in step with C's stdio, reads a character at a time: 4x slower).
/// The descriptor is closed with it.
struct DescriptorStream {
  DescriptorStream(int descriptor, std::ios::openmode mode)
      : buffer(descriptor, mode), stream(&buffer) {}
  __gnu_cxx::stdio_filebuf<char> buffer;
  std::iostream stream;
};

/// Where `cellrun run` reads requests and writes results.
struct RunFiles {
  std::unique_ptr<DescriptorStream> input;
  std::unique_ptr<DescriptorStream> output; // null: no --output
  bool inputIsFile = false;                 // a regular file, not a pipe
  bool outputIsFile = true;
};

double secondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

/// Submits every request the reader gives (offline: waiting for room in
/// the queue, and in the writer's budget, rather than failing) and waits
/// for their results. With `startWhenQueued` the engine was created without
/// its workers: they start once the queue is full or the input has ended,
/// so the first round sees all the requests that fit (longest first needs
/// the set it orders).
void serveAll(Engine &engine, RequestReader &reader, ResultWriter &writer,
              const std::vector<std::string> &outputs, bool progress,
              bool startWhenQueued) {
  bool started = !startWhenQueued;
  auto start = [&] {
    if (!started)
      engine.startWorkers();
    started = true;
  };
  auto lastDraw = SteadyClock::now();
  auto redraw = [&](bool force) {
    auto now = SteadyClock::now();
    if (progress &&
        (force || now - lastDraw > std::chrono::milliseconds(100))) {
      drawProgress(writer.arrived(), reader.linesTaken());
      lastDraw = now;
    }
  };
  size_t index = 0;
  // Stops taking requests once the output cannot be written.
  for (InputLine line; !writer.outputFailed() && reader.next(line); ++index) {
    if (!line.request) {
      writer.put(index, std::move(line.refused));
      continue;
    }
    writer.waitForRoom();
    // Offline: wait for room in the queue rather than be refused (only
    // this thread submits, so the room stays).
    while (!engine.hasRoom()) {
      start();
      redraw(false);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    std::string id = line.request->id;
    line.request->outputs = outputs; // the engine reads back only these
    Status status = engine.submit(std::move(*line.request),
                                  [&writer, index](RequestResult result) {
                                    writer.put(index, std::move(result));
                                  });
    if (!status.isOk()) {
      RequestResult failed;
      failed.id = id;
      failed.status = status;
      writer.put(index, std::move(failed));
    }
    redraw(false);
  }
  start();
  writer.expectTotal(index);
  while (writer.arrived() < index) {
    redraw(false);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  redraw(true);
  if (progress)
    std::fprintf(stderr, "\n");
}

/// The engine's options from `args`, the device resolved; an exit code
/// (the message printed) when the device is not one or is not there.
std::optional<int> chooseEngineOptions(const RunArgs &args,
                                       EngineOptions &engineOptions) {
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
  engineOptions.executor.copyThreads = args.copyThreads;
  engineOptions.executor.pinnedResults = args.pinnedResults;
  engineOptions.executor.cudaGraphs = args.cudaGraphs;
  engineOptions.executor.timeDevice = args.timeDevice;
  if (std::string unused = cudaOnlyFlagsNote(engineOptions.executor);
      !unused.empty())
    std::cerr << "cellrun: " << unused << "\n";
  engineOptions.workers = args.workers;
  engineOptions.workersPerDevice = args.workersPerDevice;
  engineOptions.poolRows = args.poolRows;
  engineOptions.maxQueue = args.maxQueue;
  engineOptions.maxRunning = args.maxRunning;
  engineOptions.batchRequests = args.batchRequests;
  engineOptions.bucketWidth = args.bucketWidth;
  engineOptions.fillRows = args.fillRows;
  engineOptions.moveRequests = !args.noMove;
  engineOptions.chainBatch = !args.noChainBatch;
  engineOptions.chainOrder = parseChainOrder(args.chainOrder).value();
  // Longest first orders what it sees: the workers start once the queue
  // (--max-queue) is full or the input has ended (serveAll).
  engineOptions.startWorker =
      engineOptions.policy != Policy::Cellular ||
      engineOptions.chainOrder != EngineOptions::ChainOrder::LongestFirst;
  engineOptions.limits.allowNonFinite = args.allowNonFinite;
  engineOptions.limits.maxSteps = args.maxSteps;
  return std::nullopt;
}

/// Opens --input and --output ("-": standard input and output; the
/// summary then goes to standard error), each through a buffer of its own
/// over its descriptor; an exit code (the message printed) when either
/// cannot be.
std::optional<int> openFiles(const RunArgs &args, RunFiles &files) {
  auto isRegular = [](int descriptor) {
    struct stat status {};
    return fstat(descriptor, &status) == 0 && S_ISREG(status.st_mode);
  };
  int input = args.input == "-"
                  ? STDIN_FILENO
                  : open(args.input.c_str(), O_RDONLY | O_CLOEXEC);
  if (input < 0) {
    std::cerr << "cellrun: error: cannot open " << args.input << "\n";
    return kExitFailure;
  }
  files.input = std::make_unique<DescriptorStream>(input, std::ios::in);
  files.inputIsFile = isRegular(input);
  int output = -1;
  if (args.output == "-") {
    // The results keep standard output; everything else printed to it
    // from here on (the summary) goes to standard error.
    std::fflush(stdout);
    std::cout.flush();
    output = dup(STDOUT_FILENO);
    if (output < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
      std::cerr << "cellrun: error: cannot write to standard output\n";
      return kExitFailure;
    }
  } else if (!args.output.empty()) {
    output = open(args.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  0666);
    if (output < 0) {
      std::cerr << "cellrun: error: cannot write " << args.output << "\n";
      return kExitFailure;
    }
  }
  if (output >= 0) {
    files.output = std::make_unique<DescriptorStream>(output, std::ios::out);
    files.outputIsFile = isRegular(output);
  }
  return std::nullopt;
}

/// Writes the task log to `path`; false (the message printed) when it
/// cannot be.
bool writeTaskLog(const std::string &path, TaskLog &taskLog,
                  const EngineStats &stats) {
  std::ofstream log(path);
  if (!log) {
    std::cerr << "cellrun: error: cannot write " << path << "\n";
    return false;
  }
  taskLog.write(log, stats);
  return true;
}

/// Prints the run's summary: the model, policy and devices, then the
/// serving's figures.
void printRunSummary(const LoadedArtifact &artifact, const Engine &engine,
                     Policy policy, size_t requests, ResultWriter &writer,
                     const RunTimes &times, const EngineStats &stats) {
  std::string name = describeModel(artifact).name;
  std::string where = engine.deviceDescription();
  if (engine.workers() > 1)
    where += " and " + std::to_string(engine.workers() - 1) + " more";
  printSummary(name.empty() ? "?" : name, policyName(policy), where, requests,
               std::move(writer.latenciesMs), times, stats);
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
  if (auto exit = chooseEngineOptions(args, engineOptions))
    return *exit;

  auto artifact = loadArtifact(args.model);
  if (!artifact.ok()) {
    std::cerr << "cellrun: error: " << artifact.status().message() << "\n";
    return kExitFailure;
  }
  TaskLog taskLog(SteadyClock::now());
  bool logging = !args.taskLog.empty();
  if (logging)
    engineOptions.onTask = [&taskLog](const TaskRecord &record) {
      taskLog.add(record);
    };
  if (args.memoryBudget > 0) {
    std::string error;
    std::optional<uint32_t> rows = poolRowsOfBudget(
        args.memoryBudget, describeModel(*artifact.value()).poolBytesPerRow,
        error);
    if (!rows) {
      std::cerr << "cellrun run: " << error << "\n";
      return kExitUsage;
    }
    engineOptions.poolRows = *rows;
  }
  auto created = Engine::create(artifact.value(), engineOptions);
  if (!created.ok()) {
    std::cerr << "cellrun: error: " << created.status().message() << "\n";
    return kExitFailure;
  }
  Engine &engine = *created.value();
  if (Status named =
          engine.parser().checkOutputNames(args.outputs, "--outputs");
      !named.isOk()) {
    std::cerr << "cellrun run: " << named.message() << "\n";
    return kExitUsage;
  }
  RunFiles files;
  if (auto exit = openFiles(args, files))
    return *exit;

  RunTimes times;
  // From a file, what fits the read-ahead is read before serving starts;
  // from a pipe, requests are served as they come.
  RequestReader reader(files.input->stream, engine.parser(), args.readAhead,
                       files.inputIsFile);
  reader.fill();
  times.parse = reader.parseSeconds();
  // A pipe's reader (not a file's) gets each result as it is written.
  ResultWriter writer(files.output ? &files.output->stream : nullptr,
                      size_t(args.resultBufferMb) << 20, !files.outputIsFile);
  auto serving = SteadyClock::now();
  serveAll(engine, reader, writer, args.outputs,
           !args.quiet && isatty(STDERR_FILENO), !engineOptions.startWorker);
  times.serve = secondsSince(serving);
  times.parse = reader.parseSeconds();
  times.parseWhileServing = reader.parseSecondsAfterFirst();
  bool written = writer.finish();
  times.write = secondsSince(serving) - times.serve;
  if (reader.readFailed()) {
    std::cerr << "cellrun: error: reading " << args.input << " failed after "
              << reader.linesTaken() << " requests\n";
    return kExitFailure;
  }
  if (!written) {
    std::cerr << "cellrun: error: writing "
              << (args.output == "-" ? "standard output" : args.output)
              << " failed\n";
    return kExitFailure;
  }
  EngineStats stats = engine.stats();
  if (logging && !writeTaskLog(args.taskLog, taskLog, stats))
    return kExitFailure;
  printRunSummary(*artifact.value(), engine, engineOptions.policy,
                  reader.linesTaken(), writer, times, stats);
  return writer.failed ? kExitFailure : kExitOk;
}

} // namespace cellrun::tool
