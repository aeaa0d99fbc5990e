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
                                const EngineOptions &options, uint32_t index) {
  artifact_ = artifact;
  options_ = options;
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
  auto executor =
      Executor::create(artifact, options.poolRows, options.executor);
  if (!executor.ok())
    return executor.status();
  executor_ = std::move(executor).value();

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

  // One zero row per pool (pools start zeroed and it is never written);
  // for padding, scratch rows that padding outputs write.
  uint32_t largest = 0;
  for (const PartInfo &part : parts)
    largest = std::max(largest, part.batchSizes.back());
  std::map<SlotPool *, uint32_t> scratchNeed;
  for (uint32_t p = 0; p < structure.cells.size(); ++p) {
    const cellpack::CellType &cell = *structure.cells[p].cell;
    for (bool isOutput : {false, true}) {
      const auto *specs = isOutput ? cell.outputs() : cell.inputs();
      std::map<SlotPool *, uint32_t> perPart;
      for (uint32_t i = 0; specs && i < specs->size(); ++i) {
        SlotPool &pool = poolOf(p, isOutput, i);
        if (!zeroRows_.count(&pool)) {
          auto row = pool.acquire();
          if (!row.ok())
            return row.status();
          zeroRows_[&pool] = static_cast<int32_t>(row.value());
        }
        if (isOutput && options.policy == Policy::Padded)
          perPart[&pool] += largest;
      }
      for (auto [pool, rows] : perPart)
        scratchNeed[pool] = std::max(scratchNeed[pool], rows);
    }
  }
  for (auto [pool, rows] : scratchNeed)
    for (uint32_t r = 0; r < rows; ++r) {
      auto row = pool->acquire();
      if (!row.ok())
        return Status(StatusCode::ResourceExhausted,
                      "the pools are too small for padded batching (" +
                          std::to_string(options.poolRows) + " rows)");
      scratchRows_[pool].push_back(static_cast<int32_t>(row.value()));
    }
  for (auto [pool, row] : zeroRows_)
    budget_[pool] = pool->available();
  if (options.startWorker)
    worker_ = std::thread([this] { workerLoop(); });
  return Status::ok();
}

uint32_t EngineWorker::load() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_ + stats_.running;
}

SlotPool &EngineWorker::poolOf(uint32_t part, bool isOutput, uint32_t index) {
  return executor_->pool(*parser_->structure().cells[part].cell, isOutput,
                         index);
}

Status EngineWorker::submit(Request request, Callback done) {
  if (Status status = parser_->check(request); !status.isOk()) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.rejected;
    return status;
  }
  auto entry = std::make_unique<Entry>();
  entry->done = std::move(done);
  entry->graph =
      std::make_unique<CellGraph>(parser_->structure(), std::move(request));
  entry->graph->arrival = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queued_ >= options_.maxQueue) {
      ++stats_.rejected;
      return Status(StatusCode::ResourceExhausted,
                    "overloaded: " + std::to_string(queued_) +
                        " requests are waiting (the limit is " +
                        std::to_string(options_.maxQueue) + ")");
    }
    entry->key = nextKey_++;
    ++queued_;
    ++stats_.submitted;
    inbox_.push_back(std::move(entry));
  }
  wake_.notify_one();
  return Status::ok();
}

void EngineWorker::drain() {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (inbox_.empty() && entries_.empty())
        return;
    }
    if (!runOnce() && inbox_.empty()) {
      // Nothing can run, yet requests are in: only a bug gets here.
      std::vector<uint64_t> stuck;
      for (auto &[key, entry] : entries_)
        stuck.push_back(key);
      for (uint64_t key : stuck)
        if (entries_.count(key))
          finishRequest(*entries_[key], Status(StatusCode::Internal,
                                               "the batching policy stalled"));
    }
  }
}

void EngineWorker::workerLoop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] {
        return stopping_ || !inbox_.empty() || !entries_.empty();
      });
      if (stopping_ && inbox_.empty() && entries_.empty())
        return;
    }
    if (!runOnce()) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(1));
    }
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
    if (Status status = worker->initialise(artifact, options, w);
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
  // The least loaded worker takes it; the queue limit is the engine's.
  EngineWorker *chosen = nullptr;
  uint32_t queued = 0, best = UINT32_MAX;
  for (auto &worker : impl_->workers) {
    {
      std::lock_guard<std::mutex> lock(worker->mutex_);
      queued += worker->queued_;
    }
    uint32_t load = worker->load();
    if (load < best) {
      best = load;
      chosen = worker.get();
    }
  }
  if (queued >= options().maxQueue) {
    std::lock_guard<std::mutex> lock(chosen->mutex_);
    ++chosen->stats_.rejected;
    return Status(StatusCode::ResourceExhausted,
                  "overloaded: " + std::to_string(queued) +
                      " requests are waiting (the limit is " +
                      std::to_string(options().maxQueue) + ")");
  }
  return chosen->submit(std::move(request), std::move(done));
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
  for (auto &worker : impl_->workers) {
    std::lock_guard<std::mutex> lock(worker->mutex_);
    const EngineStats &stats = worker->stats_;
    total.submitted += stats.submitted;
    total.completed += stats.completed;
    total.failed += stats.failed;
    total.rejected += stats.rejected;
    total.deadlineMisses += stats.deadlineMisses;
    total.waiting += worker->queued_;
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
