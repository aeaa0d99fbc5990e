//===- LoadRunner.cpp - One open-loop run of a trace on the engine --------===//
#include "LoadRunner.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

using namespace cellrun;
using namespace cellrun::loadgen;
using Clock = std::chrono::steady_clock;

namespace {

double secondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

} // namespace

Result<RunRecord> cellrun::loadgen::runEngine(
    std::shared_ptr<const LoadedArtifact> artifact, EngineOptions options,
    const std::vector<Request> &requests, const std::vector<TraceEntry> &trace,
    const std::string &label, bool quiet) {
  RunRecord record;
  record.timings.resize(trace.size());
  std::mutex mutex;
  std::condition_variable allDone;
  Clock::time_point start;
  // Offline (every arrival at 0, and the queue takes them all): the whole
  // trace is submitted before the workers start, so that no policy's first
  // round sees only the requests that won a race with the submitting
  // thread (graph batching would run its first batch with them alone).
  bool offline = !trace.empty() && trace.back().arrival == 0 &&
                 options.maxQueue >= trace.size();
  if (offline)
    options.startWorker = false;
  options.onTask = [&](const TaskRecord &task) {
    std::lock_guard<std::mutex> lock(mutex);
    record.tasks.push_back({secondsBetween(start, task.finished), task.cellType,
                            task.nodes, task.paddingRows});
  };
  auto created = Engine::create(artifact, options);
  if (!created.ok())
    return created.status();
  Engine &engine = *created.value();
  for (const CellTypeStats &cell : engine.stats().cells)
    record.cellNames.push_back(cell.name);

  std::atomic<size_t> sent{0}, answered{0};
  std::atomic<bool> submitting{true};
  std::thread progress;
  if (!quiet && isatty(fileno(stderr)))
    progress = std::thread([&] {
      while (submitting || answered < sent) {
        std::fprintf(stderr, "\r%-28s %7zu/%zu sent, %7zu answered",
                     label.c_str(), sent.load(), trace.size(), answered.load());
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      std::fprintf(stderr, "\r%80s\r", "");
    });

  start = Clock::now();
  for (size_t k = 0; k < trace.size(); ++k) {
    const TraceEntry &entry = trace[k];
    RequestTiming &timing = record.timings[k];
    timing.arrival = entry.arrival;
    std::this_thread::sleep_until(
        start + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(entry.arrival)));
    ++sent;
    Status status =
        engine.submit(requests[entry.request], [&, k](RequestResult result) {
          double now = secondsBetween(start, Clock::now());
          std::lock_guard<std::mutex> lock(mutex);
          RequestTiming &done = record.timings[k];
          done.finished = now;
          done.started = now - result.computeMicros * 1e-6;
          done.ok = result.status.isOk();
          done.missedDeadline = result.missedDeadline;
          ++answered;
          allDone.notify_all();
        });
    if (!status.isOk()) {
      std::lock_guard<std::mutex> lock(mutex);
      timing.dropped = status.code() == StatusCode::ResourceExhausted;
      ++answered;
    }
  }
  if (offline)
    engine.startWorkers();
  {
    std::unique_lock<std::mutex> lock(mutex);
    allDone.wait(lock, [&] { return answered == trace.size(); });
  }
  submitting = false;
  if (progress.joinable())
    progress.join();
  created.value().reset(); // the worker ends: no task record comes later
  double first = trace.empty() ? 0 : trace.front().arrival, last = first;
  for (const RequestTiming &timing : record.timings)
    last = std::max(last, timing.finished);
  record.seconds = last - first;
  return record;
}
