//===- Engine.cpp - Serving requests with cellular batching ---------------===//
//
// Construction, submission from any thread, the worker thread and the
// public wrappers. The loop itself is in EngineLoop.cpp.
//
//===----------------------------------------------------------------------===//
#include "EngineImpl.h"

#include <algorithm>

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
                                std::atomic<uint32_t> *queued) {
  artifact_ = artifact;
  options_ = options;
  index_ = index;
  queued_ = queued;
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
  ExecutorOptions executorOptions = options.executor;
  executorOptions.cudaDevice += static_cast<int>(index);
  auto executor = Executor::create(artifact, options.poolRows, executorOptions);
  if (!executor.ok())
    return executor.status();
  executor_ = std::move(executor).value();
  // Nodes of one chain bound before the first of them completes: a round's
  // worth (cellular: up to maxTasksToSubmit consecutive steps; the
  // baselines: one), twice on an asynchronous executor, which completes a
  // round only after submitting the next.
  uint32_t perRound = options.policy == Policy::Cellular
                          ? std::max(1u, options.maxTasksToSubmit)
                          : 1u;
  overlap_ = options.overlapRounds == EngineOptions::Overlap::On ||
             (options.overlapRounds == EngineOptions::Overlap::Auto &&
              executor_->asynchronous());
  nodesInFlight_ = perRound * (overlap_ ? 2 : 1);

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
  if (options.startWorker)
    worker_ = std::thread([this] { workerLoop(); });
  return Status::ok();
}

uint32_t EngineWorker::load() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waitingHere_ + stats_.running;
}

uint32_t EngineWorker::poolId(uint32_t part, bool isOutput,
                              uint32_t index) const {
  const PartPools &pools = partPools_[part];
  return (isOutput ? pools.outputs : pools.inputs)[index];
}

void EngineWorker::enqueue(std::unique_ptr<Entry> entry) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++waitingHere_;
    ++stats_.submitted;
    inbox_.push_back(std::move(entry));
  }
  wake_.notify_one();
}

void EngineWorker::drain() {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (inbox_.empty() && entries_.empty() && pending_.empty())
        return;
    }
    if (!runOnce()) {
      bool inboxEmpty;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        inboxEmpty = inbox_.empty();
      }
      if (inboxEmpty)
        failStuck();
    }
  }
}

void EngineWorker::workerLoop() {
  uint32_t idleRounds = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] {
        return stopping_ || !inbox_.empty() || !entries_.empty() ||
               !pending_.empty();
      });
      if (stopping_ && inbox_.empty() && entries_.empty() && pending_.empty())
        return;
    }
    if (runOnce()) {
      idleRounds = 0;
      continue;
    }
    // Nothing ran: requests wait for rows only while others run, so a
    // loop with admitted requests and nothing to run is stuck (a bug).
    bool stuck;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stuck = inbox_.empty() && !entries_.empty() &&
              entries_.size() > waiting_.size() && ++idleRounds > 2;
    }
    if (stuck) {
      failStuck();
      continue;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait_for(lock, std::chrono::milliseconds(1));
  }
}

void EngineWorker::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable())
    worker_.join();
  else
    drain();
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() {
  if (impl_)
    for (auto &worker : impl_->workers)
      worker->stop();
}

Result<std::unique_ptr<Engine>>
Engine::create(std::shared_ptr<const LoadedArtifact> artifact,
               const EngineOptions &options) {
  if (options.workers == 0)
    return Status(StatusCode::InvalidArgument, "an engine needs a worker");
  auto impl = std::make_unique<Impl>();
  for (uint32_t w = 0; w < options.workers; ++w) {
    auto worker = std::make_unique<EngineWorker>();
    if (Status status = worker->initialise(artifact, options, w, &impl->queued);
        !status.isOk()) {
      for (auto &started : impl->workers)
        started->stop();
      return options.workers > 1
                 ? Status(status.code(), "worker " + std::to_string(w) + ": " +
                                             status.message())
                 : status;
    }
    impl->workers.push_back(std::move(worker));
  }
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

const RequestParser &Engine::parser() const {
  return *impl_->workers[0]->parser_;
}
const Executor &Engine::executor(uint32_t worker) const {
  return *impl_->workers.at(worker)->executor_;
}
const EngineOptions &Engine::options() const {
  return impl_->workers[0]->options_;
}

Status Engine::submit(Request request, Callback done) {
  EngineWorker &first = *impl_->workers[0];
  if (Status status = first.parser_->check(request); !status.isOk()) {
    ++impl_->rejected;
    return status;
  }
  // The queue limit is the engine's: claim a place or refuse at once.
  uint32_t limit = options().maxQueue;
  uint32_t queued = impl_->queued.load();
  do {
    if (queued >= limit) {
      ++impl_->rejected;
      return Status(StatusCode::ResourceExhausted,
                    "overloaded: " + std::to_string(queued) +
                        " requests are waiting (the limit is " +
                        std::to_string(limit) + ")");
    }
  } while (!impl_->queued.compare_exchange_weak(queued, queued + 1));
  // The least loaded worker takes it.
  EngineWorker *chosen = nullptr;
  uint32_t best = UINT32_MAX;
  for (auto &worker : impl_->workers)
    if (uint32_t load = worker->load(); load < best) {
      best = load;
      chosen = worker.get();
    }
  auto entry = std::make_unique<EngineWorker::Entry>();
  entry->key = impl_->nextKey++;
  entry->done = std::move(done);
  uint32_t window = std::max(1u, options().maxTasksToSubmit);
  entry->graph = std::make_unique<CellGraph>(first.parser_->structure(),
                                             std::move(request), window);
  entry->graph->arrival = Clock::now();
  chosen->enqueue(std::move(entry));
  return Status::ok();
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
  for (auto &worker : impl_->workers)
    worker->drain();
}

uint32_t Engine::workers() const {
  return static_cast<uint32_t>(impl_->workers.size());
}

EngineStats Engine::stats() const {
  EngineStats total;
  total.rejected = impl_->rejected.load();
  for (auto &worker : impl_->workers) {
    std::lock_guard<std::mutex> lock(worker->mutex_);
    const EngineStats &stats = worker->stats_;
    total.submitted += stats.submitted;
    total.completed += stats.completed;
    total.failed += stats.failed;
    total.deadlineMisses += stats.deadlineMisses;
    total.waiting += worker->waitingHere_;
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
    total.workerTasks.push_back(tasks);
  }
  return total;
}
