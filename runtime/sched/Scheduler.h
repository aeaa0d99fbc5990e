//===- Scheduler.h - Cellular batching, Algorithm 1 -------------*- C++ -*-===//
//
// The scheduler of cellular batching (Gao et al., EuroSys'18, section 4.3):
// per cell type a queue of subgraphs (nodes of that type whose outside
// dependencies are met), a choice of cell type in three tiers (enough ready
// nodes for the largest batch; ready nodes and no running task, other than
// the type the worker ran last; any ready nodes; ties to the highest
// priority; a type whose few ready nodes its feeders are about to join
// waits for them a bounded while: the fill rule), up to MaxTasksToSubmit
// batched tasks
// per call, dependencies updated at submission so that a node whose
// predecessors are in one task can go into the very next task, and
// subgraphs pinned to the worker that runs them until none of their nodes
// is running.
//
// A subgraph is a chain (node i reads node i - 1: an LSTM over a sentence, a
// decoder) or a tree (each node read by at most one other node of the
// subgraph: a TreeLSTM's internal nodes, whose successive levels go into
// successive tasks). Chains may grow while they run (a decoder that does not
// know its length) and any subgraph may be cancelled (a request that ended
// or failed).
//
// It knows nothing of time, devices or data: callers (the request processor,
// the simulated-clock tests) submit subgraphs, ask for tasks when a worker is
// idle and report finished tasks.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHEDULER_H
#define CELLRUN_SCHEDULER_H

#include "cellrun/Status.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace cellrun {

struct CellTypeConfig {
  std::string name;
  int priority = 0;                 // higher first
  std::vector<uint32_t> batchSizes; // supported, increasing, non-empty
};

/// The fill rule of a cell type: while it has fewer ready nodes than
/// `rows` (0: never) and one of its `feeders` (the types whose nodes lead
/// to its nodes: a seq2seq's encoder feeds its decoder, a tree's leaves its
/// internal nodes) has at least as many, the type waits for them to fill
/// its tasks. After `maxHeldCalls` calls of schedule() that passed it over
/// it no longer waits (Algorithm 1's tiers decide) until it has run or has
/// had no reason to wait. The count is the type's, whichever worker calls.
struct FillRule {
  std::vector<uint32_t> feeders;
  uint32_t rows = 0;
  uint32_t maxHeldCalls = 4;
};

/// Names a subgraph while it is in the scheduler; never 0, never reused.
using SubgraphId = uint64_t;

/// One node of a batched task: node `index` of subgraph `subgraph`.
struct TaskNode {
  SubgraphId subgraph;
  uint32_t index;
  /// The scheduler's own record of the subgraph (lookups without a search
  /// when the task finishes); callers leave it alone.
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
  Scheduler(const Scheduler &) = delete;
  Scheduler &operator=(const Scheduler &) = delete;

  /// A chain of `length` nodes of `cellType` whose outside dependencies are
  /// met; node i depends on node i - 1. `tag` is the caller's (a request, a
  /// pointer to its own record). `deadline` (any monotonic unit, smaller is
  /// sooner; UINT64_MAX: none): when more nodes are ready than a task takes,
  /// those of the subgraphs with the nearest deadlines go first, the others
  /// in arrival order.
  SubgraphId addSubgraph(uint32_t cellType, uint32_t length, uint64_t tag,
                         uint64_t deadline = UINT64_MAX);
  /// A tree-shaped subgraph: successor[i] is the node of the subgraph that
  /// reads node i (greater than i), or -1. A node is ready once every node
  /// whose successor it is has been submitted.
  Result<SubgraphId> addTree(uint32_t cellType, std::vector<int32_t> successor,
                             uint64_t tag, uint64_t deadline = UINT64_MAX);
  /// Sets `cellType`'s fill rule (none by default); rows above its
  /// largest batch size count as that size.
  Status setFillRule(uint32_t cellType, FillRule rule);
  /// Appends `nodes` nodes to a chain that has not left the scheduler.
  Status extend(SubgraphId chain, uint32_t nodes);
  /// Drops the nodes of `subgraph` not yet submitted. True when it has left
  /// the scheduler at once (no node of it running); otherwise finish()
  /// reports it among the completed when its last running node finishes.
  bool cancel(SubgraphId subgraph);
  /// Whether a node of `subgraph` is in a task that has not finished
  /// (the subgraph is pinned to that task's worker); false once it left.
  bool running(SubgraphId subgraph) const;
  /// The indices of the nodes of `subgraph` not yet put into a task, in
  /// increasing order (empty once it left); for a tree, `successor` (when
  /// given) gets their successors as positions in that list, or -1.
  std::vector<uint32_t> unsubmitted(SubgraphId subgraph,
                                    std::vector<int32_t> *successor) const;

  /// Algorithm 1 for idle `worker`: the tasks to run on it, in order (empty
  /// when no node is ready for it).
  std::vector<Task> schedule(int worker);

  struct Completed {
    SubgraphId subgraph;
    uint64_t tag;
  };
  /// Reports that `task` ran. Returns the subgraphs it completed (their
  /// last node was in it, or they were cancelled and their last running
  /// node was), in task order; they leave the scheduler.
  std::vector<Completed> finish(const Task &task);

  /// The tag of a subgraph in the scheduler (std::out_of_range otherwise).
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
  Subgraph *find(SubgraphId id) const;
  Subgraph &newRecord(uint32_t cellType, uint64_t tag, uint64_t deadline);
  void leave(CellQueue &queue, Subgraph &subgraph);
  void formBatchedTask(CellQueue &queue, int worker, Task &task);
  void commit(CellQueue &queue, const Task &task);
  void undo(CellQueue &queue, const Task &task);
  void batch(uint32_t cellType, int worker, std::vector<Task> &tasks);
  enum class FillState : uint8_t { NoReason, Waits, WaitedEnough };
  FillState fillState(uint32_t cellType) const;

  std::vector<CellQueue> queues_;
  uint32_t maxTasksToSubmit_;
  /// The subgraph records (stable addresses; a record's slot is its index),
  /// and the slots free for reuse.
  std::deque<Subgraph> arena_;
  std::vector<uint32_t> freeSlots_;
  /// Per worker, the cell type of its last tasks (-1: none yet).
  std::vector<int> lastType_;
  /// Each type's fill state in the current call; empty until a fill rule
  /// is set (then schedule() skips the rule's work).
  std::vector<FillState> fillStates_;
};

} // namespace cellrun

#endif // CELLRUN_SCHEDULER_H
