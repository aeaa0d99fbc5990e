//===- EngineLoop.cpp - Rounds: binding, running and completing tasks -----===//
//
// A round binds every task the policy plans to pool rows and submits it;
// completing a task reads back what the host needs (copied with the task),
// grows the cell graphs and hands what became ready to the policy.
// Binding a node to pool rows is in EngineBinding.cpp, admission and the
// end of requests in EngineRequests.cpp.
//
//===----------------------------------------------------------------------===//
#include "engine/EngineImpl.h"

#include <algorithm>
#include <cstring>

using namespace cellrun;

bool EngineWorker::runOnce() {
  if (outOfService_)
    return false;
  Clock::time_point begin = Clock::now();
  executorTime_ = {};
  ++roundNumber_;
  expireSessions();
  moveRequests();
  bool admitted = admit();
  endCancelled();
  std::vector<PlannedTask> planned = policy_->next();
  // The round's flights in a vector kept from round to round (its array
  // is several KB: allocating it anew every round showed in profiles).
  std::vector<InFlight> round = std::move(spareRound_); // empty
  round.reserve(planned.size());
  // Every task of the round is bound and submitted before one is waited
  // for: on the GPU they run back to back while the host goes on.
  for (PlannedTask &task : planned)
    round.push_back(launch(std::move(task)));
  if (chainBatch_)
    launchChainTasks(round);
  bool worked = admitted || !round.empty() || !pending_.empty();
  if (overlap_) {
    // Complete the previous round while this one runs.
    std::vector<InFlight> previous = std::move(pending_);
    pending_ = std::move(round);
    completeAll(previous);
    spareRound_ = std::move(previous);
  } else {
    completeAll(round);
    spareRound_ = std::move(round);
  }
  spareRound_.clear(); // flights recycle() did not keep go now, not later
  if (!executor_->lost().isOk()) {
    takeOutOfService(executor_->lost());
    return true;
  }
  publishLoad();
  if (entries_.empty() && pending_.empty())
    idle_ = true; // set false again under the admission mutex
  if (worked) {
    using Seconds = std::chrono::duration<double>;
    Clock::duration round = Clock::now() - begin;
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.roundSeconds += Seconds(round).count();
    stats_.executorSeconds += Seconds(executorTime_).count();
    Executor::Times times = executor_->times();
    stats_.executorBlockedSeconds = times.blockedSeconds;
    stats_.executorDeliverSeconds = times.deliverSeconds;
    stats_.executorDeliveredRows = times.deliveredRows;
    stats_.executorDeviceWrittenRows = times.deviceWrittenRows;
    stats_.executorPlanGraphLaunches = times.planGraphLaunches;
    stats_.executorPlanGraphCaptures = times.planGraphCaptures;
    stats_.executorPlanFirstRuns = times.planFirstRuns;
    stats_.executorPlansLaunchedDirectly = times.plansLaunchedDirectly;
    stats_.executorDeviceSeconds = times.deviceSeconds;
    stats_.executorDeviceTimedTasks = times.deviceTimedTasks;
  }
  return worked;
}

void EngineWorker::completeAll(std::vector<InFlight> &flights) {
  // The requests that end here give their reservations back, and count in
  // the stats, under one hold of each mutex, not one per request; they are
  // answered after that.
  endsHeld_ = true;
  heldEnds_.unreserve.resize(pools_.size());
  // The round counts as completed once all its flights are: a request
  // failing in one of them keeps its outputs while the round's later tasks
  // may still write rows into them when they are waited for.
  uint64_t round = completedRound_;
  for (InFlight &flight : flights) {
    complete(flight);
    round = std::max(round, flight.round);
  }
  completedRound_ = round;
  endsHeld_ = false;
  releaseHeldEnds();
  // Outputs of ended requests no task in flight writes into any more.
  if (!keptOutputs_.empty())
    keptOutputs_.erase(std::remove_if(keptOutputs_.begin(), keptOutputs_.end(),
                                      [&](const auto &kept) {
                                        return kept.first <= completedRound_;
                                      }),
                       keptOutputs_.end());
  for (InFlight &flight : flights)
    recycle(std::move(flight));
}

