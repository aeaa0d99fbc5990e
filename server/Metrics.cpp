//===- Metrics.cpp - The server's Prometheus metrics ----------------------===//
#include "Metrics.h"

#include <cmath>
#include <cstdio>

using namespace cellrun;
using namespace cellrun::serve;

namespace {

std::string number(double value) {
  if (std::isinf(value))
    return value > 0 ? "+Inf" : "-Inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

void header(std::string &out, const char *name, const char *type,
            const char *help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " +
         type + "\n";
}

void sample(std::string &out, const std::string &name,
            const std::string &labels, double value) {
  out += name;
  if (!labels.empty())
    out += "{" + labels + "}";
  out += " " + number(value) + "\n";
}

/// Seconds from 50 us to 10 s, roughly three buckets a decade.
std::vector<double> latencyBounds() {
  return {5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
          5e-2, 0.1,  0.25,   0.5,  1,    2.5,    5,    10};
}

std::vector<double> refusalBounds() {
  return {1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 1e-2, 0.1};
}

std::vector<double> batchBounds() {
  return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
}

/// A label value with \, " and newlines escaped.
std::string labelValue(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

} // namespace

const char *serve::outcomeName(Outcome outcome) {
  static const char *const names[kOutcomes] = {
      "success",     "invalid", "not_found", "overload",
      "unavailable", "failed",  "cancelled"};
  return names[static_cast<size_t>(outcome)];
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t bucket = 0;
  while (bucket < bounds_.size() && value > bounds_[bucket])
    ++bucket;
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string &out, const std::string &name,
                       const std::string &labels) const {
  std::string prefix = labels.empty() ? "" : labels + ",";
  uint64_t cumulative = 0;
  for (size_t b = 0; b <= bounds_.size(); ++b) {
    cumulative += counts_[b];
    double bound = b < bounds_.size() ? bounds_[b] : INFINITY;
    sample(out, name + "_bucket", prefix + "le=\"" + number(bound) + "\"",
           static_cast<double>(cumulative));
  }
  sample(out, name + "_sum", labels, sum_);
  sample(out, name + "_count", labels, static_cast<double>(count_));
}

ServerMetrics::ServerMetrics(std::vector<std::string> cellNames)
    : cellNames_(std::move(cellNames)), queueSeconds_(latencyBounds()),
      computeSeconds_(latencyBounds()), refusalSeconds_(refusalBounds()) {
  for (size_t c = 0; c < cellNames_.size(); ++c)
    batchRows_.emplace_back(batchBounds());
}

void ServerMetrics::countRequest(Outcome outcome) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[static_cast<size_t>(outcome)];
}

void ServerMetrics::observeRequest(double queueSeconds, double computeSeconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  queueSeconds_.observe(queueSeconds);
  computeSeconds_.observe(computeSeconds);
}

void ServerMetrics::observeRefusal(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  refusalSeconds_.observe(seconds);
}

void ServerMetrics::countRefusedConnection() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++refusedConnections_;
}

void ServerMetrics::observeTask(uint32_t cell, uint32_t rows) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cell < batchRows_.size())
    batchRows_[cell].observe(rows);
}

