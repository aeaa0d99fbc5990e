//===- EngineRequests.cpp - Admission and the end of requests -------------===//
//
// A request waits until the rows it may hold at once fit some worker's
// pools (earliest deadline first, then arrival order; the first that does
// not fit blocks those behind it, so a large request is not overtaken
// forever by small ones), is unfolded when admitted, and is returned the
// moment it completes or fails, with its rows and reservation given back.
//
//===----------------------------------------------------------------------===//
#include "engine/EngineImpl.h"

#include <algorithm>

using namespace cellrun;

static double microsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

Result<std::vector<uint32_t>>
EngineWorker::needOf(const CellGraph &graph, bool *productsInPools) const {
  if (productsInPools)
    *productsInPools = false;
  // A chain's or seq2seq's need does not depend on the request (found at
  // initialisation), but for the products of a chain's projected inputs
  // when they stay in pool rows: a row a step, in place of the two rows
  // of data a step would be written into. When they do not fit the pool
  // the request's products go through its step rows instead.
  if (!fixedNeed_.empty()) {
    // (productNeed_ is set only with the chain batch, whose requests'
    // results are all placed: every chain request runs in it.)
    if (productNeed_.empty() || !graph.isChain())
      return fixedNeed_;
    std::vector<uint32_t> need =
        needWithProducts(static_cast<uint32_t>(graph.request().steps.size()));
    for (uint32_t pool = 0; pool < pools_.size(); ++pool)
      if (need[pool] > pools_[pool].budget)
        return fixedNeed_;
    if (productsInPools)
      *productsInPools = true;
    return need;
  }
  auto rows = graph.peakRows(nodesInFlight_);
  if (!rows.ok())
    return rows.status();
  std::vector<uint32_t> need(pools_.size(), 0);
  for (const CellGraph::RowNeed &row : rows.value())
    need[poolId(row.part, row.isOutput, row.index)] += row.rows;
  for (uint32_t pool = 0; pool < pools_.size(); ++pool)
    if (need[pool] > pools_[pool].budget) // never: not a matter of load
      return Status(StatusCode::OutOfRange,
                    "request " + graph.request().id + " needs " +
                        std::to_string(need[pool]) + " rows of " +
                        std::to_string(pools_[pool].pool->rowBytes()) +
                        "-byte state at once; the pool has " +
                        std::to_string(pools_[pool].budget) +
                        " (raise the pool size)");
  return need;
}

std::vector<uint32_t> EngineWorker::needWithProducts(uint32_t steps) const {
  std::vector<uint32_t> need = productNeed_;
  for (uint32_t pool : productPools_)
    need[pool] += steps;
  return need;
}

void EngineWorker::placeProducts(Entry &entry) const {
  if (!entry.productsMayStayInPools)
    return;
  // Products held in pool rows never keep the batch from filling: the
  // rows left after them must hold the largest batch's worth of requests
  // that read their products through their own step rows. (Those copy a
  // product row a step; the products in pools cost nothing a step.) The
  // check allocates nothing: the need is made again only when it changes.
  auto steps = static_cast<uint32_t>(entry.graph->request().steps.size());
  bool inPools = true;
  for (uint32_t pool : productPools_) {
    uint64_t products = productNeed_[pool] +
                        uint64_t(steps) * std::count(productPools_.begin(),
                                                     productPools_.end(), pool);
    uint64_t kept = uint64_t(fixedNeed_[pool]) * chainLargest_;
    inPools &= pools_[pool].reserved + products + kept <= pools_[pool].budget;
  }
  if (inPools == entry.productsInPools)
    return;
  entry.productsInPools = inPools;
  entry.need = inPools ? needWithProducts(steps) : fixedNeed_;
}

bool EngineWorker::fits(const Entry &entry) const {
  PoolCounts parked = parkedFor(entry);
  for (uint32_t pool = 0; pool < pools_.size(); ++pool)
    if (pools_[pool].reserved - parked[pool] + entry.need[pool] >
        pools_[pool].budget)
      return false;
  return true;
}

bool EngineWorker::fits(const PoolCounts &need) const {
  for (uint32_t pool = 0; pool < pools_.size(); ++pool)
    if (pools_[pool].reserved + need[pool] > pools_[pool].budget)
      return false;
  return true;
}

double EngineWorker::room() const {
  double room = 1;
  for (const PoolState &state : pools_)
    if (state.budget > 0)
      room = std::min(room, double(state.budget - state.reserved) /
                                double(state.budget));
  return room;
}

bool EngineWorker::heldByCap(const Entry &head) const {
  const Request &request = head.graph->request();
  return head.deadline == UINT64_MAX && request.session.id == 0 &&
         !head.cancelled && !(request.cancel && request.cancel->cancelled());
}

