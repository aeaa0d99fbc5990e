//===- RunReport.h - What `cellrun run` writes and prints -------*- C++ -*-===//
//
// The result lines of `cellrun run --output`, its closing summary, its
// progress bar and its task log (`--task-log`: one CSV line a task).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_RUNREPORT_H
#define CELLRUN_TOOLS_RUNREPORT_H

#include "cellrun/Engine.h"

#include <chrono>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

namespace cellrun::tool {

/// One JSON object: the id, then the outputs or the error, the stop reason
/// and the times.
std::string resultLine(const RequestResult &result);

/// Seconds a run spent reading and checking its requests (in all, and the
/// part of it after serving began), serving them (from the first
/// submission to the last result), and writing results after the last one
/// arrived.
struct RunTimes {
  double parse = 0, parseWhileServing = 0, serve = 0, write = 0;
};

/// The summary after a run: throughput and latency percentiles (of the
/// successful requests' `latenciesMs`) of the serving, tasks and batch sizes
/// per cell, the run's times, and the engine's time per row-step: in its
/// rounds, in the executor's tasks, and the rest (the host path).
void printSummary(const std::string &model, const std::string &policy,
                  const std::string &device, size_t requests,
                  std::vector<double> latenciesMs, const RunTimes &times,
                  const EngineStats &stats);

/// `[####    ] done/total requests` on stderr, redrawn in place.
void drawProgress(size_t done, size_t total);

/// Collects every task's record (from the engine's workers) and writes
/// them as CSV with times in microseconds since `start`.
class TaskLog {
public:
  explicit TaskLog(std::chrono::steady_clock::time_point start)
      : start_(start) {}
  void add(const TaskRecord &record);
  void write(std::ostream &out, const EngineStats &stats) const;

private:
  std::chrono::steady_clock::time_point start_;
  mutable std::mutex mutex_;
  std::vector<TaskRecord> records_;
};

} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_RUNREPORT_H
