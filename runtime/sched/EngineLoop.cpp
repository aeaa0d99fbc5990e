//===- EngineLoop.cpp - Rounds: binding, running and completing tasks -----===//
//
// A round binds every task the policy plans to pool rows and submits it;
// completing a task reads back what the host needs (copied with the task),
// grows the cell graphs and hands what became ready to the policy.
// Admission and the end of requests are in EngineRequests.cpp.
//
//===----------------------------------------------------------------------===//
#include "EngineImpl.h"

#include <algorithm>
#include <cstring>

using namespace cellrun;

bool EngineWorker::runOnce() {
  if (outOfService_)
    return false;
  expireSessions();
  bool admitted = admit();
  std::vector<PlannedTask> planned = policy_->next();
  std::vector<InFlight> round;
  round.reserve(planned.size());
  // Every task of the round is bound and submitted before one is waited
  // for: on the GPU they run back to back while the host goes on.
  for (PlannedTask &task : planned)
    round.push_back(launch(std::move(task)));
  bool worked = admitted || !round.empty() || !pending_.empty();
  if (overlap_) {
    // Complete the previous round while this one runs.
    std::vector<InFlight> previous = std::move(pending_);
    pending_ = std::move(round);
    for (InFlight &flight : previous)
      complete(flight);
  } else {
    for (InFlight &flight : round)
      complete(flight);
  }
  if (!executor_->lost().isOk()) {
    takeOutOfService(executor_->lost());
    return true;
  }
  if (entries_.empty() && pending_.empty())
    idle_ = true; // set false again under the admission mutex
  return worked;
}

Result<int32_t> EngineWorker::acquireFor(Entry &entry, uint32_t pool) {
  PoolState &state = pools_[pool];
  // Reservations are the engine's (or a custom unfolder's) promise: a
  // request that outgrows its own is a server-side fault, not load.
  if (entry.held[pool] >= entry.need[pool])
    return Status(StatusCode::Internal,
                  "request " + entry.graph->request().id + " needs more than " +
                      std::to_string(entry.need[pool]) + " rows of " +
                      std::to_string(state.pool->rowBytes()) +
                      "-byte state at once, what it reserved" +
                      (parser_->structure().kind == cellpack::Structure::Custom
                           ? " (the unfolder's peakNodes is too small)"
                           : ""));
  auto acquired = state.pool->acquire();
  if (!acquired.ok())
    return Status(StatusCode::Internal, "request " + entry.graph->request().id +
                                            ": " + acquired.status().message());
  ++entry.held[pool];
  return static_cast<int32_t>(acquired.value());
}

void EngineWorker::releaseFor(uint64_t request, uint32_t pool, int32_t row) {
  (void)pools_[pool].pool->release(static_cast<uint32_t>(row));
  auto found = entries_.find(request);
  if (found != entries_.end() && !found->second->complete)
    --found->second->held[pool];
  else {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    --pools_[pool].reserved; // the ended request's rows in flight
  }
}

Status EngineWorker::bindNode(Entry &entry, uint32_t node, uint32_t row,
                              std::vector<std::vector<int32_t>> &inputRows,
                              std::vector<std::vector<int32_t>> &outputRows,
                              InFlight &flight) {
  CellGraph &graph = *entry.graph;
  GraphNode &graphNode = graph.nodes()[node];
  auto &dataRows = flight.dataRows;
  size_t dataBefore = dataRows.size(), writesBefore = flight.io.writes.size();
  std::vector<uint32_t> heldTaken; // held slots this node took first
  // On failure, the rows this node took go back: the node is not bound.
  auto undo = [&](Status status) {
    for (size_t d = dataBefore; d < dataRows.size(); ++d)
      releaseFor(entry.key, dataRows[d].pool, dataRows[d].row);
    for (uint32_t slot : heldTaken) {
      releaseFor(entry.key, entry.heldRows[slot].first,
                 entry.heldRows[slot].second);
      entry.heldRows[slot].second = -1;
    }
    dataRows.resize(dataBefore);
    flight.io.writes.resize(writesBefore);
    releaseOutputs(entry, node);
    return status;
  };
  for (uint32_t i = 0; i < graphNode.inputs.size(); ++i) {
    const NodeSource &source = graphNode.inputs[i];
    uint32_t pool = poolId(graphNode.part, false, i);
    switch (source.kind) {
    case NodeSource::Kind::Zero:
      inputRows[i][row] = pools_[pool].zeroRow;
      break;
    case NodeSource::Kind::Pinned:
      inputRows[i][row] = source.row;
      break;
    case NodeSource::Kind::Data: {
      auto acquired = acquireFor(entry, pool);
      if (!acquired.ok())
        return undo(acquired.status());
      dataRows.push_back({entry.key, pool, acquired.value()});
      // Written with the task (on cuda, in its one host-to-device copy).
      flight.io.writes.push_back({i, row, source.data->data()});
      inputRows[i][row] = acquired.value();
      break;
    }
    case NodeSource::Kind::Held: {
      entry.heldRows.resize(graph.heldRowCount(), {0, -1});
      auto &[heldPool, heldRow] = entry.heldRows.at(source.output);
      if (heldRow < 0) {
        // The first reader writes it with its task; later ones read it.
        auto acquired = acquireFor(entry, pool);
        if (!acquired.ok())
          return undo(acquired.status());
        heldPool = pool;
        heldRow = acquired.value();
        heldTaken.push_back(source.output);
        flight.io.writes.push_back({i, row, source.data->data()});
      }
      inputRows[i][row] = heldRow;
      break;
    }
    case NodeSource::Kind::Output: {
      int32_t produced = graph.nodes()[source.node].outputRows[source.output];
      if (produced < 0)
        return undo(Status(StatusCode::Internal,
                           "node " + std::to_string(node) + " reads node " +
                               std::to_string(source.node) +
                               ", which has no rows"));
      inputRows[i][row] = produced;
      break;
    }
    }
  }
  for (uint32_t o = 0; o < graphNode.outputRows.size(); ++o) {
    auto acquired = acquireFor(entry, poolId(graphNode.part, true, o));
    if (!acquired.ok())
      return undo(acquired.status());
    graphNode.outputRows[o] = acquired.value();
    outputRows[o][row] = acquired.value();
  }
  return Status::ok();
}

