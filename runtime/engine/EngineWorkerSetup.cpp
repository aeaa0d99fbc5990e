//===- EngineWorkerSetup.cpp - A worker's executor, policy and pools ------===//
//
// EngineWorker::initialise: the request parser, the worker's executor (and
// how many of a chain's nodes may be bound at once), the batching policy,
// pool ids for every cell input and output, the rows every pool keeps for
// itself (a zero row; scratch rows for padding), and a chain's inputs
// sorted into request data, states and zeros.
//
//===----------------------------------------------------------------------===//
#include "engine/EngineImpl.h"

#include <algorithm>
#include <thread>

using namespace cellrun;

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
  if (Status made = createExecutor(std::move(injectFault)); !made.isOk())
    return made;
  releaseAtBind_ = structure.kind != cellpack::Structure::Custom;
  uint32_t largestBatch = createPolicy();
  mapPools();
  if (Status reserved = reserveFixedRows(largestBatch); !reserved.isOk())
    return reserved;
  if (structure.kind == cellpack::Structure::Chain) {
    sortChainInputs();
    setUpChainBatch(largestBatch);
  }
  movesAllowed_ = options.moveRequests && options.workers > 1 &&
                  options.policy == Policy::Cellular &&
                  structure.kind != cellpack::Structure::Custom;
  if (structure.kind == cellpack::Structure::Chain ||
      structure.kind == cellpack::Structure::Seq2Seq) {
    CellGraph probe(structure, Request(), nodesInFlight_);
    auto need = needOf(probe);
    if (!need.ok())
      return need.status();
    fixedNeed_ = std::move(need).value();
    if (structure.kind == cellpack::Structure::Chain)
      setUpProductNeed();
  }
  if (options.startWorker)
    startThread();
  return Status::ok();
}

Status EngineWorker::createExecutor(FaultInjector injectFault) {
  const EngineOptions &options = options_;
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
  executorOptions.cudaDevice +=
      static_cast<int>(index_ / std::max(1u, options.workersPerDevice));
  // The GPU's path on the CPU: reads delivered when a task is waited for.
  executorOptions.readsAtWait |= options.readsThroughTasks;
  // cpu workers share the cores unless told otherwise.
  if (executorOptions.threads == 0)
    executorOptions.threads = std::max(1u, std::thread::hardware_concurrency() /
                                               std::max(1u, options.workers));
  // A staging slot for every task of two rounds, so that submitting the
  // next round does not wait for the device.
  executorOptions.tasksInFlight =
      std::max(executorOptions.tasksInFlight,
               2 * std::max(1u, options.maxTasksToSubmit));
  auto executor = Executor::create(artifact_, options.poolRows, executorOptions,
                                   std::move(injectFault));
  if (!executor.ok())
    return executor.status();
  executor_ = std::move(executor).value();
  directReads_ = !executor_->asynchronous() && !options.readsThroughTasks;
  return Status::ok();
}

uint32_t EngineWorker::createPolicy() {
  std::vector<PartInfo> parts;
  const ModelStructure &structure = parser_->structure();
  for (const CellRoles &roles : structure.cells) {
    PartInfo &part = parts.emplace_back();
    part.name = roles.cell->name()->str();
    part.priority = roles.cell->priority();
    part.batchSizes = artifact_->batchSizes(*roles.cell);
  }
  // Encoders feed decoders, leaves feed internal nodes (a custom
  // unfolder's parts: unknown, so none wait).
  if ((structure.kind == cellpack::Structure::Seq2Seq ||
       structure.kind == cellpack::Structure::Tree) &&
      parts.size() == 2) {
    parts[1].fill.feeders = {0};
    parts[1].fill.rows = options_.fillRows;
  }
  uint32_t largest = 0;
  for (const PartInfo &part : parts) {
    stats_.cells.push_back({part.name});
    largest = std::max(largest, part.batchSizes.back());
  }
  switch (options_.policy) {
  case Policy::Cellular:
    policy_ = makeCellularPolicy(parts, options_.maxTasksToSubmit);
    break;
  case Policy::Graph:
    policy_ = makeGraphPolicy(parts, options_.batchRequests);
    break;
  case Policy::Padded:
    policy_ =
        makePaddedPolicy(parts, options_.batchRequests, options_.bucketWidth);
    break;
  }
  return largest;
}

void EngineWorker::mapPools() {
  const ModelStructure &structure = parser_->structure();
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
}

Status EngineWorker::reserveFixedRows(uint32_t largestBatch) {
  // One zero row per pool (pools start zeroed and it is never written);
  // for padding, scratch rows that padding outputs write.
  std::vector<uint32_t> scratchNeed(pools_.size(), 0);
  if (options_.policy == Policy::Padded)
    for (const PartPools &part : partPools_) {
      std::vector<uint32_t> perPart(pools_.size(), 0);
      for (uint32_t id : part.outputs)
        perPart[id] += largestBatch;
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
                          std::to_string(options_.poolRows) + " rows)");
      state.scratchRows.push_back(static_cast<int32_t>(row.value()));
    }
    state.budget = state.pool->available();
  }
  return Status::ok();
}

void EngineWorker::sortChainInputs() {
  const CellRoles &roles = parser_->structure().cells[0];
  for (uint32_t i = 0; i < roles.inputCount; ++i) {
    auto data = std::find(roles.dataInputs.begin(), roles.dataInputs.end(), i);
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

uint32_t EngineWorker::poolId(uint32_t part, bool isOutput,
                              uint32_t index) const {
  const PartPools &pools = partPools_[part];
  return (isOutput ? pools.outputs : pools.inputs)[index];
}
