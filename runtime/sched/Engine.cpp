//===- Engine.cpp - Serving requests with cellular batching ---------------===//
//
// Construction, submission from any thread, the worker thread and the
// public wrappers. The loop itself is in EngineLoop.cpp.
//
//===----------------------------------------------------------------------===//
#include "EngineImpl.h"

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

Status EngineWorker::initialise(std::shared_ptr<const LoadedArtifact> artifact,
                                const EngineOptions &options, uint32_t index,
                                AdmissionQueue *admission,
                                FaultInjector injectFault) {
  artifact_ = artifact;
  options_ = options;
  index_ = index;
  admission_ = admission;
  auto parser = RequestParser::create(artifact, options.limits);
  if (!parser.ok())
    return parser.status();
  parser_ = std::move(parser).value();
  const ModelStructure &structure = parser_->structure();
  if (options.policy == Policy::Padded &&
      structure.kind == cellpack::Structure::Tree)
    return Status(StatusCode::Unsupported,
                  "padded batching needs sequences; this model unfolds trees "
                  "(use cellular or graph)");
  // Nodes of one chain bound before the first of them completes: a round's
  // worth (cellular: up to maxTasksToSubmit consecutive steps; the
  // baselines: one), twice when rounds overlap (a round is completed only
  // after the next is submitted, as on asynchronous executors).
  uint32_t perRound = options.policy == Policy::Cellular
                          ? std::max(1u, options.maxTasksToSubmit)
                          : 1u;
  overlap_ = options.overlapRounds == EngineOptions::Overlap::On ||
             (options.overlapRounds == EngineOptions::Overlap::Auto &&
              options.executor.device == DeviceKind::Cuda);
  nodesInFlight_ = perRound * (overlap_ ? 2 : 1);
  ExecutorOptions executorOptions = options.executor;
  executorOptions.cudaDevice += static_cast<int>(index);
  // cpu workers share the cores unless told otherwise.
  if (executorOptions.threads == 0)
    executorOptions.threads = std::max(1u, std::thread::hardware_concurrency() /
                                               std::max(1u, options.workers));
  // A staging slot for every task of two rounds, so that submitting the
  // next round does not wait for the device.
  executorOptions.tasksInFlight =
      std::max(executorOptions.tasksInFlight,
               2 * std::max(1u, options.maxTasksToSubmit));
  auto executor = Executor::create(artifact, options.poolRows, executorOptions,
                                   std::move(injectFault));
  if (!executor.ok())
    return executor.status();
  executor_ = std::move(executor).value();
  directReads_ = !executor_->asynchronous();
  releaseAtBind_ = structure.kind != cellpack::Structure::Custom;

  std::vector<PartInfo> parts;
  for (const CellRoles &roles : structure.cells)
    parts.push_back({roles.cell->name()->str(), roles.cell->priority(),
                     artifact->batchSizes(*roles.cell)});
  for (const PartInfo &part : parts)
    stats_.cells.push_back({part.name});
  switch (options.policy) {
  case Policy::Cellular:
    policy_ = makeCellularPolicy(parts, options.maxTasksToSubmit);
    break;
  case Policy::Graph:
    policy_ = makeGraphPolicy(parts, options.batchRequests);
    break;
  case Policy::Padded:
    policy_ =
        makePaddedPolicy(parts, options.batchRequests, options.bucketWidth);
    break;
  }

  // The pools by id; per part, the pool of every input and output.
  std::map<SlotPool *, uint32_t> ids;
  for (uint32_t p = 0; p < structure.cells.size(); ++p) {
    const cellpack::CellType &cell = *structure.cells[p].cell;
    PartPools part;
    for (bool isOutput : {false, true}) {
      const auto *specs = isOutput ? cell.outputs() : cell.inputs();
      for (uint32_t i = 0; specs && i < specs->size(); ++i) {
        SlotPool *pool = &executor_->pool(cell, isOutput, i);
        auto [at, added] =
            ids.emplace(pool, static_cast<uint32_t>(pools_.size()));
        if (added) {
          PoolState state;
          state.pool = pool;
          pools_.push_back(std::move(state));
        }
        (isOutput ? part.outputs : part.inputs).push_back(at->second);
      }
    }
    partPools_.push_back(std::move(part));
  }
  // One zero row per pool (pools start zeroed and it is never written);
  // for padding, scratch rows that padding outputs write.
  uint32_t largest = 0;
  for (const PartInfo &part : parts)
    largest = std::max(largest, part.batchSizes.back());
  std::vector<uint32_t> scratchNeed(pools_.size(), 0);
  if (options.policy == Policy::Padded)
    for (const PartPools &part : partPools_) {
      std::vector<uint32_t> perPart(pools_.size(), 0);
      for (uint32_t id : part.outputs)
        perPart[id] += largest;
      for (uint32_t id = 0; id < pools_.size(); ++id)
        scratchNeed[id] = std::max(scratchNeed[id], perPart[id]);
    }
  for (uint32_t id = 0; id < pools_.size(); ++id) {
    PoolState &state = pools_[id];
    auto zero = state.pool->acquire();
    if (!zero.ok())
      return zero.status();
    state.zeroRow = static_cast<int32_t>(zero.value());
    for (uint32_t r = 0; r < scratchNeed[id]; ++r) {
      auto row = state.pool->acquire();
      if (!row.ok())
        return Status(StatusCode::ResourceExhausted,
                      "the pools are too small for padded batching (" +
                          std::to_string(options.poolRows) + " rows)");
      state.scratchRows.push_back(static_cast<int32_t>(row.value()));
    }
    state.budget = state.pool->available();
  }
  if (structure.kind == cellpack::Structure::Chain) {
    const CellRoles &roles = structure.cells[0];
    for (uint32_t i = 0; i < roles.inputCount; ++i) {
      auto data =
          std::find(roles.dataInputs.begin(), roles.dataInputs.end(), i);
      if (data != roles.dataInputs.end())
        chainData_.push_back(
            {i, static_cast<uint32_t>(data - roles.dataInputs.begin())});
      else if (roles.updatedBy[i] >= 0)
        chainStates_.push_back({i, static_cast<uint32_t>(roles.updatedBy[i])});
      else
        chainZeros_.push_back(
            {i, static_cast<uint32_t>(pools_[poolId(0, false, i)].zeroRow)});
    }
  }
  if (structure.kind == cellpack::Structure::Chain ||
      structure.kind == cellpack::Structure::Seq2Seq) {
    CellGraph probe(structure, Request(), nodesInFlight_);
    auto need = needOf(probe);
    if (!need.ok())
      return need.status();
    fixedNeed_ = std::move(need).value();
  }
  if (options.startWorker)
    worker_ = std::thread([this] { workerLoop(); });
  return Status::ok();
}

