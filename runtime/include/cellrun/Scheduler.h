//===- Scheduler.h - Cellular batching, Algorithm 1 -------------*- C++ -*-===//
//
// The scheduler of cellular batching (Gao et al., EuroSys'18, section 4.3):
// per cell type a queue of subgraphs (runs of nodes of that type whose outside
// dependencies are met), a choice of cell type in three tiers (enough ready
// nodes for the largest batch; ready nodes and no running task; any ready
// nodes; ties to the highest priority), up to MaxTasksToSubmit batched tasks
// per call, dependencies updated at submission so that a subgraph's next node
// can go into the very next task, and subgraphs pinned to the worker that
// runs them until none of their tasks is running.
//
// It knows nothing of time, devices or data: callers (the request processor,
// the simulated-clock tests) submit subgraphs, ask for tasks when a worker is
// idle and report finished tasks.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHEDULER_H
#define CELLRUN_SCHEDULER_H

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace cellrun {

struct CellTypeConfig {
  std::string name;
  int priority = 0;                 // higher first
  std::vector<uint32_t> batchSizes; // supported, increasing, non-empty
};

using SubgraphId = uint64_t;

/// One node of a batched task: node `index` of subgraph `subgraph`.
struct TaskNode {
  SubgraphId subgraph;
  uint32_t index;
  /// The scheduler's own record of the subgraph (O(1) lookups when the
  /// task finishes); callers leave it alone.
  void *record = nullptr;
};

struct Task {
  uint32_t cellType = 0;
  int worker = 0;
  std::vector<TaskNode> nodes;
};

class Scheduler {
public:
  explicit Scheduler(std::vector<CellTypeConfig> cellTypes,
                     uint32_t maxTasksToSubmit = 5);
  ~Scheduler();

  /// A run of `length` nodes of `cellType` whose outside dependencies are
  /// met; node i depends on node i - 1. `tag` is the caller's (a request).
  /// `deadline` (any monotonic unit, smaller is sooner; UINT64_MAX: none):
  /// when more nodes are ready than a task takes, those of the subgraphs
  /// with the nearest deadlines go first, the others in arrival order.
  SubgraphId addSubgraph(uint32_t cellType, uint32_t length, uint64_t tag,
                         uint64_t deadline = UINT64_MAX);

  /// Algorithm 1 for idle `worker`: the tasks to run on it, in order (empty
  /// when no node is ready for it).
  std::vector<Task> schedule(int worker);

  struct Completed {
    SubgraphId subgraph;
    uint64_t tag;
  };
  /// Reports that `task` ran. Returns the subgraphs it completed (their last
  /// node was in it), in task order; they leave the scheduler.
  std::vector<Completed> finish(const Task &task);

  uint64_t tagOf(SubgraphId subgraph) const;
  /// The tag of a node's subgraph, without a lookup (node from a task not
  /// yet finished).
  uint64_t tagOf(const TaskNode &node) const;
  uint32_t readyNodes(uint32_t cellType) const;
  uint32_t runningTasks(uint32_t cellType) const;
  bool idle() const; // no subgraph left and no task running

  struct Subgraph; // the scheduler's record of a subgraph

private:
  struct CellQueue;
  Subgraph &find(SubgraphId id) const;
  Task formBatchedTask(CellQueue &queue, int worker);
  void batch(uint32_t cellType, int worker, std::vector<Task> &tasks);

  std::vector<CellQueue> queues_;
  uint32_t maxTasksToSubmit_;
  SubgraphId nextId_ = 1;
  /// Every subgraph in a queue, by id.
  std::unordered_map<SubgraphId, Subgraph *> subgraphsById_;
  /// The subgraph records, and those free for reuse.
  std::deque<Subgraph> arena_;
  std::vector<Subgraph *> freeRecords_;
};

} // namespace cellrun

#endif // CELLRUN_SCHEDULER_H
