//===- LatencyStats.cpp - Latency bookkeeping of an open-loop run ---------===//
#include "LatencyStats.h"

#include <algorithm>
#include <cmath>

using namespace cellrun::loadgen;

double cellrun::loadgen::nearestRank(const std::vector<double> &sorted,
                                     double q) {
  if (sorted.empty())
    return 0;
  // The smallest value with at least a share q of the values at or below.
  size_t rank = static_cast<size_t>(std::ceil(q * sorted.size()));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

LatencySummary
cellrun::loadgen::summarise(const std::vector<RequestTiming> &timings,
                            double windowStart, double windowEnd) {
  LatencySummary summary;
  summary.windowStart = windowStart;
  summary.windowEnd = windowEnd;
  std::vector<double> latencies;
  double firstArrival = windowEnd, lastResult = windowStart;
  double queueSum = 0, computeSum = 0;
  bool bounded = windowEnd < kOfflineWindowEnd;
  size_t resultsInWindow = 0; // of any request, measured or not
  for (const RequestTiming &timing : timings) {
    resultsInWindow += timing.ok && timing.finished >= windowStart &&
                       timing.finished < windowEnd;
    if (timing.arrival < windowStart || timing.arrival >= windowEnd)
      continue;
    ++summary.measured;
    firstArrival = std::min(firstArrival, timing.arrival);
    if (timing.dropped) {
      ++summary.dropped;
      continue;
    }
    if (!timing.ok || timing.finished < 0) {
      ++summary.failed;
      continue;
    }
    ++summary.completed;
    summary.deadlineMisses += timing.missedDeadline;
    latencies.push_back(timing.finished - timing.arrival);
    lastResult = std::max(lastResult, timing.finished);
    double started = timing.started >= 0 ? timing.started : timing.finished;
    queueSum += started - timing.arrival;
    computeSum += timing.finished - started;
  }
  if (bounded && windowEnd > windowStart) {
    summary.offeredPerSecond = summary.measured / (windowEnd - windowStart);
    // The rate of results over the window: it falls below the arrival rate
    // only when the system falls behind, not when one result is late.
    summary.achievedPerSecond = resultsInWindow / (windowEnd - windowStart);
  }
  if (summary.completed == 0)
    return summary;
  // Offline: completed requests over first arrival to last result.
  if (!bounded && lastResult > firstArrival)
    summary.achievedPerSecond = summary.completed / (lastResult - firstArrival);
  std::sort(latencies.begin(), latencies.end());
  summary.p50 = nearestRank(latencies, 0.50);
  summary.p90 = nearestRank(latencies, 0.90);
  summary.p99 = nearestRank(latencies, 0.99);
  summary.max = latencies.back();
  summary.meanQueue = queueSum / summary.completed;
  summary.meanCompute = computeSum / summary.completed;
  return summary;
}
