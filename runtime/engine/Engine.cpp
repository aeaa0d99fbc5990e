//===- Engine.cpp - Serving requests with cellular batching ---------------===//
//
// Construction, submission from any thread, the worker thread and the
// public wrappers. The loop itself is in EngineLoop.cpp.
//
//===----------------------------------------------------------------------===//
#include "engine/EngineImpl.h"

#include <algorithm>
#include <thread>

using namespace cellrun;

Result<Policy> cellrun::parsePolicy(std::string_view text) {
  if (text == "cellular")
    return Policy::Cellular;
  if (text == "padded")
    return Policy::Padded;
  if (text == "graph")
    return Policy::Graph;
  return Status(StatusCode::InvalidArgument,
                "unknown policy '" + std::string(text) +
                    "' (choose cellular, padded or graph)");
}

const char *cellrun::policyName(Policy policy) {
  switch (policy) {
  case Policy::Cellular:
    return "cellular";
  case Policy::Padded:
    return "padded";
  case Policy::Graph:
    return "graph";
  }
  return "?";
}

Result<EngineOptions::ChainOrder>
cellrun::parseChainOrder(std::string_view text) {
  if (text == "turns")
    return EngineOptions::ChainOrder::Turns;
  if (text == "longest-first")
    return EngineOptions::ChainOrder::LongestFirst;
  return Status(StatusCode::InvalidArgument,
                "unknown chain order '" + std::string(text) +
                    "' (choose turns or longest-first)");
}

const char *cellrun::chainOrderName(EngineOptions::ChainOrder order) {
  return order == EngineOptions::ChainOrder::LongestFirst ? "longest-first"
                                                          : "turns";
}

bool EngineWorker::drain() {
  bool progressed = false;
  while (true) {
    if (runOnce()) {
      progressed = true;
      continue;
    }
    // Nothing ran though requests are admitted: only a bug gets here.
    if (entries_.empty())
      return progressed; // what waits, waits for another worker
    failStuck();
    progressed = true;
  }
}

void EngineWorker::workerLoop() {
  uint32_t idleRounds = 0;
  while (true) {
    {
      // Woken at least every 100 ms to close idle sessions.
      std::unique_lock<std::mutex> lock(admission_->mutex);
      const auto &arriving = admission_->arriving[index_];
      admission_->wake.wait_for(lock, std::chrono::milliseconds(100), [&] {
        return admission_->stopping || !admission_->waiting.empty() ||
               !entries_.empty() || !pending_.empty() || !arriving.empty();
      });
      if (admission_->stopping && admission_->waiting.empty() &&
          entries_.empty() && pending_.empty() && arriving.empty()) {
        exited_ = true;
        return;
      }
    }
    bool ran = runOnce();
    if (outOfService_) {
      exited_ = true; // its executor is lost: the others serve on
      return;
    }
    if (ran) {
      idleRounds = 0;
      continue;
    }
    // Nothing ran: admitted requests that have nothing to run for a few
    // rounds are stuck (a bug); waiting ones wait for rows to free up.
    if (!entries_.empty() && ++idleRounds > 2) {
      failStuck();
      continue;
    }
    std::unique_lock<std::mutex> lock(admission_->mutex);
    admission_->wake.wait_for(lock, std::chrono::milliseconds(1));
  }
}

void EngineWorker::startThread() {
  if (!worker_.joinable())
    worker_ = std::thread([this] { workerLoop(); });
}