uint32_t EngineWorker::poolId(uint32_t part, bool isOutput,
                              uint32_t index) const {
  const PartPools &pools = partPools_[part];
  return (isOutput ? pools.outputs : pools.inputs)[index];
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
      admission_->wake.wait_for(lock, std::chrono::milliseconds(100), [&] {
        return admission_->stopping || !admission_->waiting.empty() ||
               !entries_.empty() || !pending_.empty();
      });
      if (admission_->stopping && admission_->waiting.empty() &&
          entries_.empty() && pending_.empty()) {
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
  if (!impl_->workers.empty() && !impl_->workers[0]->worker_.joinable())
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
  auto impl = std::make_unique<Engine::Impl>();
  impl->admission.limit = options.maxQueue;
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
                       worker.nodesInFlight_, worker.directReads_);
  entry->graph->arrival = Clock::now();
  // The rows it may hold at once (every worker's pools are alike); a
  // request that can never fit is refused now.
  auto need = worker.needOf(*entry->graph);
  if (!need.ok()) {
    std::lock_guard<std::mutex> lock(admission.mutex);
    ++admission.rejected;
    return need.status();
  }
  entry->need = std::move(need).value();
  uint64_t deadline = entry->deadline = entry->graph->deadline();
  {
    std::lock_guard<std::mutex> lock(admission.mutex);
    auto &waiting = admission.waiting;
    if (Status refusal = admission.loadRefusal(); !refusal.isOk()) {
      ++admission.rejected;
      return refusal;
    }
    if (const auto &token = entry->graph->request().cancel;
        token && token->cancelled_) {
      ++admission.rejected;
      return cancelledStatus(entry->graph->request().id, token->why_);
    }
    SessionState *session = nullptr;
    if (const SessionChunk &chunk = entry->graph->request().session;
        chunk.id != 0) {
      auto found = admission.sessions.find(chunk.id);
      std::string where = "request " + entry->graph->request().id +
                          ": sequence_id " + std::to_string(chunk.id);
      // A start after a chunk that ends the id opens it anew once that
      // chunk is done (it waits behind it).
      if (chunk.start && found != admission.sessions.end() &&
          !found->second.ending) {
        ++admission.rejected;
        return Status(StatusCode::InvalidArgument,
                      where + " is already open (end it with sequence_end "
                              "before starting it again)");
      }
      if (!chunk.start && found == admission.sessions.end()) {
        ++admission.rejected;
        if (auto lost = admission.lostSessions.find(chunk.id);
            lost != admission.lostSessions.end())
          return Status(StatusCode::Unavailable,
                        where + " was closed when its state was lost (" +
                            lost->second + ")");
        return Status(StatusCode::InvalidArgument,
                      where + " is not an open session (start one with "
                              "sequence_start; idle sessions close after the "
                              "session timeout)");
      }
      if (chunk.start) {
        found = admission.sessions.emplace(chunk.id, SessionState()).first;
        admission.lostSessions.erase(chunk.id);
      }
      session = &found->second;
      entry->pinnedWorker = session->worker;
      if (chunk.start)
        session->ending = false; // the chunks after it are the new one's
      session->ending |= chunk.end;
    }
    ++admission.submitted;
    if (session) {
      // One chunk of a session at a time: later ones wait for it.
      if (session->busy) {
        session->pending.push_back(std::move(entry));
        ++admission.chunksPending;
        return Status::ok();
      }
      session->busy = true;
    }
    // Earliest deadline first, then arrival order.
    if (waiting.empty() || waiting.back()->deadline <= deadline) {
      waiting.push_back(std::move(entry));
    } else {
      auto at = std::upper_bound(
          waiting.begin(), waiting.end(), deadline,
          [](uint64_t due, const std::unique_ptr<EngineWorker::Entry> &other) {
            return due < other->deadline;
          });
      waiting.insert(at, std::move(entry));
    }
  }
  admission.wake.notify_all();
  return Status::ok();
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
  bool ran = false;
  for (auto &worker : impl_->workers)
    ran |= worker->runOnce();
  return ran;
}

void Engine::drain() {
  // Round-robin: a session's chunk waits for its worker, which may wait for
  // rows another worker frees. Once every worker is idle, the head of the
  // queue is taken or refused, so each pass makes progress.
  while (true) {
    bool progressed = false;
    for (auto &worker : impl_->workers)
      progressed |= worker->drain();
    std::lock_guard<std::mutex> lock(impl_->admission.mutex);
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
    total.roundSeconds += stats.roundSeconds;
    total.executorSeconds += stats.executorSeconds;
    total.workerTasks.push_back(tasks);
  }
  return total;
}
