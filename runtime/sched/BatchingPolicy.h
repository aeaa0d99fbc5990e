//===- BatchingPolicy.h - What runs together, and when -*- C++ -*-===//
//
// The engine hands a policy the subgraphs of nodes that became ready and
// asks it for the next tasks; the policy decides what runs together and when a
// finished request may be returned. Three policies: cellular (Algorithm 1
// through Scheduler), graph (DyNet/Fold: a batch of requests merged, run
// level by level to its end) and padded (TensorFlow/MXNet: length buckets,
// every request of a batch present in every step, padding rows for those
// that have nothing to compute).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHED_BATCHINGPOLICY_H
#define CELLRUN_SCHED_BATCHINGPOLICY_H

#include "graph/CellGraph.h"

#include "sched/Scheduler.h"

#include <memory>

namespace cellrun {

struct PlannedNode {
  uint64_t request;
  uint32_t node;
};

struct PlannedTask {
  uint32_t part = 0;
  std::vector<PlannedNode> nodes;
  uint32_t padding = 0; // rows computed for nobody (padded policy)
  Task schedulerTask;   // cellular policy
};

struct PartInfo {
  std::string name;
  int priority = 0;
  std::vector<uint32_t> batchSizes;
  /// Cellular: the part's fill rule (none when its rows are 0).
  FillRule fill;
};

class BatchingPolicy {
public:
  virtual ~BatchingPolicy() = default;
  /// `request` was admitted; `length` is its number of steps or nodes.
  virtual void admitted(uint64_t request, uint32_t length) = 0;
  /// Nodes of `request` whose dependencies outside them are met (or, with
  /// `continuesChain`, more nodes of its open chain of that part);
  /// `deadline` in microseconds of the steady clock (UINT64_MAX: none).
  /// An error (a malformed subgraph) fails the request.
  virtual Status add(uint64_t request, ReadySubgraph subgraph,
                     uint64_t deadline = UINT64_MAX) = 0;
  /// The tasks to run now, in order (empty: nothing is ready). Nodes of a
  /// task may read nodes of earlier tasks that have not finished: tasks run
  /// in order on their worker.
  virtual std::vector<PlannedTask> next() = 0;
  virtual void finished(const PlannedTask &task) = 0;
  /// `request` is complete (or failed): its nodes not yet planned are
  /// dropped. Appends the requests whose results go back now to `returned`.
  virtual void requestDone(uint64_t request,
                           std::vector<uint64_t> &returned) = 0;
  /// Gives `request` up so that another worker can run the rest of it
  /// (Algorithm 1: a subgraph with no node running is not pinned): appends
  /// its nodes not yet planned to `remaining` as the subgraphs to add
  /// there, and forgets it; or returns false and changes nothing when one
  /// of its nodes is in a task that has not finished, or the policy keeps
  /// requests together (graph, padded).
  virtual bool release(uint64_t request,
                       std::vector<ReadySubgraph> &remaining) {
    (void)request;
    (void)remaining;
    return false;
  }
};

std::unique_ptr<BatchingPolicy>
makeCellularPolicy(const std::vector<PartInfo> &parts,
                   uint32_t maxTasksToSubmit);
std::unique_ptr<BatchingPolicy>
makeGraphPolicy(const std::vector<PartInfo> &parts, uint32_t batchRequests);
std::unique_ptr<BatchingPolicy>
makePaddedPolicy(const std::vector<PartInfo> &parts, uint32_t batchRequests,
                 uint32_t bucketWidth);

} // namespace cellrun

#endif // CELLRUN_SCHED_BATCHINGPOLICY_H