void EngineWorker::releaseHeldEnds() {
  bool any = !heldEnds_.retired.empty();
  for (uint32_t pool = 0; pool < heldEnds_.unreserve.size(); ++pool)
    any |= heldEnds_.unreserve[pool] > 0;
  if (any) {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    for (uint32_t pool = 0; pool < heldEnds_.unreserve.size(); ++pool) {
      pools_[pool].reserved -= heldEnds_.unreserve[pool];
      heldEnds_.unreserve[pool] = 0;
    }
    // The entries (their answers moved out) go to the submitting threads
    // to free, as many as there is room for.
    std::vector<std::unique_ptr<Entry>> &retired = admission_->retired;
    for (std::unique_ptr<Entry> &entry : heldEnds_.retired) {
      if (retired.size() >= AdmissionQueue::kMaxRetired)
        break;
      retired.push_back(std::move(entry));
    }
  }
  heldEnds_.retired.clear(); // those past the room are freed here
  EngineStats &ended = heldEnds_.stats;
  if (ended.completed + ended.failed + ended.cancelled > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.running = static_cast<uint32_t>(entries_.size());
    stats_.completed += ended.completed;
    stats_.failed += ended.failed;
    stats_.cancelled += ended.cancelled;
    stats_.deadlineMisses += ended.deadlineMisses;
    ended = EngineStats();
  }
  for (auto &[done, result] : heldEnds_.answers)
    done(std::move(result));
  heldEnds_.answers.clear();
}

EngineWorker::InFlight EngineWorker::takeFlight(bool sized) {
  if (spareFlights_.empty())
    return InFlight();
  InFlight flight = std::move(spareFlights_.back());
  spareFlights_.pop_back();
  if (!sized) {
    flight.nodes.clear();
    flight.io.writes.clear();
    flight.io.reads.clear();
    // A chain task's columns (launchChainTask), kept for the next one.
    resizeColumns(flight.io.writeColumns, spareWriteColumns_, 0);
    resizeColumns(flight.io.readColumns, spareReadColumns_, 0);
  }
  return flight;
}

void EngineWorker::recycle(InFlight &&flight) {
  if (spareFlights_.size() >= 4 * std::max(1u, options_.maxTasksToSubmit))
    return;
  flight.task = PlannedTask();
  flight.ticket = 0;
  flight.batchSize = 0;
  flight.dataRows.clear();
  flight.io.places.clear();
  flight.reads.clear();
  flight.firstRead.clear();
  flight.readBuffer.clear();
  flight.status = Status::ok();
  flight.chainBatch = false;
  flight.chainEvents.clear();
  spareFlights_.push_back(std::move(flight));
}

EngineWorker::InFlight EngineWorker::launch(PlannedTask task) {
  InFlight flight = takeFlight();
  flight.round = roundNumber_;
  flight.task = std::move(task);
  const PlannedTask &planned = flight.task;
  const CellRoles &roles = parser_->structure().cells[planned.part];
  sizeTaskRows(flight, roles,
               static_cast<uint32_t>(planned.nodes.size()) + planned.padding);
  flight.nodes.reserve(planned.nodes.size());
  flight.submitted = Clock::now();
  bindPlannedNodes(flight);
  if (flight.nodes.empty())
    return flight;
  submitBound(flight, roles);
  return flight;
}

void EngineWorker::submitBound(InFlight &flight, const CellRoles &roles) {
  const PlannedTask &planned = flight.task;
  uint32_t bound = static_cast<uint32_t>(flight.nodes.size());
  flight.firstRead[bound] = static_cast<uint32_t>(flight.reads.size());
  for (const ReadSlot &slot : flight.reads)
    flight.io.reads.push_back(
        {slot.output, slot.row, flight.readBuffer.data() + slot.offset});
  uint32_t rows = bound + planned.padding;
  if (planned.padding > 0)
    bindPaddingRows(flight, roles, bound, rows);
  for (auto &taskRows : flight.inputRows)
    taskRows.resize(rows);
  for (auto &taskRows : flight.outputRows)
    taskRows.resize(rows);
  Clock::time_point before = Clock::now();
  auto ticket =
      executor_->submit(*roles.cell, rows, flight.inputRows, flight.outputRows,
                        &flight.batchSize, flight.io);
  executorTime_ += Clock::now() - before;
  // The rows this task's nodes were the last to read serve later tasks.
  for (const DeferredRow &deferred : deferredRows_)
    releaseFor(deferred.request, deferred.pool, deferred.row);
  deferredRows_.clear();
  if (ticket.ok())
    flight.ticket = ticket.value();
  else
    flight.status = ticket.status();
}

