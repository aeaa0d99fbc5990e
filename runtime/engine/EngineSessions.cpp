//===- EngineSessions.cpp - Streaming sessions of chain models ------------===//
//
// A session's state lives in pool rows between its chunks: when a chunk
// that does not end the session is done, the rows its last node wrote for
// the state outputs are parked (they stay reserved, as rows of an ended
// request still in use do) and the next chunk's first node reads them in
// place; once that node has run they go back to the pool. The next chunk
// is admitted holding them: they are the outputs of "the node before its
// first" that a chain's need counts anyway, so a session's own state never
// keeps its next chunk out (and sessions cannot lock each other out: a
// session starts only when its chunk fits beside every parked state). Chunks of
// one session run one after the other on the worker that holds the state. A
// chunk that fails, or ends the session, closes it; chunks still waiting
// behind it fail. Sessions idle past the timeout are closed and their rows
// freed.
//
//===----------------------------------------------------------------------===//
#include "engine/EngineImpl.h"

using namespace cellrun;

PoolCounts EngineWorker::parkedFor(const Entry &entry) const {
  PoolCounts rows(pools_.size());
  uint64_t id = entry.graph->request().session.id;
  if (id == 0 || entry.pinnedWorker != static_cast<int32_t>(index_))
    return rows;
  auto found = admission_->sessions.find(id);
  if (found != admission_->sessions.end())
    for (const SessionState::ParkedRow &parked : found->second.parked)
      ++rows[parked.pool];
  return rows;
}

void EngineWorker::releasePinned(Entry &entry, uint32_t node) {
  if (!entry.graph->hasPinned())
    return;
  Span<NodeSource> sources = entry.graph->inputs(node);
  const PartPools &pools = partPools_[entry.graph->nodes()[node].part];
  for (uint32_t i = 0; i < sources.size(); ++i) {
    NodeSource &source = sources[i];
    if (source.kind != NodeSource::Kind::Pinned)
      continue;
    // Held by the chunk since its admission.
    releaseRow(&entry, pools.inputs[i], source.row);
    source.kind = NodeSource::Kind::Zero;
    source.row = -1;
  }
}

void EngineWorker::endChunk(Entry &entry, const Status &status) {
  CellGraph &graph = *entry.graph;
  const SessionChunk &chunk = graph.request().session;
  bool keep = status.isOk() && !chunk.end && graph.steps() > 0;
  std::vector<SessionState::ParkedRow> parked;
  if (keep) {
    // The state the last step wrote (its generation's output rows).
    int32_t *last = graph.chainRows((graph.steps() - 1) & 1);
    const CellRoles &roles = parser_->structure().cells[0];
    for (uint32_t input = 0; input < roles.updatedBy.size(); ++input) {
      int32_t output = roles.updatedBy[input];
      if (output < 0 || last[output] < 0)
        continue;
      parked.push_back({input, poolId(0, true, static_cast<uint32_t>(output)),
                        last[output]});
      // The entry keeps holding the row: it stays reserved once the
      // request has ended, until the next chunk has read it.
      last[output] = -1;
    }
  }
  std::deque<std::unique_ptr<Entry>> orphans;
  {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    auto found = admission_->sessions.find(chunk.id);
    if (found == admission_->sessions.end())
      return;
    SessionState &session = found->second;
    if (keep) {
      session.parked = std::move(parked);
      session.busy = false;
      session.lastActive = Clock::now();
      if (!session.pending.empty()) {
        std::unique_ptr<Entry> next = std::move(session.pending.front());
        session.pending.pop_front();
        --admission_->chunksPending;
        next->pinnedWorker = static_cast<int32_t>(index_);
        session.busy = true;
        admission_->waiting.push_front(std::move(next));
        admission_->wake.notify_all();
      }
    } else {
      // A chunk that failed for want of a device (its worker stopped)
      // lost the session's state: later chunks hear why.
      if (status.code() == StatusCode::Unavailable)
        admission_->rememberLost(chunk.id, status.message());
      orphans = admission_->closeSession(found);
    }
  }
  failOrphans(std::move(orphans), chunk.id, status);
}

std::deque<std::unique_ptr<EngineWorker::Entry>> AdmissionQueue::closeSession(
    std::unordered_map<uint64_t, SessionState>::iterator found) {
  SessionState &session = found->second;
  std::deque<std::unique_ptr<EngineWorker::Entry>> orphans;
  while (!session.pending.empty() &&
         !session.pending.front()->graph->request().session.start) {
    orphans.push_back(std::move(session.pending.front()));
    session.pending.pop_front();
  }
  chunksPending -= orphans.size();
  if (session.pending.empty()) {
    sessions.erase(found);
    return orphans;
  }
  // The id starts anew: a fresh session, its first chunk queued first.
  std::unique_ptr<EngineWorker::Entry> start =
      std::move(session.pending.front());
  session.pending.pop_front();
  --chunksPending;
  SessionState fresh;
  fresh.busy = true;
  fresh.pending = std::move(session.pending);
  for (const auto &chunk : fresh.pending)
    fresh.ending |= chunk->graph->request().session.end;
  session = std::move(fresh);
  start->pinnedWorker = -1;
  waiting.push_front(std::move(start));
  wake.notify_all();
  return orphans;
}

void EngineWorker::failOrphans(std::deque<std::unique_ptr<Entry>> orphans,
                               uint64_t session, const Status &cause) {
  for (std::unique_ptr<Entry> &orphan : orphans) {
    RequestResult result;
    result.id = orphan->graph->request().id;
    // Misuse is the client's; a failure keeps its own code (memory, ours).
    result.status = Status(
        cause.isOk() ? StatusCode::InvalidArgument : cause.code(),
        "request " + result.id + ": sequence_id " + std::to_string(session) +
            (cause.isOk() ? " was ended by an earlier chunk"
                          : " was closed when an earlier chunk failed: " +
                                cause.message()));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.failed;
    }
    if (orphan->done)
      orphan->done(std::move(result));
  }
}

void EngineWorker::expireSessions() {
  if (options_.sessionTimeoutSeconds <= 0)
    return;
  // A sweep at most every 10 ms (or a tenth of the timeout): not a lock
  // and a walk over every session in every round.
  auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.sessionTimeoutSeconds));
  Clock::time_point now = Clock::now();
  if (now - lastSessionSweep_ <
      std::min<Clock::duration>(timeout / 10, std::chrono::milliseconds(10)))
    return;
  lastSessionSweep_ = now;
  std::vector<SessionState::ParkedRow> freed;
  {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    auto &sessions = admission_->sessions;
    for (auto at = sessions.begin(); at != sessions.end();) {
      SessionState &session = at->second;
      if (session.busy || session.worker != static_cast<int32_t>(index_) ||
          now - session.lastActive < timeout) {
        ++at;
        continue;
      }
      freed.insert(freed.end(), session.parked.begin(), session.parked.end());
      at = sessions.erase(at);
      ++admission_->sessionsExpired;
    }
  }
  for (const SessionState::ParkedRow &row : freed)
    releaseFor(0, row.pool, row.row);
}