bool EngineWorker::takesHead(const Entry &head, bool holdsRequests) const {
  if (head.pinnedWorker >= 0) // headForMe() passed over others' chunks
    return fits(head);
  if (!fits(head.need))
    return false;
  if (!holdsRequests)
    return true; // idle: nothing to wait for here
  // A worker admitting goes on while it has no less room than the others
  // less the slack (a share of its pools): requests start in bunches that
  // fill its tasks, not one each in turn (with two workers on one device
  // and no slack, a task had 5 rows on average where one worker had 340).
  double mine = room() + options_.admissionSlack;
  for (const EngineWorker *other : admission_->workers) {
    if (other == this || other->exited_ || !other->fits(head.need) ||
        (other->heldByCap(head) && other->atRunningCap()))
      continue; // it cannot take the head now
    double theirs = other->room();
    if (theirs > mine || (theirs == mine && other->index_ < index_))
      return false;
  }
  return true;
}

std::deque<std::unique_ptr<EngineWorker::Entry>>::iterator
EngineWorker::headForMe() {
  auto &waiting = admission_->waiting;
  return std::find_if(waiting.begin(), waiting.end(), [&](const auto &entry) {
    return entry->pinnedWorker < 0 ||
           entry->pinnedWorker == static_cast<int32_t>(index_);
  });
}

bool EngineWorker::neverStarts(const Entry &head, bool holdsRequests) const {
  // This worker is the one calling: its own state is read directly.
  if (holdsRequests || !pending_.empty() || fits(head))
    return false;
  if (head.pinnedWorker >= 0)
    return true; // only this worker can run it
  for (const EngineWorker *other : admission_->workers)
    if (other != this && !other->exited_ &&
        (!other->idle_ || other->fits(head.need)))
      return false;
  return true;
}

bool EngineWorker::admit() {
  bool took = takeArrivals();
  // Requests admitted in this call start together, after their projected
  // inputs (if any) are computed in shared tasks.
  struct Starting {
    uint64_t key;
    std::optional<std::string> cancelReason;
  };
  std::vector<Starting> starting;
  // Heads are taken several under one hold of the admission mutex (which
  // submitters take too); a refusal is answered outside it.
  std::vector<std::pair<std::unique_ptr<Entry>, std::optional<std::string>>>
      taken;
  headWaits_ = false;
  while (true) {
    std::unique_ptr<Entry> refused;
    bool more = true;
    taken.clear();
    {
      std::lock_guard<std::mutex> lock(admission_->mutex);
      // The waiting requests' records were made on the submitting threads:
      // the first few asked for at once, then one more for each taken, so
      // their misses overlap instead of coming one after another.
      auto &waiting = admission_->waiting;
      for (size_t i = 0; i < std::min(waiting.size(), kRecordsAhead); ++i)
        prefetchRecords(*waiting[i]);
      while (true) {
        // The first waiting request blocks those behind it until some
        // worker takes it (or it is refused).
        auto head = headForMe();
        if (head == admission_->waiting.end()) {
          more = false;
          break;
        }
        bool holds = !entries_.empty() || !taken.empty();
        // As many running as the cap allows (not those whose every step
        // is bound): the head waits for one to end (a running request
        // always does), refused by nobody here.
        if (heldByCap(**head) &&
            entries_.size() - chainSlotsDone_ + taken.size() >=
                runningCap_.load(std::memory_order_relaxed)) {
          more = false;
          break;
        }
        placeProducts(**head);
        if (takesHead(**head, holds)) {
          std::unique_ptr<Entry> entry = std::move(*head);
          admission_->waiting.erase(head);
          if (waiting.size() >= kRecordsAhead)
            prefetchRecords(*waiting[kRecordsAhead - 1]);
          // A continuing chunk holds its session's state from now on.
          entry->held = parkedFor(*entry);
          for (uint32_t pool = 0; pool < pools_.size(); ++pool)
            pools_[pool].reserved += entry->need[pool] - entry->held[pool];
          idle_ = false;
          entry->admission = admission_->admissions++;
          std::optional<std::string> cancelReason;
          // Cancelled from here on, it is this worker's to end.
          const auto &token = entry->graph->request().cancel;
          if (token) {
            token->worker_ = static_cast<int32_t>(index_);
            if (token->cancelled_)
              cancelReason = token->why_;
          }
          if (entry->cancelled)
            cancelReason = entry->cancelReason;
          taken.emplace_back(std::move(entry), std::move(cancelReason));
          continue;
        }
        if (neverStarts(**head, holds)) {
          refused = std::move(*head);
          admission_->waiting.erase(head);
        } else {
          more = false;
          headWaits_ = true;
        }
        break;
      }
    }
    for (auto &[entry, cancelReason] : taken) {
      took = true;
      Entry &admitted = *entry;
      uint64_t key = admitted.key = entries_.insert(std::move(entry));
      if (const auto &token = admitted.graph->request().cancel)
        token->key_ = key;
      starting.push_back({key, std::move(cancelReason)});
    }
    if (refused) {
      took = true;
      refuse(std::move(refused));
      continue;
    }
    if (!more)
      break;
  }
  std::vector<Entry *> admitted;
  for (const Starting &start : starting) {
    admitted.push_back(entries_.find(start.key));
    prefetchRecords(*admitted.back()); // made on the submitting thread
  }
  for (const Entry *entry : admitted) // its address in the records above
    entry->graph->prefetchPreparedOutputs();
  Status projected = projectInputs(admitted);
  for (Starting &start : starting) {
    startRequest(*entries_.find(start.key), projected);
    // Cancelled while it waited behind its session's chunk, or by
    // cancelAll: it ends now, closing its session.
    if (start.cancelReason && entries_.find(start.key))
      endAsCancelled(start.key, *start.cancelReason);
  }
  if (preparedRoomToGiveBack_ > 0) // the started requests' prepared results
    admission_->resultBudget->held.fetch_sub(
        std::exchange(preparedRoomToGiveBack_, 0));
  publishLoad();
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.running = static_cast<uint32_t>(entries_.size());
  return took;
}

