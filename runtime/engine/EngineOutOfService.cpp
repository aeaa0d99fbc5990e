//===- EngineOutOfService.cpp - A worker whose device is lost -------------===//
//
// When a worker's executor is lost (a GPU after a sticky error such as an
// illegal address, or an injected Device fault), nothing it holds can be
// computed any more: the worker fails the round in flight, every request
// admitted to it, the sessions whose state is parked in its pools and the
// chunks waiting for it, each with an Unavailable error naming the worker
// and the cause, gives their rows back, and stops. The other workers take
// the waiting requests; when none is left, every waiting request fails and
// the engine refuses new ones (Engine::submit).
//
//===----------------------------------------------------------------------===//
#include "engine/EngineImpl.h"

using namespace cellrun;

Status EngineWorker::stoppedBy(const Status &lost) const {
  return Status(StatusCode::Unavailable,
                "worker " + std::to_string(index_) +
                    " stopped serving: " + lost.message());
}

void EngineWorker::takeOutOfService(const Status &lost) {
  Status cause = stoppedBy(lost);
  bool noneLeft = false;
  std::vector<std::unique_ptr<Entry>> arrived;
  {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    if (outOfService_)
      return;
    outOfService_ = true;
    exited_ = true; // the other workers no longer count on it
    --admission_->inService;
    admission_->lastLoss = cause;
    noneLeft = admission_->inService == 0;
    arrived.swap(admission_->arriving[index_]);
  }
  // Requests moved here and not taken yet fail with the rest below: their
  // reservations are this worker's already, the rows they name are the
  // worker's they left (given back there).
  for (std::unique_ptr<Entry> &moved : arrived) {
    Entry &entry = *moved;
    forEachHeldRow(entry, [](uint32_t, int32_t &row) { row = -1; });
    entry.key = entries_.insert(std::move(moved));
    if (const auto &token = entry.graph->request().cancel)
      token->key_ = entry.key;
  }
  // The round in flight fails without waiting on the lost device.
  std::vector<InFlight> inFlight = std::move(pending_);
  pending_.clear();
  for (InFlight &flight : inFlight) {
    if (flight.status.isOk())
      flight.status = cause;
    complete(flight);
  }
  for (InFlight &flight : inFlight)
    recycle(std::move(flight));
  // Every request admitted here; those a policy holds back for their batch
  // (graph batching) are delivered too.
  for (uint64_t key : entries_.keys())
    if (Entry *entry = entries_.find(key); entry && !entry->complete)
      finishRequest(*entry, cause);
  for (uint64_t key : entries_.keys())
    deliver(key);

  // Sessions parked here, chunks pinned here, and everything waiting when
  // no worker is left.
  Orphans orphans = takeOrphans(cause, noneLeft);
  for (const SessionState::ParkedRow &row : orphans.freed)
    releaseFor(0, row.pool, row.row);
  for (std::unique_ptr<Entry> &entry : orphans.unserved)
    failUnserved(*entry, cause, noneLeft);
  for (auto &[session, waiting] : orphans.sessions)
    failOrphans(std::move(waiting), session, cause);
  idle_ = true;
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.running = 0;
}

EngineWorker::Orphans EngineWorker::takeOrphans(const Status &cause,
                                                bool noneLeft) {
  // Closing a session may queue the chunk that starts its id anew: passes
  // until nothing more is taken.
  Orphans orphans;
  std::lock_guard<std::mutex> lock(admission_->mutex);
  auto &waiting = admission_->waiting;
  auto &sessions = admission_->sessions;
  int32_t self = static_cast<int32_t>(index_);
  for (bool took = true; took;) {
    took = false;
    for (auto at = waiting.begin(); at != waiting.end();) {
      if (noneLeft || (*at)->pinnedWorker == self) {
        orphans.unserved.push_back(std::move(*at));
        at = waiting.erase(at);
        took = true;
      } else {
        ++at;
      }
    }
    // Sessions whose state is here; with no worker left, also those never
    // placed. One parked on another stopped worker is that worker's to
    // close: only its thread may give its rows back.
    for (auto at = sessions.begin(); at != sessions.end();) {
      auto next = std::next(at);
      int32_t worker = at->second.worker;
      if (worker == self || (noneLeft && worker < 0)) {
        for (const SessionState::ParkedRow &row : at->second.parked)
          orphans.freed.push_back(row);
        at->second.parked.clear();
        uint64_t id = at->first;
        admission_->rememberLost(id, cause.message());
        orphans.sessions.emplace_back(id, admission_->closeSession(at));
        took = true;
      }
      at = next;
    }
  }
  return orphans;
}

void EngineWorker::failUnserved(Entry &entry, const Status &cause,
                                bool noneLeft) {
  RequestResult result;
  result.id = entry.graph->request().id;
  result.status =
      Status(StatusCode::Unavailable,
             "request " + result.id + " was not run: " + cause.message() +
                 (noneLeft ? " (no worker is serving)" : ""));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.failed;
  }
  if (entry.done)
    entry.done(std::move(result));
}
