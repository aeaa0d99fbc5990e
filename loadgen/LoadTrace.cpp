//===- LoadTrace.cpp - Open-loop Poisson arrivals drawn from a seed -------===//
#include "LoadTrace.h"

#include <random>

using namespace cellrun::loadgen;

std::vector<TraceEntry>
cellrun::loadgen::poissonTrace(uint64_t seed, double rate, double duration) {
  std::vector<TraceEntry> trace;
  if (!(rate > 0) || !(duration > 0))
    return trace;
  std::mt19937_64 random(seed);
  std::exponential_distribution<double> gap(1.0);
  double unitTime = 0;
  for (uint32_t k = 0;; ++k) {
    unitTime += gap(random);
    double arrival = unitTime / rate;
    if (arrival >= duration)
      break;
    trace.push_back({arrival, k});
  }
  return trace;
}

std::vector<TraceEntry> cellrun::loadgen::offlineTrace(uint32_t count) {
  std::vector<TraceEntry> trace(count);
  for (uint32_t k = 0; k < count; ++k)
    trace[k] = {0.0, k};
  return trace;
}
