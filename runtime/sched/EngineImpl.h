//===- EngineImpl.h - The engine's state and loop --------------*- C++ -*-===//
//
// EngineWorker, one per device: the inbox that submit() fills from any
// thread, the thread that admits requests against the pools' rows, asks the
// batching policy for tasks, binds each task's nodes to pool rows (request data
// written into fresh rows, states read in place from the rows their producers
// wrote, zeros from one reserved zero row per pool, padding rows written to
// scratch rows), runs it on the executor, and grows the cell graphs.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHED_ENGINEIMPL_H
#define CELLRUN_SCHED_ENGINEIMPL_H

#include "BatchingPolicy.h"

#include "cellrun/Engine.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace cellrun {

/// One device: its executor, batching policy, requests and thread.
class EngineWorker {
public:
  using Callback = Engine::Callback;
  struct Entry {
    uint64_t key = 0;
    std::unique_ptr<CellGraph> graph;
    Callback done;
    std::vector<std::pair<SlotPool *, uint32_t>> reservation;
    bool admitted = false;
    bool complete = false;
  };

  /// `index` picks the CUDA device (options.executor.cudaDevice + index).
  Status initialise(std::shared_ptr<const LoadedArtifact> artifact,
                    const EngineOptions &options, uint32_t index);
  /// Requests queued or running here (for choosing the least loaded).
  uint32_t load() const;
  Status submit(Request request, Callback done);
  bool runOnce();
  void drain();
  void workerLoop();
  void stop();

  std::shared_ptr<const LoadedArtifact> artifact_;
  EngineOptions options_;
  std::unique_ptr<RequestParser> parser_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<BatchingPolicy> policy_;

  // Worker-owned state.
  std::unordered_map<uint64_t, std::unique_ptr<Entry>> entries_;
  std::deque<uint64_t> waiting_;
  std::map<SlotPool *, uint32_t> reserved_;
  std::map<SlotPool *, uint32_t> budget_; // rows requests may reserve
  std::map<SlotPool *, int32_t> zeroRows_;
  std::map<SlotPool *, std::vector<int32_t>> scratchRows_;

  // Shared with submit() and stats().
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Entry>> inbox_;
  uint32_t queued_ = 0; // inbox + waiting
  uint64_t nextKey_ = 1;
  bool stopping_ = false;
  EngineStats stats_;
  std::thread worker_;

private:
  void admit();
  Status reserveFor(Entry &entry, bool &fits);
  /// A task bound to rows and submitted to the executor.
  struct InFlight {
    std::vector<PlannedNode> nodes; // of requests still alive
    uint64_t ticket = 0;
    uint32_t batchSize = 0;
    std::vector<std::pair<SlotPool *, int32_t>> dataRows;
    Status status;
  };
  InFlight launch(PlannedTask &task);
  void complete(PlannedTask &task, InFlight &flight);
  Status bindNode(CellGraph &graph, uint32_t node, uint32_t row,
                  std::vector<std::vector<int32_t>> &inputRows,
                  std::vector<std::vector<int32_t>> &outputRows,
                  std::vector<std::pair<SlotPool *, int32_t>> &dataRows);
  void afterNode(Entry &entry, uint32_t node);
  void releaseOutputs(CellGraph &graph, uint32_t node);
  void finishRequest(Entry &entry, Status status);
  void deliver(uint64_t key);
  SlotPool &poolOf(uint32_t part, bool isOutput, uint32_t index);
};

class Engine::Impl {
public:
  std::vector<std::unique_ptr<EngineWorker>> workers;
};

} // namespace cellrun

#endif // CELLRUN_SCHED_ENGINEIMPL_H
