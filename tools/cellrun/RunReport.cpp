//===- RunReport.cpp - What `cellrun run` writes and prints ---------------===//
#include "RunReport.h"

#include "cellrun/JsonWriter.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace cellrun::tool {

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

static double percentile(std::vector<double> &sorted, double fraction) {
  if (sorted.empty())
    return 0;
  size_t index = static_cast<size_t>(fraction * (sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)];
}

void printSummary(const std::string &model, const std::string &policy,
                  const std::string &device, size_t requests,
                  std::vector<double> latenciesMs, double seconds,
                  const EngineStats &stats) {
  std::sort(latenciesMs.begin(), latenciesMs.end());
  size_t ok = latenciesMs.size();
  std::printf("model %s, %s batching on %s\n", model.c_str(), policy.c_str(),
              device.c_str());
  std::printf("requests: %zu (%zu ok, %zu failed) in %.3f s: %.1f requests/s\n",
              requests, ok, requests - ok, seconds,
              seconds > 0 ? ok / seconds : 0.0);
  std::printf("latency ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n",
              percentile(latenciesMs, 0.5), percentile(latenciesMs, 0.9),
              percentile(latenciesMs, 0.99), percentile(latenciesMs, 1.0));
  for (const CellTypeStats &cell : stats.cells) {
    std::string padding =
        cell.paddingRows
            ? " (+" + std::to_string(cell.paddingRows) + " padding rows)"
            : "";
    std::printf("cell %-10s %8llu tasks, mean batch %.1f nodes%s\n",
                cell.name.c_str(), (unsigned long long)cell.tasks,
                cell.tasks ? double(cell.nodes) / cell.tasks : 0.0,
                padding.c_str());
  }
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
