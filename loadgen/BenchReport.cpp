//===- BenchReport.cpp - Tables, CSV and JSON of benchmark runs -----------===//
#include "BenchReport.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

using namespace cellrun::loadgen;

BenchRow cellrun::loadgen::makeRow(const std::string &system, double rate,
                                   const RunRecord &record, double windowStart,
                                   double windowEnd) {
  BenchRow row;
  row.system = system;
  row.rate = rate;
  row.summary = summarise(record.timings, windowStart, windowEnd);
  std::vector<uint64_t> tasks(record.cellNames.size()),
      nodes(record.cellNames.size());
  for (const TaskSample &task : record.tasks) {
    if (task.finished < windowStart || task.finished >= windowEnd ||
        task.cellType >= tasks.size())
      continue;
    ++tasks[task.cellType];
    nodes[task.cellType] += task.nodes;
    row.paddingRows += task.paddingRows;
  }
  for (size_t c = 0; c < record.cellNames.size(); ++c)
    row.meanBatch.push_back(
        {record.cellNames[c], tasks[c] ? double(nodes[c]) / tasks[c] : 0.0});
  row.achievedMin = row.achievedMax = row.summary.achievedPerSecond;
  row.p50Min = row.p50Max = row.summary.p50;
  row.p99Min = row.p99Max = row.summary.p99;
  return row;
}

namespace {

/// The median (lower for an even count) of `field` over `runs`.
template <typename Field>
auto medianOf(const std::vector<BenchRow> &runs, Field field) {
  std::vector<decltype(field(runs[0]))> values;
  for (const BenchRow &run : runs)
    values.push_back(field(run));
  std::sort(values.begin(), values.end());
  return values[(values.size() - 1) / 2];
}

} // namespace

BenchRow cellrun::loadgen::medianRow(const std::vector<BenchRow> &runs) {
  BenchRow row = runs.front();
  if (runs.size() == 1)
    return row;
  row.runs = static_cast<uint32_t>(runs.size());
  LatencySummary &s = row.summary;
  auto summary = [&](auto member) {
    return medianOf(runs, [&](const BenchRow &r) { return r.summary.*member; });
  };
  s.measured = summary(&LatencySummary::measured);
  s.completed = summary(&LatencySummary::completed);
  s.offeredPerSecond = summary(&LatencySummary::offeredPerSecond);
  s.achievedPerSecond = summary(&LatencySummary::achievedPerSecond);
  s.p50 = summary(&LatencySummary::p50);
  s.p90 = summary(&LatencySummary::p90);
  s.p99 = summary(&LatencySummary::p99);
  s.meanQueue = summary(&LatencySummary::meanQueue);
  s.meanCompute = summary(&LatencySummary::meanCompute);
  row.paddingRows =
      medianOf(runs, [](const BenchRow &r) { return r.paddingRows; });
  for (size_t c = 0; c < row.meanBatch.size(); ++c)
    row.meanBatch[c].second = medianOf(runs, [&](const BenchRow &r) {
      return c < r.meanBatch.size() ? r.meanBatch[c].second : 0.0;
    });
  // Failures, drops, misses and the worst latency are not averaged away:
  // the row shows the most any run had.
  s.failed = s.dropped = s.deadlineMisses = 0;
  s.max = 0;
  for (const BenchRow &run : runs) {
    s.failed = std::max(s.failed, run.summary.failed);
    s.dropped = std::max(s.dropped, run.summary.dropped);
    s.deadlineMisses = std::max(s.deadlineMisses, run.summary.deadlineMisses);
    s.max = std::max(s.max, run.summary.max);
    row.achievedMin = std::min(row.achievedMin, run.summary.achievedPerSecond);
    row.achievedMax = std::max(row.achievedMax, run.summary.achievedPerSecond);
    row.p50Min = std::min(row.p50Min, run.summary.p50);
    row.p50Max = std::max(row.p50Max, run.summary.p50);
    row.p99Min = std::min(row.p99Min, run.summary.p99);
    row.p99Max = std::max(row.p99Max, run.summary.p99);
  }
  return row;
}

const char *cellrun::loadgen::csvHeader() {
  return "system,rate_per_s,measured,completed,dropped,failed,"
         "offered_per_s,achieved_per_s,p50_ms,p90_ms,p99_ms,max_ms,"
         "mean_queue_ms,mean_compute_ms,mean_batch,padding_rows,"
         "deadline_misses,runs,achieved_min_per_s,achieved_max_per_s,"
         "p50_min_ms,p50_max_ms,p99_min_ms,p99_max_ms";
}

static std::string batchText(const BenchRow &row, const char *separator) {
  std::string text;
  char value[64];
  for (const auto &[cell, mean] : row.meanBatch) {
    std::snprintf(value, sizeof(value), "%s%s %.1f",
                  text.empty() ? "" : separator, cell.c_str(), mean);
    text += value;
  }
  return text.empty() ? "-" : text;
}

