//===- LoadRunner.h - One open-loop run on the engine -----------*- C++ -*-===//
//
// Creates an engine with the given options, submits request k of the trace
// at its arrival time (the submitting thread sleeps until then; arrivals
// never wait for results: open loop), and records every request's timing
// and every task's size and time. A request the full queue refuses is
// recorded as dropped. Shows progress on a terminal.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_BENCH_LOADRUNNER_H
#define CELLRUN_TOOLS_BENCH_LOADRUNNER_H

#include "LatencyStats.h"
#include "LoadTrace.h"

#include "cellrun/Engine.h"

#include <string>
#include <vector>

namespace cellrun::loadgen {

struct TaskSample {
  double finished = 0; // seconds from the start of the run
  uint32_t cellType = 0, nodes = 0, paddingRows = 0;
};

struct RunRecord {
  std::vector<RequestTiming> timings; // per trace entry
  std::vector<TaskSample> tasks;
  std::vector<std::string> cellNames;
  double seconds = 0; // first arrival to last result
};

/// `requests[entry.request]` is submitted at `entry.arrival`. `label`
/// heads the progress line (none when `quiet` or not on a terminal).
Result<RunRecord> runEngine(std::shared_ptr<const LoadedArtifact> artifact,
                            EngineOptions options,
                            const std::vector<Request> &requests,
                            const std::vector<TraceEntry> &trace,
                            const std::string &label, bool quiet);

} // namespace cellrun::loadgen

#endif // CELLRUN_TOOLS_BENCH_LOADRUNNER_H
