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

/// The summary after a run: throughput, latency percentiles (of the
/// successful requests' `latenciesMs`), tasks and batch sizes per cell.
void printSummary(const std::string &model, const std::string &policy,
                  const std::string &device, size_t requests,
                  std::vector<double> latenciesMs, double seconds,
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
