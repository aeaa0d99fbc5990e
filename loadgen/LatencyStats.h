//===- LatencyStats.h - Latency bookkeeping of an open-loop run -*- C++ -*-===//
//
// What a benchmark run records per request (times in seconds from the
// trace's start: the scheduled arrival, when its first cell began, when its
// result came back) and the summary of a measurement window: requests that
// arrived in [windowStart, windowEnd) count, those of the warm-up before it
// and the cool-down after it do not. Latency is from the scheduled arrival
// to the result, so a late submission is the system's delay, not hidden.
// Pure functions: tested on a simulated clock.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_BENCH_LATENCYSTATS_H
#define CELLRUN_TOOLS_BENCH_LATENCYSTATS_H

#include <cstddef>
#include <vector>

namespace cellrun::loadgen {

struct RequestTiming {
  double arrival = 0;   // scheduled arrival
  double started = -1;  // its first cell began; -1: never
  double finished = -1; // its result was delivered; -1: never
  bool ok = false;
  bool dropped = false; // refused at submission (the queue was full)
  bool missedDeadline = false;
};

struct LatencySummary {
  double windowStart = 0, windowEnd = 0;
  size_t measured = 0;  // requests that arrived in the window
  size_t completed = 0; // ... and were answered correctly
  size_t failed = 0, dropped = 0, deadlineMisses = 0;
  /// Requests a second offered (measured arrivals over the window) and
  /// served (results, of any request, delivered within the window, over
  /// its length). Offline (windowEnd = kOfflineWindowEnd): offered is 0 and
  /// served is the completed requests over first arrival to last result.
  double offeredPerSecond = 0, achievedPerSecond = 0;
  /// Latency percentiles (nearest rank) and maximum, seconds.
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
  /// Means over completed requests: arrival to start, start to result.
  double meanQueue = 0, meanCompute = 0;
};

/// The window end of an offline run: every request counts.
constexpr double kOfflineWindowEnd = 1e300;

LatencySummary summarise(const std::vector<RequestTiming> &timings,
                         double windowStart, double windowEnd);

/// The value at quantile `q` (0..1) of sorted `values`, nearest rank.
double nearestRank(const std::vector<double> &sorted, double q);

} // namespace cellrun::loadgen

#endif // CELLRUN_TOOLS_BENCH_LATENCYSTATS_H
