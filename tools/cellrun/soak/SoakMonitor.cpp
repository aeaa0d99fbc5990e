//===- SoakMonitor.cpp - Server memory and pools over a soak --------------===//
#include "SoakMonitor.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

using namespace cellrun::soak;

double cellrun::soak::residentKiB(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stod(line.substr(6));
  return -1;
}

namespace {

/// The value of an unlabelled sample `name` in a Prometheus exposition.
double metricValue(const std::string &text, const std::string &name) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind(name + " ", 0) == 0)
      return std::stod(line.substr(name.size() + 1));
  return -1;
}

} // namespace

RefusalTimes
cellrun::soak::serverRefusalTimes(const std::vector<SoakModel> &models) {
  RefusalTimes times;
  const std::string bucket = "cellrun_refusal_seconds_bucket{le=\"";
  for (const SoakModel &model : models) {
    httplib::Client metrics("127.0.0.1", model.metricsPort);
    metrics.set_read_timeout(5, 0);
    auto reply = metrics.Get("/metrics");
    if (!reply || reply->status != 200)
      continue;
    times.count += std::max(
        0.0, metricValue(reply->body, "cellrun_refusal_seconds_count"));
    // Cumulative buckets: the largest bound within 1 ms counts them all.
    double within = 0;
    std::istringstream lines(reply->body);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind(bucket, 0) != 0)
        continue;
      size_t close = line.find('"', bucket.size());
      double bound =
          std::stod(line.substr(bucket.size(), close - bucket.size()));
      if (bound <= 1e-3 * (1 + 1e-9))
        within = std::stod(line.substr(line.find(' ', close) + 1));
    }
    times.withinOneMs += within;
  }
  return times;
}

void Monitor::sampleNow(double seconds) {
  std::vector<Sample> taken;
  for (size_t m = 0; m < models_.size(); ++m) {
    Sample sample;
    sample.seconds = seconds;
    sample.model = m;
    sample.rssKiB = residentKiB(models_[m].pid);
    httplib::Client metrics("127.0.0.1", models_[m].metricsPort);
    metrics.set_read_timeout(5, 0);
    if (auto reply = metrics.Get("/metrics"); reply && reply->status == 200) {
      sample.poolBytesReserved =
          metricValue(reply->body, "cellrun_pool_bytes_reserved");
      sample.waiting = metricValue(reply->body, "cellrun_queued_requests");
      sample.sessions = metricValue(reply->body, "cellrun_sessions");
    }
    taken.push_back(sample);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  samples_.insert(samples_.end(), taken.begin(), taken.end());
}

void Monitor::start() {
  running_ = true;
  thread_ = std::thread([this] {
    auto begin = std::chrono::steady_clock::now();
    auto next = begin;
    while (running_) {
      next += std::chrono::seconds(1);
      std::this_thread::sleep_until(next);
      sampleNow(std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                              begin)
                    .count());
    }
  });
}

void Monitor::stop() {
  running_ = false;
  if (thread_.joinable())
    thread_.join();
}

std::vector<Sample> Monitor::samples() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return samples_;
}