void EngineWorker::sizeTaskRows(InFlight &flight, const CellRoles &roles,
                                uint32_t capacity) {
  flight.inputRows.resize(roles.inputCount);
  flight.outputRows.resize(roles.outputCount);
  flight.inputRowData.clear();
  flight.outputRowData.clear();
  for (auto &taskRows : flight.inputRows) {
    taskRows.resize(capacity);
    flight.inputRowData.push_back(taskRows.data());
  }
  for (auto &taskRows : flight.outputRows) {
    taskRows.resize(capacity);
    flight.outputRowData.push_back(taskRows.data());
  }
  flight.firstRead.resize(capacity + 1);
}

void EngineWorker::bindPlannedNodes(InFlight &flight) {
  // Nodes of requests that ended or are failing are dropped; a node that
  // cannot be bound fails its own request only.
  for (const PlannedNode &node : flight.task.nodes) {
    Entry *entry = entries_.find(node.request);
    if (!entry || entry->complete || !entry->failure.isOk())
      continue;
    CellGraph &graph = *entry->graph;
    uint32_t row = static_cast<uint32_t>(flight.nodes.size());
    if (graph.isChain()) {
      Status error;
      if (!bindChainNode(*entry, node.node, row, flight, &error)) {
        entry->failure = std::move(error);
        continue;
      }
    } else if (Status bound = bindNode(*entry, node.node, row, flight);
               !bound.isOk()) {
      entry->failure = bound;
      continue;
    }
    if (!graph.started) {
      graph.started = true;
      graph.firstStart = flight.submitted;
    }
    if (!graph.isChain()) // a chain's reads are planned as it is bound
      planReads(*entry, node.node, row, graph.hostReads(node.node), flight);
    flight.nodes.push_back(node);
  }
}

void EngineWorker::bindPaddingRows(InFlight &flight, const CellRoles &roles,
                                   uint32_t bound, uint32_t rows) {
  // Padding rows read zeros and write scratch rows.
  const PartPools &pools = partPools_[flight.task.part];
  std::vector<uint32_t> scratchUsed(pools_.size(), 0);
  for (uint32_t r = bound; r < rows; ++r) {
    for (uint32_t i = 0; i < roles.inputCount; ++i)
      flight.inputRows[i][r] = pools_[pools.inputs[i]].zeroRow;
    for (uint32_t o = 0; o < roles.outputCount; ++o) {
      uint32_t pool = pools.outputs[o];
      flight.outputRows[o][r] =
          pools_[pool].scratchRows.at(scratchUsed[pool]++);
    }
  }
}

void EngineWorker::complete(InFlight &flight) {
  const PlannedTask &task = flight.task;
  if (!flight.nodes.empty() && flight.status.isOk()) {
    Clock::time_point before = Clock::now();
    flight.status = executor_->wait(flight.ticket);
    executorTime_ += Clock::now() - before;
  }
  // The task that lost the device fails like the rest of this worker's.
  if (!flight.status.isOk() && !executor_->lost().isOk() &&
      flight.status.message() == executor_->lost().message())
    flight.status = stoppedBy(flight.status);
  for (const DataRow &data : flight.dataRows)
    releaseFor(data.request, data.pool, data.row);
  TaskRecord record;
  record.worker = index_;
  record.cellType = task.part;
  record.nodes = static_cast<uint32_t>(flight.nodes.size());
  record.paddingRows = task.padding;
  record.batchSize = flight.batchSize;
  record.failed = !flight.status.isOk();
  record.submitted = flight.submitted;
  record.finished = Clock::now();
  taskFinishedAt_ = record.finished;
  if (!flight.status.isOk()) {
    for (const PlannedNode &node : flight.nodes)
      if (Entry *entry = entries_.find(node.request); entry && !entry->complete)
        finishRequest(*entry, flight.status);
  } else if (!flight.nodes.empty()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      CellTypeStats &cellStats = stats_.cells[task.part];
      ++cellStats.tasks;
      cellStats.nodes += flight.nodes.size();
      cellStats.paddingRows += task.padding;
      cellStats.batchSizeSum += flight.batchSize;
      stats_.chainBatchTasks += flight.chainBatch;
    }
    if (flight.chainBatch) // its steps are counted by the batch
      completeChainRows(flight);
    else
      completeNodes(flight);
  }
  // Requests that could not bind a node fail now that no task of this
  // round holds their rows any more.
  for (const PlannedNode &node : task.nodes)
    if (Entry *entry = entries_.find(node.request);
        entry && !entry->complete && !entry->failure.isOk())
      finishRequest(*entry, entry->failure);
  taskFinishedAt_ = Clock::time_point();
  if (!flight.chainBatch) // the batch's tasks are not the policy's
    policy_->finished(task);
  if (options_.onTask && !flight.nodes.empty())
    options_.onTask(record);
}

