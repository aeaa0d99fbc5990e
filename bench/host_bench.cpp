//===- host_bench.cpp - What the runtime's host path costs a task ---------===//
//
// Drives the real engine (admission, Algorithm 1, binding rows, moving each
// task's request data in and its results out, growing the cell graphs,
// finishing requests) over a cpu executor whose tasks compute nothing
// (ExecutorOptions::nullTasks), so every microsecond measured is the host's.
// For each batch size B it keeps B requests in flight (a new one joins as
// soon as one finishes), one thread, and prints the host time per task and
// per row-step, against the goal of 5 us + 0.1 us a row per task. With
// --compute the tasks compute as well (the same loop, for comparison).
//
//   host_bench MODEL [--length L | --workload CSV] [--batches 1,2,..]
//              [--row-steps N] [--repeat R] [--compute] [--csv FILE]
//
// MODEL is a chain model whose cell takes one int64 token a step (bench uses
// the hidden-16 LSTM, <build>/examples/lstm/tiny-fp32.cellpack).
//
//===----------------------------------------------------------------------===//
#include "Allocator.h"
#include "cellrun/Engine.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

using namespace cellrun;

namespace {

using Clock = std::chrono::steady_clock;

struct Measurement {
  uint64_t tasks = 0, rowSteps = 0, requests = 0;
  double seconds = 0;       // the whole loop: submit and rounds
  double submitSeconds = 0; // Engine::submit alone
  double executorSeconds = 0;
};

/// Request lengths: fixed, or drawn from a workload's `length` column.
class Lengths {
public:
  Lengths(uint32_t fixed, const std::string &workload) : fixed_(fixed) {
    if (workload.empty())
      return;
    std::ifstream in(workload);
    std::string line;
    std::getline(in, line); // header
    while (std::getline(in, line))
      if (!line.empty())
        drawn_.push_back(static_cast<uint32_t>(std::stoul(line)));
  }
  bool valid() const { return fixed_ > 0 || !drawn_.empty(); }
  uint32_t next(std::mt19937 &random) {
    if (drawn_.empty())
      return fixed_;
    return drawn_[std::uniform_int_distribution<size_t>(0, drawn_.size() -
                                                               1)(random)];
  }

private:
  uint32_t fixed_;
  std::vector<uint32_t> drawn_;
};

Result<Measurement> measure(std::shared_ptr<const LoadedArtifact> artifact,
                            uint32_t batch, uint64_t rowSteps, Lengths &lengths,
                            bool compute, bool gpuPath) {
  EngineOptions options;
  options.startWorker = false;
  if (gpuPath) { // what the engine does for an asynchronous executor
    options.readsThroughTasks = true;
    options.overlapRounds = EngineOptions::Overlap::On;
  }
  options.executor.threads = 1;
  options.executor.nullTasks = !compute;
  options.maxQueue = 1u << 20;
  // Rows for every request in flight, with room to spare.
  options.poolRows = std::max<uint32_t>(4096, batch * 40);
  auto engine = Engine::create(artifact, options);
  if (!engine.ok())
    return engine.status();
  std::mt19937 random(2018);
  // Requests made before the clock starts (parsing is not the host path):
  // int64 tokens, checked by submit as any request is.
  std::vector<Request> requests;
  uint64_t planned = 0;
  while (planned < rowSteps + 64ull * batch) {
    uint32_t length = lengths.next(random);
    Request &request = requests.emplace_back();
    request.id = "r" + std::to_string(requests.size());
    request.steps.reserve(length, 1, sizeof(int64_t));
    for (uint32_t s = 0; s < length; ++s) {
      int64_t token = 3 + random() % 900;
      std::memcpy(request.steps.appendRow(sizeof token), &token, sizeof token);
      request.steps.endStep();
    }
    planned += length;
  }
  Measurement m;
  uint64_t finished = 0, failed = 0, next = 0;
  auto done = [&](RequestResult result) {
    ++finished;
    failed += !result.status.isOk();
  };
  auto start = Clock::now();
  auto submit = [&] {
    auto before = Clock::now();
    Status status = (*engine)->submit(std::move(requests[next++]), done);
    m.submitSeconds +=
        std::chrono::duration<double>(Clock::now() - before).count();
    return status;
  };
  // B requests in flight: one joins whenever one has finished.
  while (next < requests.size()) {
    while (next - finished < batch && next < requests.size())
      if (Status status = submit(); !status.isOk())
        return status;
    (*engine)->runOnce();
    if ((*engine)->stats().rowSteps() >= rowSteps)
      break;
  }
  m.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EngineStats stats = (*engine)->stats();
  if (failed)
    return Status(StatusCode::Internal,
                  std::to_string(failed) + " requests failed");
  for (const CellTypeStats &cell : stats.cells)
    m.tasks += cell.tasks;
  m.rowSteps = stats.rowSteps();
  m.requests = finished;
  m.executorSeconds = stats.executorSeconds;
  (*engine)->drain();
  return m;
}

/// The command line.
struct Options {
  std::string model, workload, csvPath;
  uint32_t length = 24;
  uint64_t rowSteps = 400000;
  std::vector<uint32_t> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  bool compute = false, gpuPath = false;
  uint32_t repeat = 3;
};

/// Declares the command line's options, each writing into `options`.
void defineOptions(CLI::App &app, Options &options) {
  app.add_option("model", options.model,
                 "a chain model (.cellpack) taking tokens")
      ->required();
  app.add_option("--length", options.length, "steps of every request")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100000u));
  app.add_option("--workload", options.workload,
                 "draw request lengths from this workload's length column "
                 "(bench/workloads/wmt15.csv)");
  app.add_option("--batches", options.batches,
                 "requests in flight (batch sizes)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--row-steps", options.rowSteps,
                 "row-steps measured per batch size")
      ->capture_default_str();
  app.add_option("--repeat", options.repeat,
                 "measurements per batch size; the median is shown")
      ->capture_default_str()
      ->check(CLI::Range(1u, 99u));
  app.add_flag("--compute", options.compute,
               "the tasks compute too (not only host)");
  app.add_flag("--gpu-path", options.gpuPath,
               "the engine's path for a GPU (cuda backend): rounds overlap "
               "and the rows the host reads are written into the results "
               "when the executor finishes each task (the cuda backend "
               "copies them out of its staging slot)");
  app.add_option("--csv", options.csvPath, "write the rows here");
}

