//===- Metrics.h - The server's Prometheus metrics --------------*- C++ -*-===//
//
// Counters and histograms the front ends update, rendered in the Prometheus
// text exposition format (version 0.0.4) for GET /metrics together with
// the engine's own counts (tasks, pool memory, queue). Thread-safe.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SERVE_METRICS_H
#define CELLRUN_TOOLS_SERVE_METRICS_H

#include "cellrun/Engine.h"

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace cellrun::serve {

/// How a request ended, as the requests counter labels it.
enum class Outcome {
  Success,     // answered with outputs
  Invalid,     // 400: the request was malformed
  NotFound,    // 404: unknown model or version
  Overload,    // 429: queue or memory budget full
  Unavailable, // 503: not ready or shutting down
  Failed,      // 500: the engine failed it
  Cancelled,   // its client went away, or the drain deadline passed (503)
};
constexpr size_t kOutcomes = 7;
const char *outcomeName(Outcome outcome);

/// A cumulative histogram with fixed upper bounds (+Inf implied).
class Histogram {
public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  /// Appends the _bucket, _sum and _count lines of `name` with `labels`
  /// (e.g. `cell="lstm"`, or empty).
  void render(std::string &out, const std::string &name,
              const std::string &labels) const;

private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_; // per bound, then +Inf; not cumulative
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
public:
  explicit ServerMetrics(std::vector<std::string> cellNames);

  void countRequest(Outcome outcome);
  /// A successful request's times in the engine, in seconds.
  void observeRequest(double queueSeconds, double computeSeconds);
  /// A 429/503 answer: seconds from the request read (HTTP handler entry,
  /// gRPC call) to the reply ready.
  void observeRefusal(double seconds);
  /// A task of cell type `cell` with `rows` request rows.
  void observeTask(uint32_t cell, uint32_t rows);
  /// An HTTP connection answered 503 and closed at once: the server had
  /// its limit of open connections.
  void countRefusedConnection();

  /// The whole exposition: our counters, then the engine's state.
  std::string render(const EngineStats &engine, uint64_t inFlight) const;

private:
  mutable std::mutex mutex_;
  std::vector<std::string> cellNames_;
  std::array<uint64_t, kOutcomes> requests_{};
  Histogram queueSeconds_, computeSeconds_, refusalSeconds_;
  std::vector<Histogram> batchRows_; // per cell type
  uint64_t refusedConnections_ = 0;
};

} // namespace cellrun::serve

#endif // CELLRUN_TOOLS_SERVE_METRICS_H
