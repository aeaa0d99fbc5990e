//===- BenchTiming.h - Repeated calls timed: best and median ----*- C++ -*-===//
//
// The benchmark programs' timing loop: one call to warm up, then calls until
// both a count and a time are reached; the best call (the least disturbed on
// a shared machine) and the median.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_BENCH_BENCHTIMING_H
#define CELL_BENCH_BENCHTIMING_H

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace cellbench {

struct Timing {
  double best = 0, median = 0; // seconds
};

/// Times `run` over at least `minCalls` calls lasting together at least
/// `minSeconds`, at most `maxCalls`, after one call to warm up.
template <typename Run>
inline Timing timeCalls(Run run, double minSeconds, size_t minCalls = 5,
                        size_t maxCalls = 1000) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> samples;
  run();
  auto start = Clock::now();
  while (samples.size() < minCalls ||
         std::chrono::duration<double>(Clock::now() - start).count() <
             minSeconds) {
    auto begin = Clock::now();
    run();
    samples.push_back(
        std::chrono::duration<double>(Clock::now() - begin).count());
    if (samples.size() >= maxCalls)
      break;
  }
  std::sort(samples.begin(), samples.end());
  return {samples.front(), samples[samples.size() / 2]};
}

} // namespace cellbench

#endif // CELL_BENCH_BENCHTIMING_H
