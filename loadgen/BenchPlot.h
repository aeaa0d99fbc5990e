//===- BenchPlot.h - Latency-throughput and batch-size charts ---*- C++ -*-===//
//
// `cellrun bench --plot`: gnuplot (Debian's gnuplot-nox) draws, as PNG and
// SVG, the latency against served throughput of every system (p50 solid,
// p90 dashed: the paper's Figure 7 style) and the mean batch a task over
// time of one run per system. The data files and gnuplot scripts stay
// beside the images, so a chart can be redrawn or restyled.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_BENCH_BENCHPLOT_H
#define CELLRUN_TOOLS_BENCH_BENCHPLOT_H

#include "BenchReport.h"

#include <map>

namespace cellrun::loadgen {

struct BatchSeries {
  std::string title; // "cellular at 400/s"
  RunRecord record;  // its tasks
};

/// Writes latency.{png,svg} and batch.{png,svg} under `directory`;
/// Unavailable when gnuplot cannot be run.
Status writePlots(const std::string &directory, const std::string &title,
                  const std::vector<BenchRow> &rows,
                  const std::vector<BatchSeries> &batches);

} // namespace cellrun::loadgen

#endif // CELLRUN_TOOLS_BENCH_BENCHPLOT_H
