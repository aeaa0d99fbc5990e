//===- RunReport.cpp - What `cellrun run` writes and prints ---------------===//
#include "RunReport.h"
#include "Allocator.h"
#include "loadgen/LatencyStats.h"

#include "JsonWriter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cellrun::tool {

/// Microseconds to a tenth, as a float: written as that tenth up to about a
/// second (2^20 us), to within a float's step (2 us at 16 s) beyond.
static float tenths(double micros) {
  return static_cast<float>(std::round(micros * 10) / 10);
}

// Written straight as text (serve::JsonWriter): a tree of one JSON node a
// value, dumped, took 7x the serving time of a tiny model's results.
std::string resultLine(const RequestResult &result) {
  std::string line;
  serve::JsonWriter json(line);
  json.beginObject();
  json.key("id");
  json.string(result.id);
  if (!result.status.isOk()) {
    json.key("error");
    json.string(result.status.message());
    json.endObject();
    return line;
  }
  json.key("outputs");
  json.beginObject();
  for (const OutputTensor &tensor : result.outputs) {
    json.key(tensor.name);
    json.beginObject();
    json.key("shape");
    json.numbers(tensor.shape.data(), tensor.shape.size());
    json.key("data");
    if (tensor.integers.empty()) {
      json.numbers(tensor.floats.data(), tensor.floats.size());
    } else if (tensor.floats.empty()) {
      json.numbers(tensor.integers.data(), tensor.integers.size());
    } else { // never both in one tensor; if so, floats first
      json.beginArray();
      for (float value : tensor.floats)
        json.number(value);
      for (int64_t value : tensor.integers)
        json.number(value);
      json.endArray();
    }
    json.endObject();
  }
  json.endObject();
  if (!result.stopReason.empty()) {
    json.key("stop");
    json.string(result.stopReason);
  }
  json.key("queue_us");
  json.number(tenths(result.queueMicros));
  json.key("compute_us");
  json.number(tenths(result.computeMicros));
  json.endObject();
  return line;
}