std::string ServerMetrics::render(const EngineStats &engine,
                                  uint64_t inFlight) const {
  std::string out;
  std::lock_guard<std::mutex> lock(mutex_);
  header(out, "cellrun_requests_total", "counter",
         "Inference requests by outcome.");
  for (size_t o = 0; o < kOutcomes; ++o)
    sample(out, "cellrun_requests_total",
           std::string("outcome=\"") + outcomeName(static_cast<Outcome>(o)) +
               "\"",
           static_cast<double>(requests_[o]));
  header(out, "cellrun_request_queue_seconds", "histogram",
         "Arrival to the first cell of a request, successful requests.");
  queueSeconds_.render(out, "cellrun_request_queue_seconds", "");
  header(out, "cellrun_request_compute_seconds", "histogram",
         "First cell to completion of a request, successful requests.");
  computeSeconds_.render(out, "cellrun_request_compute_seconds", "");
  header(out, "cellrun_refusal_seconds", "histogram",
         "Request read to the answer ready, for requests refused with "
         "429/503 before reaching a worker.");
  refusalSeconds_.render(out, "cellrun_refusal_seconds", "");
  header(out, "cellrun_task_batch_rows", "histogram",
         "Request rows of each task (cell invocations batched together).");
  for (size_t c = 0; c < batchRows_.size(); ++c)
    batchRows_[c].render(out, "cellrun_task_batch_rows",
                         "cell=\"" + labelValue(cellNames_[c]) + "\"");
  header(out, "cellrun_tasks_total", "counter", "Tasks run, by cell type.");
  for (const CellTypeStats &cell : engine.cells)
    sample(out, "cellrun_tasks_total", "cell=\"" + labelValue(cell.name) + "\"",
           static_cast<double>(cell.tasks));
  header(out, "cellrun_worker_round_seconds_total", "counter",
         "Seconds the workers spent in rounds that did work (admission, "
         "binding, tasks, completion), summed over the workers.");
  sample(out, "cellrun_worker_round_seconds_total", "", engine.roundSeconds);
  header(out, "cellrun_executor_seconds_total", "counter",
         "Of the rounds' seconds, those in the executor's task calls (cpu: "
         "the tasks' computation; cuda: submitting and waiting); the rest "
         "is the host's own work.");
  sample(out, "cellrun_executor_seconds_total", "", engine.executorSeconds);
  // Only what was measured: with --time-device on a GPU.
  if (engine.executorDeviceTimedTasks > 0) {
    header(out, "cellrun_device_task_seconds_total", "counter",
           "Seconds a task was on a worker's GPU stream (its span from copy "
           "in to completion, --time-device), summed over the workers; the "
           "rest of a stream's time it waited for the engine.");
    sample(out, "cellrun_device_task_seconds_total", "",
           engine.executorDeviceSeconds);
  }
  header(out, "cellrun_inflight_requests", "gauge",
         "Requests accepted and not yet answered.");
  sample(out, "cellrun_inflight_requests", "", static_cast<double>(inFlight));
  header(out, "cellrun_queued_requests", "gauge",
         "Requests waiting for admission.");
  sample(out, "cellrun_queued_requests", "",
         static_cast<double>(engine.waiting));
  header(out, "cellrun_running_requests", "gauge",
         "Requests admitted and running.");
  sample(out, "cellrun_running_requests", "",
         static_cast<double>(engine.running));
  header(out, "cellrun_sessions", "gauge", "Open streaming sessions.");
  sample(out, "cellrun_sessions", "", static_cast<double>(engine.sessionsOpen));
  header(out, "cellrun_sessions_started_total", "counter",
         "Streaming sessions opened here (sequence_start).");
  sample(out, "cellrun_sessions_started_total", "",
         static_cast<double>(engine.sessionsStarted));
  header(out, "cellrun_sessions_expired_total", "counter",
         "Sessions freed after --session-timeout without a chunk.");
  sample(out, "cellrun_sessions_expired_total", "",
         static_cast<double>(engine.sessionsExpired));
  header(out, "cellrun_requests_moved_total", "counter",
         "Running requests moved from one worker to a less loaded one.");
  sample(out, "cellrun_requests_moved_total", "",
         static_cast<double>(engine.requestsMoved));
  header(out, "cellrun_pool_bytes_reserved", "gauge",
         "State pool memory reserved by admitted requests.");
  sample(out, "cellrun_pool_bytes_reserved", "",
         static_cast<double>(engine.poolBytesReserved));
  header(out, "cellrun_pool_bytes_budget", "gauge",
         "State pool memory requests may reserve (the memory budget).");
  sample(out, "cellrun_pool_bytes_budget", "",
         static_cast<double>(engine.poolBytesBudget));
  header(out, "cellrun_overload_refusals_total", "counter",
         "Requests refused at once because the queue or budget was full.");
  sample(
      out, "cellrun_overload_refusals_total", "",
      static_cast<double>(requests_[static_cast<size_t>(Outcome::Overload)]));
  header(out, "cellrun_http_connections_refused_total", "counter",
         "HTTP connections answered 503 and closed at once: the server had "
         "its limit of open connections (--http-max-connections).");
  sample(out, "cellrun_http_connections_refused_total", "",
         static_cast<double>(refusedConnections_));
  return out;
}