/// The rows the host will read when the task has finished, laid out in one
/// buffer the executor fills with the task.
void EngineWorker::planReads(InFlight &flight) {
  const cellpack::CellType &cell =
      *parser_->structure().cells[flight.task.part].cell;
  size_t bytes = 0;
  flight.firstRead.resize(flight.nodes.size() + 1);
  for (uint32_t r = 0; r < flight.nodes.size(); ++r) {
    flight.firstRead[r] = static_cast<uint32_t>(flight.reads.size());
    const CellGraph &graph = *entries_[flight.nodes[r].request]->graph;
    for (uint32_t output : graph.hostReads(flight.nodes[r].node)) {
      flight.reads.push_back({r, output, bytes});
      bytes += tensorRowBytes(*cell.outputs()->Get(output));
    }
  }
  flight.firstRead.back() = static_cast<uint32_t>(flight.reads.size());
  flight.readBuffer.resize(bytes);
  flight.io.reads.reserve(flight.reads.size());
  for (const ReadSlot &slot : flight.reads)
    flight.io.reads.push_back(
        {slot.output, slot.row, flight.readBuffer.data() + slot.offset});
}

EngineWorker::InFlight EngineWorker::launch(PlannedTask task) {
  InFlight flight;
  flight.task = std::move(task);
  const PlannedTask &planned = flight.task;
  const cellpack::CellType &cell =
      *parser_->structure().cells[planned.part].cell;
  uint32_t inputs = cell.inputs() ? cell.inputs()->size() : 0;
  uint32_t outputs = cell.outputs() ? cell.outputs()->size() : 0;
  uint32_t capacity =
      static_cast<uint32_t>(planned.nodes.size()) + planned.padding;
  std::vector<std::vector<int32_t>> inputRows(inputs,
                                              std::vector<int32_t>(capacity)),
      outputRows(outputs, std::vector<int32_t>(capacity));
  flight.submitted = Clock::now();
  // Nodes of requests that ended or are failing are dropped; a node that
  // cannot be bound fails its own request only.
  for (const PlannedNode &node : planned.nodes) {
    auto found = entries_.find(node.request);
    if (found == entries_.end() || found->second->complete ||
        !found->second->failure.isOk())
      continue;
    Entry &entry = *found->second;
    CellGraph &graph = *entry.graph;
    uint32_t row = static_cast<uint32_t>(flight.nodes.size());
    Status bound =
        bindNode(entry, node.node, row, inputRows, outputRows, flight);
    if (!bound.isOk()) {
      entry.failure = bound;
      continue;
    }
    if (!graph.started) {
      graph.started = true;
      graph.firstStart = flight.submitted;
    }
    flight.nodes.push_back(node);
  }
  if (flight.nodes.empty())
    return flight;
  // Padding rows read zeros and write scratch rows.
  uint32_t rows = static_cast<uint32_t>(flight.nodes.size()) + planned.padding;
  std::vector<uint32_t> scratchUsed(pools_.size(), 0);
  for (uint32_t r = static_cast<uint32_t>(flight.nodes.size()); r < rows; ++r) {
    for (uint32_t i = 0; i < inputs; ++i)
      inputRows[i][r] = pools_[poolId(planned.part, false, i)].zeroRow;
    for (uint32_t o = 0; o < outputs; ++o) {
      uint32_t pool = poolId(planned.part, true, o);
      outputRows[o][r] = pools_[pool].scratchRows.at(scratchUsed[pool]++);
    }
  }
  for (auto &taskRows : inputRows)
    taskRows.resize(rows);
  for (auto &taskRows : outputRows)
    taskRows.resize(rows);
  planReads(flight);
  auto ticket = executor_->submit(cell, rows, inputRows, outputRows,
                                  &flight.batchSize, flight.io);
  if (ticket.ok())
    flight.ticket = ticket.value();
  else
    flight.status = ticket.status();
  return flight;
}

