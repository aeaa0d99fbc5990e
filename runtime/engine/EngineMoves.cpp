//===- EngineMoves.cpp - Running requests moved to a less loaded worker ---===//
//
// Algorithm 1 pins a subgraph to the worker that runs it only while one of
// its nodes is running; between tasks it may go to any worker. Requests are
// admitted by the worker with the most room, but they end at different
// times, so one worker may be left with many long requests while another
// has few or none. At the start of each round a worker that holds at least
// twice as many requests as the least loaded one (plus 2), and has less room
// than it by more than the admission slack, moves half the difference to it:
// requests with no node running, those with the most nodes left first. A move
// copies every row the request holds (its nodes' outputs that are still to be
// read, a chain's two generations, a decoder's memories) out of this worker's
// pools, takes its subgraphs out of this worker's policy and hands the request,
// with its reservation, to the other worker, which writes the rows into its own
// pools and hands the subgraphs to its policy. Results are the same bits
// wherever a node runs.
//
// Not moved: session chunks (their state is parked on their worker) and
// custom unfolders' requests (an unfolder may read any finished node).
//
//===----------------------------------------------------------------------===//
#include "engine/EngineImpl.h"

#include <algorithm>
#include <optional>

using namespace cellrun;

bool EngineWorker::movable(const Entry &entry) const {
  const CellGraph &graph = *entry.graph;
  // A session's chunk (its state parked here, the worker it is pinned to)
  // stays.
  return !entry.complete && entry.failure.isOk() && !entry.cancelled &&
         !graph.finished() && nodesLeft(entry) > 0 &&
         graph.request().session.id == 0;
}

void EngineWorker::forEachHeldRow(
    Entry &entry, FunctionRef<void(uint32_t pool, int32_t &row)> visit) {
  CellGraph &graph = *entry.graph;
  if (graph.isChain()) {
    const CellRoles &roles = parser_->structure().cells[0];
    // (A request that ends before its graph starts, e.g. when its inputs
    // could not be projected, holds no generation rows yet.)
    for (uint32_t generation = 0; generation < 2 && graph.chainRowsLaidOut();
         ++generation) {
      int32_t *rows = graph.chainRows(generation);
      for (uint32_t slot = 0; slot < roles.outputCount; ++slot)
        if (rows[slot] >= 0)
          visit(partPools_[0].outputs[slot], rows[slot]);
      for (uint32_t d = 0; d < roles.dataInputs.size(); ++d)
        if (int32_t &row = rows[roles.outputCount + d]; row >= 0)
          visit(partPools_[0].inputs[roles.dataInputs[d]], row);
    }
    // Its projected inputs' products (projectIntoPools; taken before its
    // graph starts, so counted by the request's steps).
    if (!entry.productRows.empty()) {
      uint32_t steps = static_cast<uint32_t>(graph.request().steps.size());
      for (uint32_t d = 0; d < roles.dataInputs.size(); ++d) {
        if (!productsInPools_[d])
          continue;
        int32_t *rows =
            entry.productRows.data() + size_t(productBlock(d)) * steps;
        for (uint32_t s = 0; s < steps; ++s)
          if (rows[s] >= 0)
            visit(partPools_[0].inputs[roles.dataInputs[d]], rows[s]);
      }
    }
    return;
  }
  for (uint32_t node = 0; node < graph.nodes().size(); ++node) {
    const PartPools &pools = partPools_[graph.nodes()[node].part];
    Span<int32_t> rows = graph.outputRows(node);
    for (uint32_t o = 0; o < rows.size(); ++o)
      if (rows[o] >= 0)
        visit(pools.outputs[o], rows[o]);
  }
  for (auto &[pool, row] : entry.heldRows)
    if (row >= 0)
      visit(pool, row);
}

