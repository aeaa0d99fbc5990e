//===- EngineLoop.cpp - Admission, task binding and request completion ----===//
#include "EngineImpl.h"

#include <algorithm>

using namespace cellrun;

static double microsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

/// The request's deadline in steady-clock microseconds, or UINT64_MAX.
static uint64_t deadlineOf(const CellGraph &graph) {
  double micros = graph.request().deadlineMicros;
  if (micros <= 0)
    return UINT64_MAX;
  auto due =
      graph.arrival + std::chrono::microseconds(static_cast<int64_t>(micros));
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(
          due.time_since_epoch())
          .count());
}

bool EngineWorker::runOnce() {
  admit();
  std::vector<PlannedTask> tasks = policy_->next();
  if (tasks.empty())
    return false;
  // Every task of the round is bound and submitted before the first is
  // waited for: on the GPU they run back to back while the host goes on.
  // Rows released while completing are reused only in the next round.
  std::vector<InFlight> flights;
  flights.reserve(tasks.size());
  for (PlannedTask &task : tasks)
    flights.push_back(launch(task));
  for (size_t t = 0; t < tasks.size(); ++t)
    complete(tasks[t], flights[t]);
  return true;
}

Status EngineWorker::reserveFor(Entry &entry, bool &fits) {
  std::map<SlotPool *, uint32_t> need;
  uint32_t inFlight =
      options_.policy == Policy::Cellular ? options_.maxTasksToSubmit : 1;
  for (const CellGraph::RowNeed &rows : entry.graph->peakRows(inFlight))
    need[&poolOf(rows.part, rows.isOutput, rows.index)] += rows.rows;
  fits = true;
  for (auto [pool, rows] : need) {
    if (rows > budget_[pool])
      return Status(StatusCode::ResourceExhausted,
                    "request " + entry.graph->request().id + " needs " +
                        std::to_string(rows) + " rows of " +
                        std::to_string(pool->rowBytes()) +
                        "-byte state at once; the pool has " +
                        std::to_string(budget_[pool]) +
                        " (raise the pool size)");
    fits &= reserved_[pool] + rows <= budget_[pool];
  }
  if (!fits)
    return Status::ok();
  for (auto [pool, rows] : need) {
    reserved_[pool] += rows;
    entry.reservation.push_back({pool, rows});
  }
  return Status::ok();
}

void EngineWorker::admit() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!inbox_.empty()) {
      std::unique_ptr<Entry> entry = std::move(inbox_.front());
      inbox_.pop_front();
      uint64_t key = entry->key;
      entries_[key] = std::move(entry);
      waiting_.push_back(key);
    }
  }
  // Earliest deadline first among waiting requests that have one, then
  // arrival order; the first that does not fit blocks the others (no
  // starvation of large requests).
  std::stable_sort(
      waiting_.begin(), waiting_.end(), [&](uint64_t a, uint64_t b) {
        auto deadline = [&](uint64_t key) {
          const CellGraph &graph = *entries_[key]->graph;
          double micros = graph.request().deadlineMicros;
          return micros > 0 ? graph.arrival + std::chrono::microseconds(
                                                  static_cast<int64_t>(micros))
                            : Clock::time_point::max();
        };
        return deadline(a) < deadline(b);
      });
  while (!waiting_.empty()) {
    Entry &entry = *entries_[waiting_.front()];
    bool fits = false;
    Status status = reserveFor(entry, fits);
    if (status.isOk() && !fits)
      break;
    waiting_.pop_front();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --queued_;
    }
    if (!status.isOk()) {
      finishRequest(entry, status);
      continue;
    }
    entry.admitted = true;
    const Request &request = entry.graph->request();
    uint32_t length = static_cast<uint32_t>(
        request.tree.empty() ? request.steps.size() : request.tree.size());
    policy_->admitted(entry.key, length);
    auto chains = entry.graph->start();
    if (!chains.ok()) {
      finishRequest(entry, chains.status());
      continue;
    }
    for (const ReadyChain &chain : chains.value())
      policy_->addChain(entry.key, chain, deadlineOf(*entry.graph));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.running = static_cast<uint32_t>(entries_.size() - waiting_.size());
}

Status
EngineWorker::bindNode(CellGraph &graph, uint32_t node, uint32_t row,
                       std::vector<std::vector<int32_t>> &inputRows,
                       std::vector<std::vector<int32_t>> &outputRows,
                       std::vector<std::pair<SlotPool *, int32_t>> &dataRows) {
  GraphNode &graphNode = graph.nodes()[node];
  for (uint32_t i = 0; i < graphNode.inputs.size(); ++i) {
    const NodeSource &source = graphNode.inputs[i];
    SlotPool &pool = poolOf(graphNode.part, false, i);
    switch (source.kind) {
    case NodeSource::Kind::Zero:
      inputRows[i][row] = zeroRows_[&pool];
      break;
    case NodeSource::Kind::Data: {
      auto acquired = pool.acquire();
      if (!acquired.ok())
        return acquired.status();
      int32_t slot = static_cast<int32_t>(acquired.value());
      dataRows.push_back({&pool, slot});
      if (Status status = executor_->writeRow(pool, slot, source.data->data());
          !status.isOk())
        return status;
      inputRows[i][row] = slot;
      break;
    }
    case NodeSource::Kind::Output:
      inputRows[i][row] = graph.nodes()[source.node].outputRows[source.output];
      break;
    }
  }
  for (uint32_t o = 0; o < graphNode.outputRows.size(); ++o) {
    auto acquired = poolOf(graphNode.part, true, o).acquire();
    if (!acquired.ok())
      return acquired.status();
    graphNode.outputRows[o] = static_cast<int32_t>(acquired.value());
    outputRows[o][row] = graphNode.outputRows[o];
  }
  return Status::ok();
}

