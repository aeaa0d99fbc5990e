//===- BenchReport.h - Tables, CSV and JSON of benchmark runs ---*- C++ -*-===//
//
// One row per system (a batching policy of ours, or a peer) and offered
// rate: throughput, latency percentiles, mean queueing and compute time,
// mean batch (request rows a task) per cell type, drops and failures, all
// over the measurement window. Printed as a table and written as CSV and
// JSON (schema in docs/benchmarking.md).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_BENCH_BENCHREPORT_H
#define CELLRUN_TOOLS_BENCH_BENCHREPORT_H

#include "LoadRunner.h"

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace cellrun::loadgen {

struct BenchRow {
  std::string system; // cellular, padded, graph, pytorch
  double rate = 0;    // offered arrivals a second; 0: offline
  LatencySummary summary;
  /// Per cell type: name and mean request rows a task in the window.
  std::vector<std::pair<std::string, double>> meanBatch;
  uint64_t paddingRows = 0;
  /// Runs of the same trace this row stands for (--repeat): each column is
  /// their median, and the spread of throughput and latency is kept.
  uint32_t runs = 1;
  double achievedMin = 0, achievedMax = 0;               // requests a second
  double p50Min = 0, p50Max = 0, p99Min = 0, p99Max = 0; // seconds
};

/// The row of `record` (its tasks and timings) over the window.
BenchRow makeRow(const std::string &system, double rate,
                 const RunRecord &record, double windowStart, double windowEnd);

/// One row for runs of the same system, rate and trace: every column the
/// median (nearest rank, the lower one for an even count), except failures,
/// drops, deadline misses and the maximum latency (the most any run had),
/// with the smallest and largest throughput, p50 and p99 kept beside it.
BenchRow medianRow(const std::vector<BenchRow> &runs);

struct BenchSetup {
  std::string model, workload, device, command, date;
  uint64_t seed = 0;
  uint32_t repeat = 1;
  double duration = 0, warmup = 0, cooldown = 0;
  /// Each peer that ran (pytorch, onnxruntime): its one-line JSON.
  std::map<std::string, std::string> peerSummaries;
};

void printHeader(std::ostream &out);
void printRow(std::ostream &out, const BenchRow &row);
void writeCsv(std::ostream &out, const std::vector<BenchRow> &rows);
void writeJson(std::ostream &out, const BenchSetup &setup,
               const std::vector<BenchRow> &rows);

/// The CSV header, for the schema test.
const char *csvHeader();

} // namespace cellrun::loadgen

#endif // CELLRUN_TOOLS_BENCH_BENCHREPORT_H