void EngineWorker::moveRequests() {
  uint32_t mine = static_cast<uint32_t>(entries_.size());
  if (!movesAllowed_ || mine < 2)
    return;
  if (moveBackoff_ > 0) { // the last try found nothing it could move
    --moveBackoff_;
    return;
  }
  EngineWorker *target = nullptr;
  uint32_t theirs = 0;
  for (EngineWorker *other : admission_->workers) {
    if (other == this || other->exited_ || other->outOfService_)
      continue;
    uint32_t load = other->load_.load(std::memory_order_relaxed);
    if (!target || load < theirs) {
      target = other;
      theirs = load;
    }
  }
  if (!target || mine < 2 * theirs + 2)
    return;
  // Running a task's worth at most (maxRunning), the other takes waiting
  // requests from the queue rather than this worker's.
  if (runningCap_.load(std::memory_order_relaxed) != UINT32_MAX &&
      !target->atRunningCap()) {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    if (!admission_->waiting.empty())
      return;
  }
  // Not what admission would undo: the other must have more room than this
  // one by more than the slack a worker admitting keeps (a bunch just
  // admitted here stays to fill this worker's tasks).
  if (options_.admissionSlack > 0) {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    if (target->room() <= room() + options_.admissionSlack)
      return;
  }
  uint32_t wanted = (mine - theirs) / 2;
  // The requests with the most nodes left first: they are what keeps this
  // worker busy after the other has run dry.
  std::vector<std::pair<uint32_t, uint64_t>> candidates;
  for (uint64_t key : entries_.keys())
    if (const Entry *entry = entries_.find(key); entry && movable(*entry))
      candidates.emplace_back(nodesLeft(*entry), key);
  std::sort(candidates.begin(), candidates.end(),
            [](const auto &a, const auto &b) { return a.first > b.first; });
  uint32_t moved = 0;
  for (const auto &[left, key] : candidates) {
    if (moved == wanted)
      break;
    Entry *entry = entries_.find(key);
    if (!entry)
      continue;
    MoveResult result = moveTo(*entry, *target);
    if (result == MoveResult::TargetFull)
      break;
    moved += result == MoveResult::Moved;
  }
  if (moved == 0) {
    moveBackoff_ = 8;
    return;
  }
  admission_->wake.notify_all();
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.requestsMoved += moved;
  stats_.running = static_cast<uint32_t>(entries_.size());
}

/// Whether `entry` must stay: a cancellation has reached it (by its token
/// or by cancelAll) that this worker has yet to act on, or `target` no
/// longer serves (under the admission mutex).
static bool mustStay(const EngineWorker::Entry &entry,
                     const EngineWorker &worker, const EngineWorker &target) {
  const auto &token = entry.graph->request().cancel;
  return (token && token->cancelled()) || entry.cancelled ||
         worker.cancelAllReason_.has_value() || target.exited_ ||
         target.outOfService_;
}

EngineWorker::MoveResult EngineWorker::moveTo(Entry &entry,
                                              EngineWorker &target) {
  {
    // Its reservation goes with it: room there first.
    std::lock_guard<std::mutex> lock(admission_->mutex);
    if (target.exited_ || target.outOfService_ || !target.fits(entry.need))
      return MoveResult::TargetFull;
    if (mustStay(entry, *this, target))
      return MoveResult::Kept;
    // A node of it in a task that has not finished pins it here.
    entry.movedSubgraphs.clear();
    if (entry.chainSlot >= 0) {
      // In the chain batch: once no task holding a step of it is still to
      // complete (overlapped rounds), the steps it has not run; the
      // target's batch takes it there.
      if (chainSlots_.boundRound[entry.chainSlot] > completedRound_)
        return MoveResult::Kept;
      ReadySubgraph &rest = entry.movedSubgraphs.emplace_back();
      rest.first = chainSlots_.next[entry.chainSlot];
      rest.count = nodesLeft(entry);
      leaveChainBatch(entry);
    } else if (!policy_->release(entry.key, entry.movedSubgraphs)) {
      return MoveResult::Kept;
    }
    for (uint32_t pool = 0; pool < pools_.size(); ++pool)
      target.pools_[pool].reserved += entry.need[pool];
    target.load_.fetch_add(1, std::memory_order_relaxed);
  }
  // Every row it holds, in the order the target takes rows again.
  Status error;
  entry.movedState.clear();
  forEachHeldRow(entry, [&](uint32_t pool, int32_t &row) {
    if (!error.isOk())
      return;
    SlotPool &slots = *pools_[pool].pool;
    size_t at = entry.movedState.size();
    entry.movedState.resize(at + slots.rowBytes());
    error = executor_->readRow(slots, static_cast<uint32_t>(row),
                               entry.movedState.data() + at);
  });
  {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    // A cancellation that came meanwhile went to this worker, and the
    // target may have stopped: then it stays (its rows are still here).
    bool stays = !error.isOk() || mustStay(entry, *this, target);
    if (!stays) {
      // Given back here; the indices stay, for the target to take as many.
      forEachHeldRow(entry, [&](uint32_t pool, int32_t &row) {
        pools_[pool].pool->put(static_cast<uint32_t>(row));
      });
      for (uint32_t pool = 0; pool < pools_.size(); ++pool) {
        entry.held[pool] = 0;
        pools_[pool].reserved -= entry.need[pool];
      }
      // Cancelled from here on, it is the target's to end.
      if (const auto &token = entry.graph->request().cancel)
        token->worker_ = static_cast<int32_t>(target.index_);
      ++target.arriving_;
      admission_->arriving[target.index_].push_back(entries_.erase(entry.key));
      return MoveResult::Moved;
    }
    for (uint32_t pool = 0; pool < pools_.size(); ++pool)
      target.pools_[pool].reserved -= entry.need[pool];
    target.load_.fetch_sub(1, std::memory_order_relaxed);
  }
  entry.movedState = std::vector<uint8_t>();
  std::vector<ReadySubgraph> subgraphs = std::move(entry.movedSubgraphs);
  entry.movedSubgraphs.clear();
  if (!error.isOk()) {
    finishRequest(entry, error); // its rows could not be read: it fails
    return MoveResult::Kept;
  }
  handToPolicy(entry, subgraphs); // back into this worker's policy
  return MoveResult::Kept;
}