/// Prints what is measured and the table's header.
void printHeader(const Options &options) {
  std::printf(
      "host path of %s: %s%s, one thread, %s, requests of %s, %llu "
      "row-steps per batch size, median of %u\n",
      options.model.c_str(), options.compute ? "tasks computing" : "null tasks",
      options.gpuPath ? ", the GPU's path (reads through the tasks)" : "",
      tool::allocatorName().c_str(),
      options.workload.empty()
          ? (std::to_string(options.length) + " steps").c_str()
          : options.workload.c_str(),
      (unsigned long long)options.rowSteps, options.repeat);
  std::printf("%6s %8s %9s %11s %12s %11s %12s %10s %6s\n", "batch", "tasks",
              "rows/task", "us/task", "host us/task", "goal us", "ns/row-step",
              "submit ns", "ok");
}

/// Measures `batch` options.repeat times; returns the run with the median
/// host time per task (this machine's speed varies from run to run).
Result<Measurement>
medianMeasurement(const std::shared_ptr<const LoadedArtifact> &artifact,
                  uint32_t batch, const Options &options, Lengths &lengths) {
  std::vector<Measurement> runs;
  for (uint32_t r = 0; r < options.repeat; ++r) {
    auto run = measure(artifact, batch, options.rowSteps, lengths,
                       options.compute, options.gpuPath);
    if (!run.ok())
      return run.status();
    runs.push_back(run.value());
  }
  bool compute = options.compute;
  auto hostSeconds = [&](const Measurement &run) {
    return (run.seconds - (compute ? run.executorSeconds : 0)) / run.tasks;
  };
  std::sort(runs.begin(), runs.end(),
            [&](const Measurement &a, const Measurement &b) {
              return hostSeconds(a) < hostSeconds(b);
            });
  return runs[runs.size() / 2];
}

/// Prints the row of `batch` (and writes it to the CSV); returns whether
/// its host time per task is within the goal.
bool printRow(uint32_t batch, const Measurement &m, bool compute,
              std::ofstream &csv) {
  double rows = double(m.rowSteps) / m.tasks;
  double perTask = m.seconds * 1e6 / m.tasks;
  // With --compute, the executor's time is the tasks' computation.
  double hostPerTask =
      (m.seconds - (compute ? m.executorSeconds : 0)) * 1e6 / m.tasks;
  double goal = 5 + 0.1 * rows;
  bool within = hostPerTask <= goal;
  std::printf("%6u %8llu %9.1f %11.2f %12.2f %11.2f %12.1f %10.1f %6s\n", batch,
              (unsigned long long)m.tasks, rows, perTask, hostPerTask, goal,
              m.seconds * 1e9 / m.rowSteps, m.submitSeconds * 1e9 / m.rowSteps,
              within ? "yes" : "NO");
  if (csv)
    csv << batch << "," << m.tasks << "," << rows << "," << perTask << ","
        << hostPerTask << "," << goal << "," << m.seconds * 1e9 / m.rowSteps
        << "," << m.submitSeconds * 1e9 / m.rowSteps << "," << within << "\n";
  return within;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app("The runtime's host cost per task and per row-step: the real "
               "engine over tasks that compute nothing, one thread.",
               "host_bench");
  Options options;
  defineOptions(app, options);
  CLI11_PARSE(app, argc, argv);

  auto artifact = loadArtifact(options.model);
  if (!artifact.ok()) {
    std::fprintf(stderr, "host_bench: %s\n",
                 artifact.status().message().c_str());
    return 1;
  }
  Lengths lengths(options.length, options.workload);
  if (!lengths.valid()) {
    std::fprintf(stderr, "host_bench: no lengths in %s\n",
                 options.workload.c_str());
    return 1;
  }
  printHeader(options);
  std::ofstream csv;
  if (!options.csvPath.empty()) {
    csv.open(options.csvPath);
    csv << "batch,tasks,rows_per_task,us_per_task,host_us_per_task,goal_us,"
           "ns_per_row_step,submit_ns_per_row_step,within_goal\n";
  }
  bool allWithin = true;
  for (uint32_t batch : options.batches) {
    auto median = medianMeasurement(artifact.value(), batch, options, lengths);
    if (!median.ok()) {
      std::fprintf(stderr, "host_bench: batch %u: %s\n", batch,
                   median.status().message().c_str());
      return 1;
    }
    allWithin &= printRow(batch, median.value(), options.compute, csv);
  }
  std::printf("goal (at most 5 us + 0.1 us a row per task, host): %s\n",
              allWithin ? "met at every batch size" : "MISSED");
  return 0;
}
