//===- LoadTrace.h - Open-loop Poisson arrivals drawn from a seed -*- C++ -*-=//
//
// A trace is the list of (arrival time, request number) of one run. The
// gaps between arrivals are exponential draws of one random stream seeded
// by --seed and scaled by 1/rate, so request k is the same request at every
// rate and for every policy and peer: only the times scale with the rate.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_BENCH_LOADTRACE_H
#define CELLRUN_TOOLS_BENCH_LOADTRACE_H

#include <cstdint>
#include <vector>

namespace cellrun::loadgen {

struct TraceEntry {
  double arrival = 0; // seconds from the start of the run
  uint32_t request = 0;
};

/// Poisson arrivals at `rate` a second during [0, duration): request k
/// arrives at S_k / rate, S_k the sum of the first k+1 unit exponentials.
std::vector<TraceEntry> poissonTrace(uint64_t seed, double rate,
                                     double duration);

/// Every request at time 0 (offline: as fast as the system takes them).
std::vector<TraceEntry> offlineTrace(uint32_t count);

} // namespace cellrun::loadgen

#endif // CELLRUN_TOOLS_BENCH_LOADTRACE_H