bool EngineWorker::takeArrivals() {
  struct Arrival {
    std::unique_ptr<Entry> entry;
    std::optional<std::string> cancelReason;
  };
  std::vector<Arrival> arrived;
  {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    for (std::unique_ptr<Entry> &moved : admission_->arriving[index_]) {
      // Cancelled while it moved (its token now names this worker): it
      // ends once it is here, as at admission.
      std::optional<std::string> reason;
      if (const auto &token = moved->graph->request().cancel;
          token && token->cancelled_)
        reason = token->why_;
      if (moved->cancelled)
        reason = moved->cancelReason;
      arrived.push_back({std::move(moved), std::move(reason)});
    }
    admission_->arriving[index_].clear();
    arriving_ = 0;
    if (!arrived.empty())
      idle_ = false;
  }
  if (arrived.empty())
    return false;
  // Rows are written from the host (at once, in host-visible pools): no
  // task may be using them, so the round in flight finishes first.
  if (!pending_.empty()) {
    std::vector<InFlight> previous = std::move(pending_);
    pending_.clear();
    completeAll(previous);
  }
  for (Arrival &arrival : arrived) {
    Entry &entry = *arrival.entry;
    entry.key = entries_.insert(std::move(arrival.entry));
    if (const auto &token = entry.graph->request().cancel)
      token->key_ = entry.key;
    uint64_t key = entry.key;
    resumeMoved(entry); // may end it (then the key finds nothing)
    if (arrival.cancelReason)
      endAsCancelled(key, *arrival.cancelReason);
  }
  return true;
}

void EngineWorker::resumeMoved(Entry &entry) {
  // The rows it held there, taken here in the same order (a row not taken
  // after an error is marked free, so ending the request gives back only
  // rows of this worker).
  Status error;
  size_t at = 0;
  forEachHeldRow(entry, [&](uint32_t pool, int32_t &row) {
    if (!error.isOk()) {
      row = -1;
      return;
    }
    row = acquireFor(entry, pool, &error);
    if (row < 0)
      return;
    error = executor_->writeRow(*pools_[pool].pool, static_cast<uint32_t>(row),
                                entry.movedState.data() + at);
    at += pools_[pool].pool->rowBytes();
  });
  entry.movedState = std::vector<uint8_t>();
  std::vector<ReadySubgraph> subgraphs = std::move(entry.movedSubgraphs);
  entry.movedSubgraphs.clear();
  if (!error.isOk()) {
    finishRequest(entry, error);
    return;
  }
  handToPolicy(entry, subgraphs);
}