void EngineWorker::stop() {
  {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    admission_->stopping = true;
  }
  admission_->wake.notify_all();
  if (worker_.joinable())
    worker_.join();
  else
    drain();
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() {
  if (!impl_)
    return;
  if (!impl_->threadsRun())
    drain(); // no worker threads: answer what is waiting first
  for (auto &worker : impl_->workers)
    worker->stop();
}

Result<std::unique_ptr<Engine>>
Engine::create(std::shared_ptr<const LoadedArtifact> artifact,
               const EngineOptions &options) {
  return createEngineForTesting(std::move(artifact), options, {});
}

Result<std::unique_ptr<Engine>>
cellrun::createEngineForTesting(std::shared_ptr<const LoadedArtifact> artifact,
                                const EngineOptions &options,
                                FaultInjector injectFault) {
  if (options.workers == 0)
    return Status(StatusCode::InvalidArgument, "an engine needs a worker");
  if (!(options.admissionSlack >= 0 && options.admissionSlack <= 1))
    return Status(StatusCode::InvalidArgument,
                  "admissionSlack is a share of a worker's pools: 0 to 1");
  if (options.workersPerDevice == 0)
    return Status(StatusCode::InvalidArgument,
                  "a device needs at least one worker (workersPerDevice)");
  auto impl = std::make_unique<Engine::Impl>();
  impl->admission.limit = options.maxQueue;
  impl->admission.arriving.resize(options.workers); // before any thread
  for (uint32_t w = 0; w < options.workers; ++w) {
    auto worker = std::make_unique<EngineWorker>();
    if (Status status = worker->initialise(artifact, options, w,
                                           &impl->admission, injectFault);
        !status.isOk()) {
      for (auto &started : impl->workers)
        started->stop();
      return options.workers > 1
                 ? Status(status.code(), "worker " + std::to_string(w) + ": " +
                                             status.message())
                 : status;
    }
    impl->admission.workers.push_back(worker.get());
    impl->workers.push_back(std::move(worker));
  }
  impl->admission.inService = options.workers;
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

const RequestParser &Engine::parser() const {
  return *impl_->workers[0]->parser_;
}
std::string Engine::deviceDescription(uint32_t worker) const {
  return impl_->workers.at(worker)->executor_->describe();
}
const Executor &cellrun::engineExecutor(const Engine &engine, uint32_t worker) {
  return *engine.impl().workers.at(worker)->executor_;
}
uint64_t cellrun::engineRowsInUse(const Engine &engine) {
  uint64_t rows = 0;
  for (const auto &worker : engine.impl().workers)
    rows += worker->executor_->rowsInUse();
  return rows;
}
uint64_t cellrun::engineRetiredEntries(const Engine &engine) {
  AdmissionQueue &admission = engine.impl().admission;
  std::lock_guard<std::mutex> lock(admission.mutex);
  return admission.retired.size();
}
uint64_t cellrun::engineRetiredLimit() { return AdmissionQueue::kMaxRetired; }
int64_t cellrun::engineQueuedResultBytes(const Engine &engine) {
  return engine.impl().admission.resultBudget->held.load();
}
uint64_t cellrun::engineKeptOutputs(const Engine &engine) {
  uint64_t kept = 0;
  for (const auto &worker : engine.impl().workers)
    kept += worker->keptOutputs_.size();
  return kept;
}
const EngineOptions &Engine::options() const {
  return impl_->workers[0]->options_;
}

Status Engine::submit(Request request, Callback done) {
  AdmissionQueue &admission = impl_->admission;
  const RequestParser &parser = *impl_->workers[0]->parser_;
  if (Status status = parser.check(request); !status.isOk()) {
    std::lock_guard<std::mutex> lock(admission.mutex);
    ++admission.rejected;
    return status;
  }
  auto entry = std::make_unique<EngineWorker::Entry>();
  entry->done = std::move(done);
  // Decoder steps issued ahead: as many as may be in flight.
  EngineWorker &worker = *impl_->workers[0];
  entry->graph.emplace(parser.structure(), std::move(request),
                       worker.nodesInFlight_, worker.placesResults());
  // A synchronous executor's pools are host memory, the last step's rows
  // in cache when the request finishes.
  entry->graph->readFinalStatesFromPools(worker.directReads_);
  entry->graph->arrival = Clock::now();
  // The rows it may hold at once (every worker's pools are alike); a
  // request that can never fit is refused now.
  auto need = worker.needOf(*entry->graph, &entry->productsInPools);
  if (!need.ok()) {
    std::lock_guard<std::mutex> lock(admission.mutex);
    ++admission.rejected;
    return need.status();
  }
  entry->need = std::move(need).value();
  entry->productsMayStayInPools = entry->productsInPools;
  entry->deadline = entry->graph->deadline();
  // A small result is made here, on the submitting thread, rather than by
  // the engine's thread when the request starts.
  entry->graph->prepareChainResult(impl_->admission.resultBudget);
  // Answered requests' entries, freed here once the mutex is released.
  std::vector<std::unique_ptr<EngineWorker::Entry>> retired;
  {
    std::lock_guard<std::mutex> lock(admission.mutex);
    retired.swap(admission.retired);
    if (Status refusal = admission.loadRefusal(); !refusal.isOk()) {
      ++admission.rejected;
      return refusal;
    }
    if (const auto &token = entry->graph->request().cancel;
        token && token->cancelled_) {
      ++admission.rejected;
      return cancelledStatus(entry->graph->request().id, token->why_);
    }
    auto session = admission.sessionOf(*entry);
    if (!session.ok()) {
      ++admission.rejected;
      return session.status();
    }
    ++admission.submitted;
    if (SessionState *open = session.value()) {
      // One chunk of a session at a time: later ones wait for it.
      if (open->busy) {
        open->pending.push_back(std::move(entry));
        ++admission.chunksPending;
        return Status::ok();
      }
      open->busy = true;
    }
    admission.enqueue(std::move(entry));
  }
  admission.wake.notify_all();
  return Status::ok();
}

Result<SessionState *> AdmissionQueue::sessionOf(EngineWorker::Entry &entry) {
  const SessionChunk &chunk = entry.graph->request().session;
  if (chunk.id == 0)
    return static_cast<SessionState *>(nullptr);
  auto found = sessions.find(chunk.id);
  std::string where = "request " + entry.graph->request().id +
                      ": sequence_id " + std::to_string(chunk.id);
  // A start after a chunk that ends the id opens it anew once that chunk is
  // done (it waits behind it).
  if (chunk.start && found != sessions.end() && !found->second.ending)
    return Status(StatusCode::InvalidArgument,
                  where + " is already open (end it with sequence_end "
                          "before starting it again)");
  if (!chunk.start && found == sessions.end()) {
    if (auto lost = lostSessions.find(chunk.id); lost != lostSessions.end())
      return Status(StatusCode::Unavailable,
                    where + " was closed when its state was lost (" +
                        lost->second + ")");
    return Status(StatusCode::InvalidArgument,
                  where + " is not an open session (start one with "
                          "sequence_start; idle sessions close after the "
                          "session timeout)");
  }
  if (chunk.start) {
    found = sessions.emplace(chunk.id, SessionState()).first;
    lostSessions.erase(chunk.id);
    ++sessionsStarted;
  }
  SessionState *session = &found->second;
  entry.pinnedWorker = session->worker;
  if (chunk.start)
    session->ending = false; // the chunks after it are the new one's
  session->ending |= chunk.end;
  return session;
}

void AdmissionQueue::enqueue(std::unique_ptr<EngineWorker::Entry> entry) {
  uint64_t deadline = entry->deadline;
  if (waiting.empty() || waiting.back()->deadline <= deadline) {
    waiting.push_back(std::move(entry));
    return;
  }
  auto at = std::upper_bound(
      waiting.begin(), waiting.end(), deadline,
      [](uint64_t due, const std::unique_ptr<EngineWorker::Entry> &other) {
        return due < other->deadline;
      });
  waiting.insert(at, std::move(entry));
}

Status AdmissionQueue::loadRefusal() const {
  if (inService == 0)
    return Status(StatusCode::Unavailable,
                  "no worker is serving (" + lastLoss.message() + ")");
  if (waiting.size() + chunksPending >= limit)
    return Status(
        StatusCode::ResourceExhausted,
        "overloaded: " + std::to_string(waiting.size() + chunksPending) +
            " requests are waiting (the limit is " + std::to_string(limit) +
            ")");
  return Status::ok();
}

Status Engine::refuseForLoad() {
  AdmissionQueue &admission = impl_->admission;
  std::lock_guard<std::mutex> lock(admission.mutex);
  Status refusal = admission.loadRefusal();
  if (!refusal.isOk())
    ++admission.rejected;
  return refusal;
}

bool Engine::hasRoom() const {
  AdmissionQueue &admission = impl_->admission;
  std::lock_guard<std::mutex> lock(admission.mutex);
  return admission.waiting.size() + admission.chunksPending < admission.limit;
}

std::future<RequestResult> Engine::submit(Request request) {
  auto promise = std::make_shared<std::promise<RequestResult>>();
  std::future<RequestResult> future = promise->get_future();
  std::string id = request.id;
  Status status = submit(std::move(request), [promise](RequestResult result) {
    promise->set_value(std::move(result));
  });
  if (!status.isOk()) {
    RequestResult failed;
    failed.id = id;
    failed.status = status;
    promise->set_value(std::move(failed));
  }
  return future;
}

bool Engine::runOnce() {
  if (impl_->threadsRun())
    return false; // the loop is theirs alone
  bool ran = false;
  for (auto &worker : impl_->workers)
    ran |= worker->runOnce();
  return ran;
}

void Engine::startWorkers() {
  for (auto &worker : impl_->workers)
    worker->startThread();
}

void Engine::drain() {
  if (impl_->threadsRun())
    return; // drain is for manual mode
  // Round-robin: a session's chunk waits for its worker, which may wait for
  // rows another worker frees. Once every worker is idle, the head of the
  // queue is taken or refused, so each pass makes progress.
  while (true) {
    bool progressed = false;
    for (auto &worker : impl_->workers)
      progressed |= worker->drain();
    std::lock_guard<std::mutex> lock(impl_->admission.mutex);
    bool arriving = false; // requests moved to a worker drained before
    for (const auto &moved : impl_->admission.arriving)
      arriving |= !moved.empty();
    if (arriving)
      continue;
    if (impl_->admission.waiting.empty() || !progressed)
      return;
  }
}

uint32_t Engine::workers() const {
  return static_cast<uint32_t>(impl_->workers.size());
}

EngineStats Engine::stats() const {
  EngineStats total;
  {
    std::lock_guard<std::mutex> lock(impl_->admission.mutex);
    total.submitted = impl_->admission.submitted;
    total.cancelled = impl_->admission.cancelledWaiting;
    total.rejected = impl_->admission.rejected;
    total.waiting = static_cast<uint32_t>(impl_->admission.waiting.size() +
                                          impl_->admission.chunksPending);
    total.sessionsOpen = impl_->admission.sessions.size();
    total.sessionsExpired = impl_->admission.sessionsExpired;
    total.sessionsStarted = impl_->admission.sessionsStarted;
    total.workersInService = impl_->admission.inService;
    // Reservations are guarded by the admission mutex.
    for (auto &worker : impl_->workers)
      for (const EngineWorker::PoolState &state : worker->pools_) {
        uint64_t rowBytes = state.pool->rowBytes();
        total.poolBytesBudget += rowBytes * state.budget;
        total.poolBytesReserved += rowBytes * state.reserved;
      }
  }
  for (auto &worker : impl_->workers) {
    std::lock_guard<std::mutex> lock(worker->mutex_);
    const EngineStats &stats = worker->stats_;
    total.completed += stats.completed;
    total.failed += stats.failed;
    total.cancelled += stats.cancelled;
    total.deadlineMisses += stats.deadlineMisses;
    total.chainBatchTasks += stats.chainBatchTasks;
    total.productsInPoolRows += stats.productsInPoolRows;
    total.productsThroughStepRows += stats.productsThroughStepRows;
    total.running += stats.running;
    uint64_t tasks = 0;
    if (total.cells.empty())
      for (const CellTypeStats &cell : stats.cells)
        total.cells.push_back({cell.name});
    for (size_t c = 0; c < stats.cells.size(); ++c) {
      CellTypeStats &sum = total.cells[c];
      sum.tasks += stats.cells[c].tasks;
      sum.nodes += stats.cells[c].nodes;
      sum.paddingRows += stats.cells[c].paddingRows;
      sum.batchSizeSum += stats.cells[c].batchSizeSum;
      tasks += stats.cells[c].tasks;
    }
    total.requestsMoved += stats.requestsMoved;
    total.roundSeconds += stats.roundSeconds;
    total.executorSeconds += stats.executorSeconds;
    total.executorBlockedSeconds += stats.executorBlockedSeconds;
    total.executorDeliverSeconds += stats.executorDeliverSeconds;
    total.executorDeliveredRows += stats.executorDeliveredRows;
    total.executorDeviceWrittenRows += stats.executorDeviceWrittenRows;
    total.executorPlanGraphLaunches += stats.executorPlanGraphLaunches;
    total.executorPlanGraphCaptures += stats.executorPlanGraphCaptures;
    total.executorPlanFirstRuns += stats.executorPlanFirstRuns;
    total.executorPlansLaunchedDirectly += stats.executorPlansLaunchedDirectly;
    total.executorDeviceSeconds += stats.executorDeviceSeconds;
    total.executorDeviceTimedTasks += stats.executorDeviceTimedTasks;
    total.workerTasks.push_back(tasks);
  }
  return total;
}