void printSummary(const std::string &model, const std::string &policy,
                  const std::string &device, size_t requests,
                  std::vector<double> latenciesMs, const RunTimes &times,
                  const EngineStats &stats) {
  std::sort(latenciesMs.begin(), latenciesMs.end());
  size_t ok = latenciesMs.size();
  double seconds = times.serve;
  std::printf("model %s, %s batching on %s\n", model.c_str(), policy.c_str(),
              device.c_str());
  std::printf("requests: %zu (%zu ok, %zu failed) in %.3f s: %.1f requests/s\n",
              requests, ok, requests - ok, seconds,
              seconds > 0 ? ok / seconds : 0.0);
  std::printf("latency ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n",
              loadgen::nearestRank(latenciesMs, 0.5),
              loadgen::nearestRank(latenciesMs, 0.9),
              loadgen::nearestRank(latenciesMs, 0.99),
              loadgen::nearestRank(latenciesMs, 1.0));
  uint64_t tasks = 0;
  for (const CellTypeStats &cell : stats.cells) {
    std::string padding =
        cell.paddingRows
            ? " (+" + std::to_string(cell.paddingRows) + " padding rows)"
            : "";
    // A chain model's one cell: its tasks bound from the persistent batch.
    if (stats.cells.size() == 1 && stats.chainBatchTasks > 0)
      padding += stats.chainBatchTasks == cell.tasks
                     ? " (persistent chain batch)"
                     : " (" + std::to_string(stats.chainBatchTasks) +
                           " from the persistent chain batch)";
    std::printf("cell %-10s %8llu tasks, mean batch %.1f nodes%s\n",
                cell.name.c_str(), (unsigned long long)cell.tasks,
                cell.tasks ? double(cell.nodes) / cell.tasks : 0.0,
                padding.c_str());
    tasks += cell.tasks;
  }
  if (stats.workerTasks.size() > 1) {
    std::string perWorker;
    for (uint64_t workerTasks : stats.workerTasks)
      perWorker +=
          (perWorker.empty() ? "" : " / ") + std::to_string(workerTasks);
    std::printf("workers: %s tasks, %llu requests moved between them\n",
                perWorker.c_str(), (unsigned long long)stats.requestsMoved);
  }
  if (stats.productsInPoolRows + stats.productsThroughStepRows > 0)
    std::printf("projected inputs: %llu requests' products kept in pool "
                "rows, %llu through their own step rows\n",
                (unsigned long long)stats.productsInPoolRows,
                (unsigned long long)stats.productsThroughStepRows);
  std::printf("time: parse %.3f s, serve %.3f s, write %.3f s after serving",
              times.parse, times.serve, times.write);
  if (times.parseWhileServing > 0)
    std::printf(" (%.3f s of the parsing while serving)",
                times.parseWhileServing);
  std::printf("\n");
  uint64_t steps = stats.rowSteps();
  double host = stats.roundSeconds - stats.executorSeconds;
  auto nanos = [&](double part) { return steps ? part * 1e9 / steps : 0.0; };
  std::printf("engine: %llu row-steps in %.3f s, %.0f ns a row-step "
              "(tasks %.0f ns, host %.0f ns; host %.2f us a task; %s)\n",
              (unsigned long long)steps, stats.roundSeconds,
              nanos(stats.roundSeconds), nanos(stats.executorSeconds),
              nanos(host), tasks ? host * 1e6 / tasks : 0.0,
              allocatorName().c_str());
  // On a GPU: how the tasks' time splits (the rest is submitting them).
  bool onDevice =
      stats.executorBlockedSeconds > 0 || stats.executorDeliverSeconds > 0;
  if (onDevice)
    std::printf("tasks a row-step: %.0f ns blocked on the device, %.0f ns "
                "copying results out, %.0f ns submitting\n",
                nanos(stats.executorBlockedSeconds),
                nanos(stats.executorDeliverSeconds),
                nanos(stats.executorSeconds - stats.executorBlockedSeconds -
                      stats.executorDeliverSeconds));
  if (onDevice)
    std::printf("rows read back: %llu copied out by the host, %llu written "
                "into the results by the device (--pinned-results)\n",
                (unsigned long long)stats.executorDeliveredRows,
                (unsigned long long)stats.executorDeviceWrittenRows);
  uint64_t graphed = stats.executorPlanGraphLaunches;
  if (onDevice && (graphed || stats.executorPlanFirstRuns ||
                   stats.executorPlansLaunchedDirectly))
    std::printf("task plans: %llu launched as CUDA graphs (%llu captured), "
                "%llu kernel by kernel before their capture, %llu kernel by "
                "kernel (--cuda-graphs)\n",
                (unsigned long long)graphed,
                (unsigned long long)stats.executorPlanGraphCaptures,
                (unsigned long long)stats.executorPlanFirstRuns,
                (unsigned long long)stats.executorPlansLaunchedDirectly);
  // The tasks' spans on the device (--time-device) over the serving's wall
  // time: the share of it a worker's stream held a task, the rest the
  // device waited for the engine's next task.
  if (stats.executorDeviceTimedTasks > 0) {
    size_t streams = std::max<size_t>(1, stats.workerTasks.size());
    double held =
        seconds > 0 ? stats.executorDeviceSeconds / streams / seconds : 0.0;
    std::printf("device: a task on the stream %.0f%% of the serving time "
                "(the tasks' spans, %.3f s over %.3f s%s; %llu tasks timed, "
                "--time-device)\n",
                100 * held, stats.executorDeviceSeconds / streams, seconds,
                streams > 1 ? ", the mean of the workers' streams" : "",
                (unsigned long long)stats.executorDeviceTimedTasks);
  }
  // The engine's threads hardly waited for the device: it could take more.
  if (onDevice && stats.roundSeconds > 0.1 &&
      stats.executorBlockedSeconds < 0.1 * stats.roundSeconds)
    std::printf("the engine's threads waited for the device %.0f%% of their "
                "time: more of them (--workers N --workers-per-device N) may "
                "serve more on it\n",
                100 * stats.executorBlockedSeconds / stats.roundSeconds);
}

void drawProgress(size_t done, size_t total) {
  size_t width = 30, filled = total ? width * done / total : width;
  std::fprintf(stderr, "\r[%s%s] %zu/%zu requests",
               std::string(filled, '#').c_str(),
               std::string(width - filled, ' ').c_str(), done, total);
}

void TaskLog::add(const TaskRecord &record) {
  std::lock_guard<std::mutex> lock(mutex_);
  records_.push_back(record);
}

void TaskLog::write(std::ostream &out, const EngineStats &stats) const {
  auto micros = [&](std::chrono::steady_clock::time_point at) {
    return std::chrono::duration<double, std::micro>(at - start_).count();
  };
  std::lock_guard<std::mutex> lock(mutex_);
  out << "worker,cell,nodes,padding_rows,batch_size,submitted_us,"
         "finished_us,failed\n";
  char line[256];
  for (const TaskRecord &record : records_) {
    std::snprintf(line, sizeof line, "%u,%s,%u,%u,%u,%.1f,%.1f,%d\n",
                  record.worker,
                  record.cellType < stats.cells.size()
                      ? stats.cells[record.cellType].name.c_str()
                      : "?",
                  record.nodes, record.paddingRows, record.batchSize,
                  micros(record.submitted), micros(record.finished),
                  record.failed ? 1 : 0);
    out << line;
  }
}

} // namespace cellrun::tool