void EngineWorker::refuse(std::unique_ptr<Entry> entry) {
  const Request &request = entry->graph->request();
  std::string tightest;
  size_t sessions = 0;
  std::vector<SessionState::ParkedRow> freed;
  std::deque<std::unique_ptr<Entry>> orphans;
  {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    sessions = admission_->sessions.size();
    for (uint32_t pool = 0; pool < pools_.size(); ++pool)
      if (pools_[pool].reserved + entry->need[pool] > pools_[pool].budget) {
        tightest = std::to_string(entry->need[pool]) + " rows of " +
                   std::to_string(pools_[pool].pool->rowBytes()) +
                   "-byte state beside the " +
                   std::to_string(pools_[pool].reserved) +
                   " rows that open sessions hold (the budget is " +
                   std::to_string(pools_[pool].budget) + " rows)";
        break;
      }
    // Its session closes: the state it parked here goes back.
    if (uint64_t id = request.session.id) {
      auto found = admission_->sessions.find(id);
      if (found != admission_->sessions.end()) {
        if (found->second.worker == static_cast<int32_t>(index_))
          freed = std::move(found->second.parked);
        orphans = admission_->closeSession(found);
      }
    }
  }
  for (const SessionState::ParkedRow &row : freed)
    releaseFor(0, row.pool, row.row);
  RequestResult result;
  result.id = request.id;
  result.status =
      Status(StatusCode::ResourceExhausted,
             "out of memory: request " + request.id + " needs " + tightest +
                 " (" + std::to_string(sessions) +
                 " sessions are open; end sessions, shorten the session "
                 "timeout or raise the memory budget)");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.failed;
  }
  uint64_t session = request.session.id;
  Status cause = result.status;
  if (entry->done)
    entry->done(std::move(result));
  failOrphans(std::move(orphans), session, cause);
}

void EngineWorker::startRequest(Entry &entry, const Status &projected) {
  const Request &request = entry.graph->request();
  uint32_t length = static_cast<uint32_t>(
      request.tree.empty() ? request.steps.size() : request.tree.size());
  policy_->admitted(entry.key, length);
  if (uint64_t session = request.session.id) {
    std::vector<std::pair<uint32_t, int32_t>> state;
    {
      std::lock_guard<std::mutex> lock(admission_->mutex);
      SessionState &open = admission_->sessions.at(session);
      open.worker = static_cast<int32_t>(index_);
      for (const SessionState::ParkedRow &parked : open.parked)
        state.push_back({parked.input, parked.row});
      open.parked.clear();
    }
    entry.graph->continueFrom(std::move(state));
  }
  if (!projected.isOk()) { // its inputs could not be projected
    finishRequest(entry, projected);
    return;
  }
  ready_.clear();
  if (Status started = entry.graph->start(ready_); !started.isOk()) {
    finishRequest(entry, started);
    return;
  }
  preparedRoomToGiveBack_ += entry.graph->takePreparedRoom();
  addReady(entry, ready_);
}

