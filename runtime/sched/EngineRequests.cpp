//===- EngineRequests.cpp - Admission and the end of requests -------------===//
//
// A request waits until the rows it may hold at once fit the pools'
// budget (earliest deadline first, then arrival order; the first that does
// not fit blocks those behind it, so a large request is not overtaken
// forever by small ones), is unfolded when admitted, and is returned the
// moment it completes or fails, with its rows and reservation given back.
//
//===----------------------------------------------------------------------===//
#include "EngineImpl.h"

#include <algorithm>

using namespace cellrun;

static double microsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

Status EngineWorker::reserveFor(Entry &entry, bool &fits) {
  std::vector<uint32_t> need(pools_.size(), 0);
  for (const CellGraph::RowNeed &rows : entry.graph->peakRows(nodesInFlight_))
    need[poolId(rows.part, rows.isOutput, rows.index)] += rows.rows;
  fits = true;
  for (uint32_t pool = 0; pool < pools_.size(); ++pool) {
    const PoolState &state = pools_[pool];
    if (need[pool] > state.budget)
      return Status(StatusCode::ResourceExhausted,
                    "request " + entry.graph->request().id + " needs " +
                        std::to_string(need[pool]) + " rows of " +
                        std::to_string(state.pool->rowBytes()) +
                        "-byte state at once; the pool has " +
                        std::to_string(state.budget) +
                        " (raise the pool size)");
    fits &= state.reserved + need[pool] <= state.budget;
  }
  if (!fits)
    return Status::ok();
  for (uint32_t pool = 0; pool < pools_.size(); ++pool)
    pools_[pool].reserved += need[pool];
  entry.reservation = std::move(need);
  entry.held.assign(pools_.size(), 0);
  publishRoom();
  return Status::ok();
}

void EngineWorker::publishRoom() {
  double room = 1;
  for (const PoolState &state : pools_)
    if (state.budget > 0)
      room = std::min(room, double(state.budget - state.reserved) /
                                double(state.budget));
  room_.store(static_cast<uint32_t>(room * 1e6), std::memory_order_relaxed);
}

bool EngineWorker::roomiest() const {
  uint32_t mine = room_.load(std::memory_order_relaxed);
  for (const EngineWorker *other : admission_->workers) {
    uint32_t theirs = other->room_.load(std::memory_order_relaxed);
    if (theirs > mine || (theirs == mine && other->index_ < index_))
      return false;
  }
  return true;
}

bool EngineWorker::admit() {
  bool took = false;
  while (true) {
    std::unique_ptr<Entry> entry;
    Status status;
    {
      std::lock_guard<std::mutex> lock(admission_->mutex);
      if (admission_->waiting.empty())
        break;
      // The first waiting request, if no worker has more room and its rows
      // fit here; it blocks those behind it until then.
      if (admission_->workers.size() > 1 && !roomiest())
        break;
      bool fits = false;
      status = reserveFor(*admission_->waiting.front(), fits);
      if (status.isOk() && !fits)
        break;
      entry = std::move(admission_->waiting.front());
      admission_->waiting.pop_front();
    }
    took = true;
    Entry &admitted = *entry;
    entries_[admitted.key] = std::move(entry);
    if (!status.isOk())
      finishRequest(admitted, status);
    else
      startRequest(admitted);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.running = static_cast<uint32_t>(entries_.size());
  return took;
}

void EngineWorker::startRequest(Entry &entry) {
  entry.admitted = true;
  const Request &request = entry.graph->request();
  uint32_t length = static_cast<uint32_t>(
      request.tree.empty() ? request.steps.size() : request.tree.size());
  policy_->admitted(entry.key, length);
  auto ready = entry.graph->start();
  if (!ready.ok()) {
    finishRequest(entry, ready.status());
    return;
  }
  addReady(entry, std::move(ready).value());
}

void EngineWorker::finishRequest(Entry &entry, Status status) {
  CellGraph &graph = *entry.graph;
  graph.failed = !status.isOk();
  if (!entry.reservation.empty()) {
    for (uint32_t n = 0; n < graph.nodes().size(); ++n)
      releaseOutputs(entry, n);
    // What tasks in flight still hold stays reserved until they finish.
    for (uint32_t pool = 0; pool < pools_.size(); ++pool)
      pools_[pool].reserved -= entry.reservation[pool] - entry.held[pool];
    entry.reservation.clear();
    publishRoom();
  }
  entry.complete = true;
  RequestResult &result = graph.result();
  result.status = status;
  if (!status.isOk()) {
    result.outputs.clear();
    result.stopReason.clear();
  }
  std::vector<uint64_t> returned = {entry.key};
  if (entry.admitted)
    returned = policy_->requestDone(entry.key);
  for (uint64_t key : returned)
    deliver(key);
}

void EngineWorker::deliver(uint64_t key) {
  auto found = entries_.find(key);
  if (found == entries_.end())
    return;
  std::unique_ptr<Entry> entry = std::move(found->second);
  entries_.erase(found);
  CellGraph &graph = *entry->graph;
  RequestResult result = std::move(graph.result());
  Clock::time_point now = Clock::now();
  Clock::time_point start = graph.started ? graph.firstStart : now;
  result.queueMicros = microsBetween(graph.arrival, start);
  result.computeMicros = microsBetween(start, now);
  double deadline = graph.request().deadlineMicros;
  result.missedDeadline =
      deadline > 0 && microsBetween(graph.arrival, now) > deadline;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (result.status.isOk())
      ++stats_.completed;
    else
      ++stats_.failed;
    stats_.deadlineMisses += result.missedDeadline;
  }
  if (entry->done)
    entry->done(std::move(result));
}

void EngineWorker::failStuck() {
  // Admitted requests with nothing to run: only a bug gets here. Fail them
  // so that no caller waits forever.
  std::vector<uint64_t> stuck;
  for (auto &[key, entry] : entries_)
    stuck.push_back(key);
  for (uint64_t key : stuck) {
    auto found = entries_.find(key);
    if (found != entries_.end() && !found->second->complete)
      finishRequest(*found->second,
                    Status(StatusCode::Internal,
                           "the batching policy stalled with request " +
                               found->second->graph->request().id +
                               " unfinished"));
  }
}
