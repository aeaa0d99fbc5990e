//===- SoakOutcomes.h - What became of every request a soak sent -*- C++
//-*-===//
//
// Every request gets exactly one outcome: answered and equal to its
// reference, answered wrongly, refused as expected (an invalid request with
// the status its class must get, and an error message), refused otherwise,
// overloaded (429), failed (another status, 503 included, or a broken
// connection) or lost (no answer within the timeout). Thread-safe.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SOAK_SOAKOUTCOMES_H
#define CELLRUN_TOOLS_SOAK_SOAKOUTCOMES_H

#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace cellrun::soak {

enum class Outcome {
  Correct,
  Wrong,
  RefusedAsExpected,
  RefusedOtherwise,
  Overloaded,
  Failed,
  Lost,
};
constexpr size_t kOutcomeCount = 7;
const char *outcomeName(Outcome outcome);

class Outcomes {
public:
  /// Records one request of `kind` ("plain", "session", "burst",
  /// "invalid:<class>", ...); `overloadMs` >= 0 for a 429 answer: the
  /// time it took; `detail` describes a wrong or failed one.
  void record(const std::string &kind, Outcome outcome, double overloadMs = -1,
              const std::string &detail = "");
  void countDisconnect() { ++disconnects_; }
  void countAbandonedSession() { ++abandonedSessions_; }

  uint64_t total(Outcome outcome) const;
  uint64_t sent() const;
  uint64_t disconnects() const { return disconnects_; }
  uint64_t abandonedSessions() const { return abandonedSessions_; }
  /// Client-side times of the 429 answers, in ms, sorted.
  std::vector<double> overloadTimes() const;
  /// Per kind, the count of each outcome.
  std::map<std::string, std::array<uint64_t, kOutcomeCount>> byKind() const;
  /// The first few wrong or failed requests, described.
  std::vector<std::string> problems() const;

private:
  mutable std::mutex mutex_;
  std::map<std::string, std::array<uint64_t, kOutcomeCount>> counts_;
  std::vector<double> overloadMs_;
  std::vector<std::string> problems_;
  std::atomic<uint64_t> disconnects_{0}, abandonedSessions_{0};
};

} // namespace cellrun::soak

#endif // CELLRUN_TOOLS_SOAK_SOAKOUTCOMES_H