void cellrun::loadgen::printHeader(std::ostream &out) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "%-11s %8s %9s %9s %8s %8s %8s %8s %8s %8s %7s %6s %6s  %s\n",
                "system", "rate/s", "offered/s", "served/s", "p50 ms", "p90 ms",
                "p99 ms", "max ms", "queue", "compute", "dropped", "failed",
                "missed", "mean batch");
  out << line;
}

void cellrun::loadgen::printRow(std::ostream &out, const BenchRow &row) {
  const LatencySummary &s = row.summary;
  char rate[32] = "offline";
  if (row.rate > 0)
    std::snprintf(rate, sizeof(rate), "%.1f", row.rate);
  char line[512];
  std::snprintf(line, sizeof(line),
                "%-11s %8s %9.1f %9.1f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f "
                "%7zu %6zu %6zu  %s\n",
                row.system.c_str(), rate, s.offeredPerSecond,
                s.achievedPerSecond, s.p50 * 1e3, s.p90 * 1e3, s.p99 * 1e3,
                s.max * 1e3, s.meanQueue * 1e3, s.meanCompute * 1e3, s.dropped,
                s.failed, s.deadlineMisses, batchText(row, ", ").c_str());
  out << line;
  if (row.runs > 1) {
    std::snprintf(line, sizeof(line),
                  "%-11s %8s median of %u runs: served %.1f-%.1f/s, p50 "
                  "%.2f-%.2f ms, p99 %.2f-%.2f ms\n",
                  "", "", row.runs, row.achievedMin, row.achievedMax,
                  row.p50Min * 1e3, row.p50Max * 1e3, row.p99Min * 1e3,
                  row.p99Max * 1e3);
    out << line;
  }
}

void cellrun::loadgen::writeCsv(std::ostream &out,
                                const std::vector<BenchRow> &rows) {
  out << csvHeader() << "\n";
  char line[512];
  for (const BenchRow &row : rows) {
    const LatencySummary &s = row.summary;
    std::snprintf(
        line, sizeof(line),
        "%s,%.3f,%zu,%zu,%zu,%zu,%.3f,%.3f,%.4f,%.4f,%.4f,%.4f,%.4f,"
        "%.4f,%s,%llu,%zu,%u,%.3f,%.3f,%.4f,%.4f,%.4f,%.4f\n",
        row.system.c_str(), row.rate, s.measured, s.completed, s.dropped,
        s.failed, s.offeredPerSecond, s.achievedPerSecond, s.p50 * 1e3,
        s.p90 * 1e3, s.p99 * 1e3, s.max * 1e3, s.meanQueue * 1e3,
        s.meanCompute * 1e3, batchText(row, ";").c_str(),
        static_cast<unsigned long long>(row.paddingRows), s.deadlineMisses,
        row.runs, row.achievedMin, row.achievedMax, row.p50Min * 1e3,
        row.p50Max * 1e3, row.p99Min * 1e3, row.p99Max * 1e3);
    out << line;
  }
}

void cellrun::loadgen::writeJson(std::ostream &out, const BenchSetup &setup,
                                 const std::vector<BenchRow> &rows) {
  nlohmann::ordered_json root;
  root["model"] = setup.model;
  root["workload"] = setup.workload;
  root["device"] = setup.device;
  root["date"] = setup.date;
  root["command"] = setup.command;
  root["seed"] = setup.seed;
  root["repeat"] = setup.repeat;
  root["duration_s"] = setup.duration;
  root["warmup_s"] = setup.warmup;
  root["cooldown_s"] = setup.cooldown;
  for (const auto &[name, summary] : setup.peerSummaries)
    root["peers"][name] = nlohmann::json::parse(summary, nullptr, false);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const BenchRow &row : rows) {
    const LatencySummary &s = row.summary;
    nlohmann::ordered_json batch = nlohmann::ordered_json::object();
    for (const auto &[cell, mean] : row.meanBatch)
      batch[cell] = mean;
    list.push_back({{"system", row.system},
                    {"rate_per_s", row.rate},
                    {"measured", s.measured},
                    {"completed", s.completed},
                    {"dropped", s.dropped},
                    {"failed", s.failed},
                    {"offered_per_s", s.offeredPerSecond},
                    {"achieved_per_s", s.achievedPerSecond},
                    {"p50_ms", s.p50 * 1e3},
                    {"p90_ms", s.p90 * 1e3},
                    {"p99_ms", s.p99 * 1e3},
                    {"max_ms", s.max * 1e3},
                    {"mean_queue_ms", s.meanQueue * 1e3},
                    {"mean_compute_ms", s.meanCompute * 1e3},
                    {"mean_batch", batch},
                    {"padding_rows", row.paddingRows},
                    {"deadline_misses", s.deadlineMisses},
                    {"runs", row.runs},
                    {"achieved_min_per_s", row.achievedMin},
                    {"achieved_max_per_s", row.achievedMax},
                    {"p50_min_ms", row.p50Min * 1e3},
                    {"p50_max_ms", row.p50Max * 1e3},
                    {"p99_min_ms", row.p99Min * 1e3},
                    {"p99_max_ms", row.p99Max * 1e3}});
  }
  root["rows"] = std::move(list);
  out << root.dump(2) << "\n";
}