EngineWorker::InFlight EngineWorker::launch(PlannedTask &task) {
  InFlight flight;
  const cellpack::CellType &cell = *parser_->structure().cells[task.part].cell;
  // Nodes of requests that failed meanwhile are dropped.
  for (const PlannedNode &node : task.nodes) {
    auto found = entries_.find(node.request);
    if (found != entries_.end() && !found->second->graph->failed &&
        !found->second->complete)
      flight.nodes.push_back(node);
  }
  if (flight.nodes.empty())
    return flight;
  uint32_t rows = static_cast<uint32_t>(flight.nodes.size()) + task.padding;
  uint32_t inputs = cell.inputs() ? cell.inputs()->size() : 0;
  uint32_t outputs = cell.outputs() ? cell.outputs()->size() : 0;
  std::vector<std::vector<int32_t>> inputRows(inputs,
                                              std::vector<int32_t>(rows)),
      outputRows(outputs, std::vector<int32_t>(rows));
  Clock::time_point now = Clock::now();
  for (uint32_t r = 0; r < flight.nodes.size() && flight.status.isOk(); ++r) {
    CellGraph &graph = *entries_[flight.nodes[r].request]->graph;
    if (!graph.started) {
      graph.started = true;
      graph.firstStart = now;
    }
    flight.status = bindNode(graph, flight.nodes[r].node, r, inputRows,
                             outputRows, flight.dataRows);
  }
  // Padding rows read zeros and write scratch rows.
  std::map<SlotPool *, size_t> scratchUsed;
  for (uint32_t r = static_cast<uint32_t>(flight.nodes.size()); r < rows; ++r) {
    for (uint32_t i = 0; i < inputs; ++i)
      inputRows[i][r] = zeroRows_[&poolOf(task.part, false, i)];
    for (uint32_t o = 0; o < outputs; ++o) {
      SlotPool *pool = &poolOf(task.part, true, o);
      outputRows[o][r] = scratchRows_[pool].at(scratchUsed[pool]++);
    }
  }
  if (flight.status.isOk()) {
    auto ticket =
        executor_->submit(cell, rows, inputRows, outputRows, &flight.batchSize);
    if (ticket.ok())
      flight.ticket = ticket.value();
    else
      flight.status = ticket.status();
  }
  return flight;
}

void EngineWorker::complete(PlannedTask &task, InFlight &flight) {
  if (flight.nodes.empty()) {
    policy_->finished(task);
    return;
  }
  if (flight.status.isOk())
    flight.status = executor_->wait(flight.ticket);
  for (auto [pool, row] : flight.dataRows)
    (void)pool->release(row);
  if (!flight.status.isOk()) {
    for (const PlannedNode &node : flight.nodes)
      if (entries_.count(node.request) && !entries_[node.request]->complete)
        finishRequest(*entries_[node.request], flight.status);
    policy_->finished(task);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    CellTypeStats &cellStats = stats_.cells[task.part];
    ++cellStats.tasks;
    cellStats.nodes += flight.nodes.size();
    cellStats.paddingRows += task.padding;
    cellStats.batchSizeSum += flight.batchSize;
  }
  for (const PlannedNode &node : flight.nodes) {
    auto found = entries_.find(node.request);
    if (found != entries_.end() && !found->second->complete)
      afterNode(*found->second, node.node);
  }
  policy_->finished(task);
}

void EngineWorker::afterNode(Entry &entry, uint32_t node) {
  CellGraph &graph = *entry.graph;
  auto reader = [&](uint32_t producer, uint32_t output, void *bytes) {
    const GraphNode &graphNode = graph.nodes()[producer];
    return executor_->readRow(poolOf(graphNode.part, true, output),
                              graphNode.outputRows[output], bytes);
  };
  auto ready = graph.nodeDone(node, reader);
  if (!ready.ok()) {
    finishRequest(entry, ready.status());
    return;
  }
  // The node has read its inputs: producers with no reader left free rows.
  for (const NodeSource &source : graph.nodes()[node].inputs)
    if (source.kind == NodeSource::Kind::Output) {
      GraphNode &producer = graph.nodes()[source.node];
      if (--producer.consumers == 0 && producer.done)
        releaseOutputs(graph, source.node);
    }
  if (graph.nodes()[node].consumers == 0)
    releaseOutputs(graph, node);
  for (const ReadyChain &chain : ready.value())
    policy_->addChain(entry.key, chain, deadlineOf(graph));
  if (graph.finished())
    finishRequest(entry, Status::ok());
}

void EngineWorker::releaseOutputs(CellGraph &graph, uint32_t node) {
  GraphNode &graphNode = graph.nodes()[node];
  for (uint32_t o = 0; o < graphNode.outputRows.size(); ++o)
    if (graphNode.outputRows[o] >= 0) {
      (void)poolOf(graphNode.part, true, o).release(graphNode.outputRows[o]);
      graphNode.outputRows[o] = -1;
    }
}

void EngineWorker::finishRequest(Entry &entry, Status status) {
  CellGraph &graph = *entry.graph;
  graph.failed = !status.isOk();
  for (uint32_t n = 0; n < graph.nodes().size(); ++n)
    releaseOutputs(graph, n);
  for (auto [pool, rows] : entry.reservation)
    reserved_[pool] -= rows;
  entry.reservation.clear();
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
