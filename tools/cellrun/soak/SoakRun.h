//===- SoakRun.h - The soak's options and open-loop load --------*- C++ -*-===//
//
// The soak's command line (SoakArgs) and its open-loop load: Poisson
// arrivals of valid requests, streaming sessions (some abandoned), invalid
// requests and clients that disconnect mid-request, sent by a pool of client
// threads, with bursts past the queue beside them.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SOAK_SOAKRUN_H
#define CELLRUN_TOOLS_SOAK_SOAKRUN_H

#include "SoakOutcomes.h"
#include "SoakTraffic.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace cellrun::soak {

/// The soak's command line.
struct SoakArgs {
  std::string cellrun, out = "soak-results", machine;
  std::vector<std::string> models; // label=artifact
  double duration = 1800, warmup = 300, load = 0.7, invalid = 0.1;
  double calibrate = 30, rate = 0, burstEvery = 60, timeout = 60;
  uint32_t clients = 48, burstSize = 300, requests = 64, slowClients = 32;
  bool hostile = true;
  int basePort = 19100;
  uint64_t seed = 1;
  bool noHostile = false, smoke = false;
  std::vector<std::string> extraServerArgs; // --server-arg, appended
  std::vector<std::string> serverArgs = {
      "--threads",        "1",      "--max-queue",       "8",
      "--pool-rows",      "1024",   "--session-timeout", "2",
      "--max-body-bytes", "262144", "--log-level",       "warn"};
};

/// Runs the open-loop load at `rate` requests a second for args.duration
/// seconds (bursts every args.burstEvery seconds beside it); returns the
/// requests still queued in the client when it ended (not sent: the load
/// generator fell behind).
size_t runOpenLoopLoad(const SoakArgs &args, std::vector<SoakModel> &models,
                       Outcomes &outcomes, std::atomic<uint64_t> &sequences,
                       double rate);

} // namespace cellrun::soak

#endif // CELLRUN_TOOLS_SOAK_SOAKRUN_H