void EngineWorker::complete(InFlight &flight) {
  const PlannedTask &task = flight.task;
  if (!flight.nodes.empty() && flight.status.isOk())
    flight.status = executor_->wait(flight.ticket);
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
  if (!flight.status.isOk()) {
    for (const PlannedNode &node : flight.nodes) {
      auto found = entries_.find(node.request);
      if (found != entries_.end() && !found->second->complete)
        finishRequest(*found->second, flight.status);
    }
  } else if (!flight.nodes.empty()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      CellTypeStats &cellStats = stats_.cells[task.part];
      ++cellStats.tasks;
      cellStats.nodes += flight.nodes.size();
      cellStats.paddingRows += task.padding;
      cellStats.batchSizeSum += flight.batchSize;
    }
    for (uint32_t r = 0; r < flight.nodes.size(); ++r) {
      const PlannedNode &node = flight.nodes[r];
      auto found = entries_.find(node.request);
      if (found != entries_.end() && !found->second->complete &&
          found->second->failure.isOk())
        afterNode(*found->second, node.node, flight, r);
    }
  }
  // Requests that could not bind a node fail now that no task of this
  // round holds their rows any more.
  for (const PlannedNode &node : task.nodes) {
    auto found = entries_.find(node.request);
    if (found != entries_.end() && !found->second->complete &&
        !found->second->failure.isOk())
      finishRequest(*found->second, found->second->failure);
  }
  policy_->finished(task);
  if (options_.onTask && !flight.nodes.empty())
    options_.onTask(record);
}

void EngineWorker::afterNode(Entry &entry, uint32_t node,
                             const InFlight &flight, uint32_t row) {
  CellGraph &graph = *entry.graph;
  // What the task copied back, else (a custom unfolder reading another
  // node) a read of the row itself.
  auto reader = [&](uint32_t producer, uint32_t output, void *bytes) {
    const GraphNode &graphNode = graph.nodes()[producer];
    if (producer == node)
      for (uint32_t k = flight.firstRead[row]; k < flight.firstRead[row + 1];
           ++k)
        if (const ReadSlot &slot = flight.reads[k]; slot.output == output) {
          std::memcpy(bytes, flight.readBuffer.data() + slot.offset,
                      poolOf(graphNode.part, true, output).rowBytes());
          return Status::ok();
        }
    return executor_->readRow(poolOf(graphNode.part, true, output),
                              graphNode.outputRows[output], bytes);
  };
  auto ready = graph.nodeDone(node, reader);
  if (!ready.ok()) {
    finishRequest(entry, ready.status());
    return;
  }
  // The node has read its inputs: producers with no reader left free rows,
  // and so does a session's state it started from.
  releasePinned(entry, graph.nodes()[node]);
  for (const NodeSource &source : graph.nodes()[node].inputs)
    if (source.kind == NodeSource::Kind::Output) {
      GraphNode &producer = graph.nodes()[source.node];
      if (--producer.consumers == 0 && producer.done)
        releaseOutputs(entry, source.node);
    }
  if (graph.nodes()[node].consumers == 0)
    releaseOutputs(entry, node);
  addReady(entry, std::move(ready).value());
}

/// Hands what became ready to the policy; finishes the request when it is
/// complete, or fails it when nothing of it is left to run (a custom
/// unfolder that neither added nodes nor finished).
void EngineWorker::addReady(Entry &entry, std::vector<ReadySubgraph> ready) {
  CellGraph &graph = *entry.graph;
  if (graph.finished()) {
    finishRequest(entry, Status::ok());
    return;
  }
  for (ReadySubgraph &subgraph : ready)
    if (Status added =
            policy_->add(entry.key, std::move(subgraph), graph.deadline());
        !added.isOk()) {
      finishRequest(entry, added);
      return;
    }
  if (graph.outstanding() == 0)
    finishRequest(entry,
                  Status(StatusCode::InvalidArgument,
                         "request " + graph.request().id +
                             ": the unfolder left nothing to run and did "
                             "not finish the request"));
}

void EngineWorker::releaseOutputs(Entry &entry, uint32_t node) {
  GraphNode &graphNode = entry.graph->nodes()[node];
  for (uint32_t o = 0; o < graphNode.outputRows.size(); ++o)
    if (graphNode.outputRows[o] >= 0) {
      releaseFor(entry.key, poolId(graphNode.part, true, o),
                 graphNode.outputRows[o]);
      graphNode.outputRows[o] = -1;
    }
}
