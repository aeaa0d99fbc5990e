//===- SoakReport.h - The soak's verdict, tables and files ------*- C++ -*-===//
//
// Writes soak-report.md, soak.json and timeseries.csv under the output
// directory and decides the verdict: the load generator kept up (nothing
// left unsent), at least 90% of the valid requests outside bursts answered
// correctly, nothing lost, nothing wrong, no
// invalid request answered otherwise than its class must be, resident
// memory flat after the warm-up (growth under 1% from the first minute
// after it to the last minute of load), every pool back to empty at the
// end, every server exiting cleanly, and 429/503 answered within 1 ms at
// p99 by the servers' own clocks (request read to answer ready; the
// client-side times, which on a loaded 2-core machine include waiting for
// a core, are reported beside them); and, with the hostile stage, every
// hostile kind seen answered as it must be (slow clients closed by the
// server within --http-timeout and 15 s, pipelined and compressed requests
// answered correctly, gzip bombs refused with 413).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SOAK_SOAKREPORT_H
#define CELLRUN_TOOLS_SOAK_SOAKREPORT_H

#include "SoakMonitor.h"
#include "SoakOutcomes.h"

#include <string>
#include <vector>

namespace cellrun::soak {

struct SoakConfig {
  std::string command, date, machine;
  double duration = 0, warmup = 0, loadFraction = 0, invalidFraction = 0;
  double peak = 0, rate = 0, calibrateSeconds = 0;
  uint32_t clients = 0, burstSize = 0;
  double burstEvery = 0;
  std::vector<std::string> serverArgs;
  /// A short run (the test suite's): memory growth and refusal times are
  /// reported, not judged (seconds of load say nothing about either).
  bool smoke = false;
  /// The hostile stage (SoakHostile.h) ran beside the load.
  bool hostile = false;
  uint32_t slowClients = 0;
  double slowestClose = 0, httpTimeout = 0;
};

struct ServerExit {
  std::string label;
  int status = -1; // waitpid status
};

/// Writes the files; returns true when every check passed.
bool writeReport(const std::string &dir, const SoakConfig &config,
                 const std::vector<SoakModel> &models, const Outcomes &outcomes,
                 const std::vector<Sample> &samples,
                 const std::vector<ServerExit> &exits,
                 const RefusalTimes &serverRefusals, double loadSeconds,
                 size_t unsent);

} // namespace cellrun::soak

#endif // CELLRUN_TOOLS_SOAK_SOAKREPORT_H