/// The graphs of a scheduled task's nodes grow: what became ready goes to
/// the policy, finished requests end.
void EngineWorker::completeNodes(InFlight &flight) {
  for (uint32_t r = 0; r < flight.nodes.size(); ++r) {
    const PlannedNode &node = flight.nodes[r];
    Entry *entry = entries_.find(node.request);
    if (!entry || entry->complete || !entry->failure.isOk())
      continue;
    CellGraph &graph = *entry->graph;
    if (!graph.isChain())
      afterNode(*entry, node.node, flight, r);
    else if (graph.stepNeedsNothing(node.node))
      graph.countStepDone(); // most steps of a chain
    else
      chainAfterNode(*entry, node.node, flight, r);
  }
}

void EngineWorker::afterNode(Entry &entry, uint32_t node,
                             const InFlight &flight, uint32_t row) {
  CellGraph &graph = *entry.graph;
  // What the task copied back, else (a custom unfolder reading another
  // node) a read of the row itself.
  auto reader = [&](uint32_t producer, uint32_t output, void *bytes) {
    size_t rowBytes = graph.roles(producer).outputRowBytes[output];
    if (producer == node)
      for (uint32_t k = flight.firstRead[row]; k < flight.firstRead[row + 1];
           ++k)
        if (const ReadSlot &slot = flight.reads[k]; slot.output == output) {
          std::memcpy(bytes, flight.readBuffer.data() + slot.offset, rowBytes);
          return Status::ok();
        }
    uint32_t part = graph.nodes()[producer].part;
    return executor_->readRow(poolOf(part, true, output),
                              graph.outputRows(producer)[output], bytes);
  };
  ready_.clear();
  if (Status done = graph.nodeDone(node, reader, ready_); !done.isOk()) {
    finishRequest(entry, done);
    return;
  }
  // The node has read its inputs: producers with no reader left free rows,
  // and so does a session's state it started from.
  releasePinned(entry, node);
  for (const NodeSource &source : graph.inputs(node))
    if (source.kind == NodeSource::Kind::Output) {
      GraphNode &producer = graph.nodes()[source.node];
      if (--producer.consumers == 0 && producer.done)
        releaseOutputs(entry, source.node);
    }
  if (graph.nodes()[node].consumers == 0)
    releaseOutputs(entry, node);
  if (graph.finished() || !ready_.empty() || graph.outstanding() == 0)
    addReady(entry, ready_);
}

/// Hands what became ready to the policy; finishes the request when it is
/// complete, or fails it when nothing of it is left to run (a custom
/// unfolder that neither added nodes nor finished).
void EngineWorker::addReady(Entry &entry, std::vector<ReadySubgraph> &ready) {
  CellGraph &graph = *entry.graph;
  if (graph.finished()) {
    finishRequest(entry, Status::ok());
    return;
  }
  if (!handToPolicy(entry, ready))
    return;
  if (graph.outstanding() == 0)
    finishRequest(entry,
                  Status(StatusCode::InvalidArgument,
                         "request " + graph.request().id +
                             ": the unfolder left nothing to run and did "
                             "not finish the request"));
}

bool EngineWorker::handToPolicy(Entry &entry,
                                std::vector<ReadySubgraph> &subgraphs) {
  for (ReadySubgraph &subgraph : subgraphs)
    if (chainBatchTakes(entry, subgraph)) {
      if (Status joined = joinChainBatch(entry, subgraph); !joined.isOk()) {
        finishRequest(entry, joined);
        return false;
      }
    } else if (entry.productsInPools) {
      // Its products are in pool rows only the chain batch reads.
      finishRequest(entry, Status(StatusCode::Internal,
                                  "request " + entry.graph->request().id +
                                      ": its projected inputs wait in pool "
                                      "rows, but its steps cannot run in the "
                                      "chain batch"));
      return false;
    } else if (Status added =
                   policy_->add(entry.key, std::move(subgraph), entry.deadline);
               !added.isOk()) {
      finishRequest(entry, added);
      return false;
    }
  return true;
}

void EngineWorker::releaseOutputs(Entry &entry, uint32_t node) {
  CellGraph &graph = *entry.graph;
  const PartPools &pools = partPools_[graph.nodes()[node].part];
  Span<int32_t> rows = graph.outputRows(node);
  for (uint32_t o = 0; o < rows.size(); ++o)
    if (rows[o] >= 0) {
      releaseRow(&entry, pools.outputs[o], rows[o]);
      rows[o] = -1;
    }
}