void EngineWorker::finishRequest(Entry &entry, Status status) {
  // An asynchronous executor writes rows into a chain's results when it
  // finishes each task: a request ending before its last task bound has
  // finished (failed, cancelled) keeps its outputs until that round has
  // completed (keptOutputs_).
  uint64_t boundRound =
      entry.chainSlot >= 0 ? chainSlots_.boundRound[entry.chainSlot] : 0;
  leaveChainBatch(entry);
  CellGraph &graph = *entry.graph;
  uint32_t nodes = static_cast<uint32_t>(graph.nodes().size());
  if (graph.isChain())
    releaseChainPinned(entry);
  for (uint32_t node = 0; node < nodes; ++node)
    releasePinned(entry, node);
  if (graph.request().session.id != 0)
    endChunk(entry, status);
  for (uint32_t node = 0; node < nodes; ++node)
    releaseOutputs(entry, node);
  if (graph.isChain()) // both generations (endChunk kept the parked ones)
    releaseChainRows(entry);
  for (auto &[pool, row] : entry.heldRows)
    if (row >= 0) {
      releaseRow(&entry, pool, row);
      row = -1;
    }
  // What tasks in flight still hold stays reserved until they finish.
  if (endsHeld_) { // given back at the end of the round's completions
    for (uint32_t pool = 0; pool < pools_.size(); ++pool)
      heldEnds_.unreserve[pool] += entry.need[pool] - entry.held[pool];
  } else {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    for (uint32_t pool = 0; pool < pools_.size(); ++pool)
      pools_[pool].reserved -= entry.need[pool] - entry.held[pool];
  }
  entry.complete = true;
  RequestResult &result = graph.result();
  result.status = status;
  if (!status.isOk()) {
    if (!directReads_ && boundRound > completedRound_)
      keptOutputs_.emplace_back(boundRound, std::move(result.outputs));
    result.outputs.clear();
    result.stopReason.clear();
  }
  // Delivering may finish others (a graph batch): a list of its own.
  std::vector<uint64_t> returned;
  returned.swap(returned_);
  returned.clear();
  policy_->requestDone(entry.key, returned);
  for (uint64_t key : returned)
    deliver(key);
  returned.swap(returned_);
}

/// The bytes of a request's step data whose steps are alike (every row of
/// the first step, times the steps).
static size_t stepDataBytes(const StepRows &steps) {
  if (steps.empty())
    return 0;
  size_t step = 0;
  for (size_t row = 0; row < steps.rows(0); ++row)
    step += steps.rowSize(0, row);
  return step * steps.size();
}

void EngineWorker::deliver(uint64_t key) {
  std::unique_ptr<Entry> entry = entries_.erase(key);
  if (!entry)
    return;
  CellGraph &graph = *entry->graph;
  RequestResult result = std::move(graph.result());
  // Only the outputs asked for (a chain's graph made no others).
  if (const std::vector<std::string> &wanted = graph.request().outputs;
      !wanted.empty())
    result.outputs.erase(
        std::remove_if(result.outputs.begin(), result.outputs.end(),
                       [&](const OutputTensor &tensor) {
                         return std::find(wanted.begin(), wanted.end(),
                                          tensor.name) == wanted.end();
                       }),
        result.outputs.end());
  Clock::time_point now =
      taskFinishedAt_ != Clock::time_point() ? taskFinishedAt_ : Clock::now();
  size_t running = entries_.size();
  Clock::time_point start = graph.started ? graph.firstStart : now;
  result.queueMicros = microsBetween(graph.arrival, start);
  result.computeMicros = microsBetween(start, now);
  double deadline = graph.request().deadlineMicros;
  result.missedDeadline =
      deadline > 0 && microsBetween(graph.arrival, now) > deadline;
  {
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    EngineStats *stats = &heldEnds_.stats;
    if (!endsHeld_) {
      lock.lock();
      stats = &stats_;
    }
    stats->running = static_cast<uint32_t>(running);
    if (result.status.isOk())
      ++stats->completed;
    else if (result.status.code() == StatusCode::Cancelled)
      ++stats->cancelled;
    else
      ++stats->failed;
    stats->deadlineMisses += result.missedDeadline;
  }
  if (endsHeld_) { // answered once its stats and reservation are given back
    if (entry->done)
      heldEnds_.answers.push_back({std::move(entry->done), std::move(result)});
    if (graph.isChain() && graph.stepsEvenlySpaced() &&
        stepDataBytes(graph.request().steps) <=
            AdmissionQueue::kMaxRetiredBytes)
      heldEnds_.retired.push_back(std::move(entry)); // freed elsewhere
    return;
  }
  if (entry->done)
    entry->done(std::move(result));
}

void EngineWorker::failStuck() {
  // Admitted requests with nothing to run: only a bug gets here. Fail them
  // so that no caller waits forever.
  for (uint64_t key : entries_.keys()) {
    Entry *entry = entries_.find(key);
    if (entry && !entry->complete)
      finishRequest(*entry,
                    Status(StatusCode::Internal,
                           "the batching policy stalled with "
                           "request " +
                               entry->graph->request().id + " unfinished"));
  }
}
