//===- SoakHostile.h - Hostile traffic beside a soak's load -----*- C++ -*-===//
//
// Runs beside the open-loop load, against every server in turn: slow
// clients that send their headers or their body a byte or a line a second
// (the server must close each within its --http-timeout, and keep serving
// everyone else meanwhile), pipelined requests (three in one write, each
// answered correctly and in order), gzip bombs (a valid request padded with
// whitespace to several times --max-body-bytes once inflated: 413) and
// gzip-compressed valid requests (answered correctly). Their outcomes join
// the soak's tally under the kinds "hostile:*".
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SOAK_SOAKHOSTILE_H
#define CELLRUN_TOOLS_SOAK_SOAKHOSTILE_H

#include "SoakOutcomes.h"
#include "SoakTraffic.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace cellrun::soak {

struct HostileOptions {
  uint32_t slowClients = 32;    // open at once
  double httpTimeout = 30;      // the servers' --http-timeout
  size_t maxBodyBytes = 262144; // the servers' --max-body-bytes
  double requestTimeout = 60;   // seconds without an answer: lost
};

/// The kinds the stage sends (each must be seen answered as it must be).
const std::vector<std::string> &hostileKinds();

class HostileStage {
public:
  HostileStage(const std::vector<SoakModel> &models, Outcomes &outcomes,
               HostileOptions options);
  ~HostileStage();
  void start();
  /// Stops sending and joins; slow clients still within their time are
  /// closed without an outcome.
  void stop();
  /// The longest a server took to close a slow client, in seconds.
  double slowestClose() const { return slowestClose_; }

private:
  void slowClients();
  void pipelines();
  void compressed();

  const std::vector<SoakModel> &models_;
  Outcomes &outcomes_;
  HostileOptions options_;
  std::vector<std::string> bombs_; // per model, gzip
  std::atomic<bool> running_{false};
  std::atomic<double> slowestClose_{0};
  std::vector<std::thread> threads_;
};

} // namespace cellrun::soak

#endif // CELLRUN_TOOLS_SOAK_SOAKHOSTILE_H
