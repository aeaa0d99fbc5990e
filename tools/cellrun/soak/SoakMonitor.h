//===- SoakMonitor.h - Server memory and pools over a soak ------*- C++ -*-===//
//
// Samples each server once a second: its resident memory (VmRSS from
// /proc/PID/status) and, from its Prometheus endpoint, the state memory
// reserved in its pools, the requests waiting and the open sessions.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SOAK_SOAKMONITOR_H
#define CELLRUN_TOOLS_SOAK_SOAKMONITOR_H

#include "SoakTraffic.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace cellrun::soak {

struct Sample {
  double seconds = 0; // since the soak's load started
  size_t model = 0;
  double rssKiB = -1; // -1: the process is gone
  double poolBytesReserved = -1, waiting = -1, sessions = -1; // -1: no answer
};

class Monitor {
public:
  explicit Monitor(const std::vector<SoakModel> &models) : models_(models) {}
  ~Monitor() { stop(); }
  void start();
  void stop();
  /// One sample of every server now (also used before and after the load).
  void sampleNow(double seconds);
  std::vector<Sample> samples() const;

private:
  const std::vector<SoakModel> &models_;
  mutable std::mutex mutex_;
  std::vector<Sample> samples_;
  std::atomic<bool> running_{false};
  std::thread thread_;
};

/// The servers' own count of their 429/503 answers and of those ready
/// within 1 ms of the request being read (cellrun_refusal_seconds).
struct RefusalTimes {
  double count = 0, withinOneMs = 0;
};
RefusalTimes serverRefusalTimes(const std::vector<SoakModel> &models);

/// VmRSS of `pid` in KiB, or -1.
double residentKiB(int pid);

} // namespace cellrun::soak

#endif // CELLRUN_TOOLS_SOAK_SOAKMONITOR_H
