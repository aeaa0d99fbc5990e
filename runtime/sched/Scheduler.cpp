//===- Scheduler.cpp - Algorithm 1 of BatchMaker --------------------------===//
#include "sched/Scheduler.h"

#include <algorithm>
#include <stdexcept>

using namespace cellrun;

namespace {
/// Dependencies inside a tree-shaped subgraph.
struct TreeState {
  std::vector<int32_t> successor; // per node, -1: none in the subgraph
  std::vector<uint32_t> pending;  // per node: predecessors not submitted
  std::vector<uint32_t> ready;    // ready nodes, taken from readyHead on
  uint32_t readyHead = 0;
  uint32_t readyCount() const {
    return static_cast<uint32_t>(ready.size()) - readyHead;
  }
};
} // namespace

struct Scheduler::Subgraph {
  SubgraphId id = 0; // 0 once it has left (the record waits for reuse)
  uint64_t tag = 0;
  uint64_t deadline = UINT64_MAX;
  uint32_t slot = 0;       // index in the arena
  uint32_t generation = 0; // bumped on every reuse of the record
  uint32_t cellType = 0;
  uint32_t length = 0;    // nodes that will run (cancel shortens it)
  uint32_t submitted = 0; // nodes put into tasks (dependencies updated)
  uint32_t finished = 0;  // nodes whose task ran
  int pinned = -1;        // the worker, while a node of it is running
  std::unique_ptr<TreeState> tree; // null: a chain

  bool running() const { return submitted > finished; }
  uint32_t ready() const {
    return tree ? tree->readyCount() : (submitted < length ? 1u : 0u);
  }
  bool eligibleFor(int worker) const {
    return (!running() || pinned == worker) && ready() > 0;
  }
};

struct Scheduler::CellQueue {
  CellTypeConfig config;
  std::vector<Subgraph *> subgraphs; // in arrival order (records in arena_)
  uint32_t runningTasks = 0;
  /// Ready nodes over all subgraphs (kept up to date, not counted).
  uint32_t ready = 0;
  /// Subgraphs with a deadline (when 0, queue order is the only order).
  uint32_t withDeadline = 0;
  /// Subgraphs that left but are still in `subgraphs` (removed in batches).
  uint32_t left = 0;
  /// Tree-shaped subgraphs in the queue (0: chains only, nothing to commit).
  uint32_t trees = 0;
  FillRule fill;
  /// Consecutive schedule() calls that passed it over by the fill rule.
  uint32_t heldCalls = 0;
};

Scheduler::Scheduler(std::vector<CellTypeConfig> cellTypes,
                     uint32_t maxTasksToSubmit)
    : maxTasksToSubmit_(std::max(1u, maxTasksToSubmit)) {
  for (CellTypeConfig &config : cellTypes) {
    if (config.batchSizes.empty())
      config.batchSizes = {1};
    std::sort(config.batchSizes.begin(), config.batchSizes.end());
    CellQueue queue;
    queue.config = std::move(config);
    queues_.push_back(std::move(queue));
  }
}

Scheduler::~Scheduler() = default;

Scheduler::Subgraph &Scheduler::newRecord(uint32_t cellType, uint64_t tag,
                                          uint64_t deadline) {
  // Records live in one arena and are reused, so scanning a queue touches
  // compact memory; an id is the slot and its generation (no hashing).
  Subgraph *subgraph;
  if (freeSlots_.empty()) {
    arena_.emplace_back();
    subgraph = &arena_.back();
    subgraph->slot = static_cast<uint32_t>(arena_.size() - 1);
  } else {
    subgraph = &arena_[freeSlots_.back()];
    freeSlots_.pop_back();
    std::unique_ptr<TreeState> unused = std::move(subgraph->tree);
    uint32_t slot = subgraph->slot, generation = subgraph->generation;
    *subgraph = Subgraph();
    subgraph->slot = slot;
    subgraph->generation = generation;
  }
  ++subgraph->generation;
  subgraph->id =
      (static_cast<uint64_t>(subgraph->generation) << 32) | subgraph->slot;
  subgraph->tag = tag;
  subgraph->deadline = deadline;
  subgraph->cellType = cellType;
  CellQueue &queue = queues_.at(cellType);
  queue.subgraphs.push_back(subgraph);
  queue.withDeadline += deadline != UINT64_MAX;
  return *subgraph;
}

SubgraphId Scheduler::addSubgraph(uint32_t cellType, uint32_t length,
                                  uint64_t tag, uint64_t deadline) {
  Subgraph &subgraph = newRecord(cellType, tag, deadline);
  subgraph.length = std::max(1u, length);
  ++queues_[cellType].ready;
  return subgraph.id;
}

Result<SubgraphId> Scheduler::addTree(uint32_t cellType,
                                      std::vector<int32_t> successor,
                                      uint64_t tag, uint64_t deadline) {
  if (cellType >= queues_.size())
    return Status(StatusCode::InvalidArgument,
                  "no cell type " + std::to_string(cellType));
  if (successor.empty())
    return Status(StatusCode::InvalidArgument, "a subgraph without nodes");
  auto tree = std::make_unique<TreeState>();
  uint32_t length = static_cast<uint32_t>(successor.size());
  tree->pending.assign(length, 0);
  for (uint32_t node = 0; node < length; ++node) {
    int32_t next = successor[node];
    if (next == -1)
      continue;
    if (next <= static_cast<int32_t>(node) ||
        next >= static_cast<int32_t>(length))
      return Status(StatusCode::InvalidArgument,
                    "node " + std::to_string(node) + " of a subgraph names " +
                        std::to_string(next) +
                        " as its successor (successors come later)");
    ++tree->pending[next];
  }
  for (uint32_t node = 0; node < length; ++node)
    if (tree->pending[node] == 0)
      tree->ready.push_back(node);
  tree->successor = std::move(successor);
  Subgraph &subgraph = newRecord(cellType, tag, deadline);
  subgraph.length = length;
  queues_[cellType].ready += tree->readyCount();
  ++queues_[cellType].trees;
  subgraph.tree = std::move(tree);
  return subgraph.id;
}

Scheduler::Subgraph *Scheduler::find(SubgraphId id) const {
  uint64_t slot = id & 0xffffffffu;
  if (id == 0 || slot >= arena_.size())
    return nullptr;
  Subgraph &subgraph = const_cast<Subgraph &>(arena_[slot]);
  return subgraph.id == id ? &subgraph : nullptr;
}

Status Scheduler::setFillRule(uint32_t cellType, FillRule rule) {
  if (cellType >= queues_.size())
    return Status(StatusCode::InvalidArgument,
                  "no cell type " + std::to_string(cellType));
  for (uint32_t feeder : rule.feeders)
    if (feeder >= queues_.size() || feeder == cellType)
      return Status(StatusCode::InvalidArgument,
                    "cell type " + std::to_string(cellType) +
                        " cannot be fed by cell type " +
                        std::to_string(feeder));
  CellQueue &queue = queues_[cellType];
  rule.rows = std::min(rule.rows, queue.config.batchSizes.back());
  queue.fill = std::move(rule);
  queue.heldCalls = 0;
  fillStates_.resize(queues_.size(), FillState::NoReason);
  return Status::ok();
}

Status Scheduler::extend(SubgraphId chain, uint32_t nodes) {
  Subgraph *subgraph = find(chain);
  if (!subgraph || subgraph->tree)
    return Status(StatusCode::InvalidArgument,
                  "only a chain still in the scheduler can grow");
  if (subgraph->submitted == subgraph->length && nodes > 0)
    ++queues_[subgraph->cellType].ready;
  subgraph->length += nodes;
  return Status::ok();
}

void Scheduler::leave(CellQueue &queue, Subgraph &subgraph) {
  queue.withDeadline -= subgraph.deadline != UINT64_MAX;
  queue.trees -= subgraph.tree != nullptr;
  subgraph.id = 0;
  // Left subgraphs have no ready node, so they may stay in the queue a
  // while: one pass removes them once they are a quarter of it, keeping
  // arrival order.
  if (++queue.left * 16 < queue.subgraphs.size())
    return;
  queue.subgraphs.erase(std::remove_if(queue.subgraphs.begin(),
                                       queue.subgraphs.end(),
                                       [&](Subgraph *record) {
                                         if (record->id != 0)
                                           return false;
                                         freeSlots_.push_back(record->slot);
                                         return true;
                                       }),
                        queue.subgraphs.end());
  queue.left = 0;
}

bool Scheduler::cancel(SubgraphId id) {
  Subgraph *subgraph = find(id);
  if (!subgraph)
    return true;
  CellQueue &queue = queues_[subgraph->cellType];
  queue.ready -= subgraph->ready();
  if (subgraph->tree)
    subgraph->tree->readyHead =
        static_cast<uint32_t>(subgraph->tree->ready.size());
  subgraph->length = subgraph->submitted;
  if (subgraph->running())
    return false;
  leave(queue, *subgraph);
  return true;
}

bool Scheduler::running(SubgraphId id) const {
  const Subgraph *subgraph = find(id);
  return subgraph && subgraph->running();
}

std::vector<uint32_t>
Scheduler::unsubmitted(SubgraphId id, std::vector<int32_t> *successor) const {
  std::vector<uint32_t> nodes;
  if (successor)
    successor->clear();
  const Subgraph *subgraph = find(id);
  if (!subgraph)
    return nodes;
  if (!subgraph->tree) {
    for (uint32_t node = subgraph->submitted; node < subgraph->length; ++node)
      nodes.push_back(node);
    return nodes;
  }
  // A tree node is submitted once it has been taken from the ready list;
  // one with predecessors not yet submitted is not there yet.
  const TreeState &tree = *subgraph->tree;
  std::vector<uint8_t> left(tree.successor.size(), 0);
  for (uint32_t k = tree.readyHead; k < tree.ready.size(); ++k)
    left[tree.ready[k]] = 1;
  std::vector<int32_t> position(tree.successor.size(), -1);
  for (uint32_t node = 0; node < tree.successor.size(); ++node)
    if (left[node] || tree.pending[node] > 0) {
      position[node] = static_cast<int32_t>(nodes.size());
      nodes.push_back(node);
    }
  if (successor)
    for (uint32_t node : nodes) {
      int32_t next = tree.successor[node];
      successor->push_back(next < 0 ? -1 : position[next]);
    }
  return nodes;
}

uint64_t Scheduler::tagOf(SubgraphId id) const {
  Subgraph *subgraph = find(id);
  if (!subgraph)
    throw std::out_of_range("no subgraph " + std::to_string(id));
  return subgraph->tag;
}

uint64_t Scheduler::tagOf(const TaskNode &node) const {
  return node.record ? static_cast<const Subgraph *>(node.record)->tag
                     : tagOf(node.subgraph);
}

uint32_t Scheduler::readyNodes(uint32_t cellType) const {
  return queues_.at(cellType).ready;
}

uint32_t Scheduler::runningTasks(uint32_t cellType) const {
  return queues_.at(cellType).runningTasks;
}

bool Scheduler::idle() const {
  return std::all_of(queues_.begin(), queues_.end(), [](const CellQueue &q) {
    return q.subgraphs.size() == q.left && q.runningTasks == 0;
  });
}

/// Puts up to `room` ready nodes of tree `subgraph` into `task` from
/// `out` on and submits them (the subgraph is pinned to the task's worker).
/// Their successors become ready only once the task is committed, so no
/// node shares a task with a node it reads.
static uint32_t takeTreeNodes(Scheduler::Subgraph &subgraph, uint32_t room,
                              uint32_t &queueReady, int worker, TaskNode *out) {
  subgraph.pinned = worker;
  TreeState &tree = *subgraph.tree;
  uint32_t take = std::min(room, tree.readyCount());
  for (uint32_t k = 0; k < take; ++k) {
    out[k].subgraph = subgraph.id;
    out[k].index = tree.ready[tree.readyHead++];
    out[k].record = &subgraph;
  }
  subgraph.submitted += take;
  queueReady -= take;
  return take;
}

/// FormBatchedTask: ready nodes of subgraphs not pinned to another worker,
/// in queue order (nearest deadlines first when more are ready than fit),
/// up to the largest batch size. A chain's next node is ready at once, so
/// it may go into the very next task.
void Scheduler::formBatchedTask(CellQueue &queue, int worker, Task &task) {
  uint32_t largest = queue.config.batchSizes.back();
  uint32_t room = std::min(largest, queue.ready), taken = 0;
  task.nodes.reserve(room);
  auto take = [&](Subgraph &subgraph) {
    if (subgraph.tree) {
      size_t at = task.nodes.size();
      task.nodes.resize(at + std::min(room - taken, subgraph.ready()));
      taken += takeTreeNodes(subgraph, room - taken, queue.ready, worker,
                             task.nodes.data() + at);
      return;
    }
    // Field by field: a braced temporary costs a store-forwarding stall.
    subgraph.pinned = worker;
    TaskNode &node = task.nodes.emplace_back();
    ++taken;
    node.subgraph = subgraph.id;
    node.index = subgraph.submitted;
    node.record = &subgraph;
    if (++subgraph.submitted == subgraph.length)
      --queue.ready;
  };
  if (queue.withDeadline > 0 && queue.ready > largest) {
    // Stable: arrival order among equal deadlines and among those without.
    std::vector<Subgraph *> candidates;
    for (Subgraph *subgraph : queue.subgraphs)
      if (subgraph->id != 0 && subgraph->eligibleFor(worker))
        candidates.push_back(subgraph);
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Subgraph *a, const Subgraph *b) {
                       return a->deadline < b->deadline;
                     });
    for (size_t c = 0; c < candidates.size() && taken < room; ++c)
      take(*candidates[c]);
  } else {
    Subgraph *const *records = queue.subgraphs.data();
    for (size_t s = 0, n = queue.subgraphs.size(); s < n && taken < room; ++s) {
      Subgraph &subgraph = *records[s];
      if (subgraph.id != 0 && subgraph.eligibleFor(worker))
        take(subgraph);
    }
  }
}

/// The task is submitted: the successors of its tree nodes whose
/// predecessors are all submitted now become ready.
void Scheduler::commit(CellQueue &queue, const Task &task) {
  ++queue.runningTasks;
  if (queue.trees == 0)
    return;
  for (const TaskNode &node : task.nodes) {
    auto &subgraph = *static_cast<Subgraph *>(node.record);
    if (!subgraph.tree)
      continue;
    TreeState &tree = *subgraph.tree;
    int32_t next = tree.successor[node.index];
    if (next >= 0 && --tree.pending[next] == 0) {
      tree.ready.push_back(static_cast<uint32_t>(next));
      ++queue.ready;
    }
  }
}

/// The task is not submitted after all: its nodes are ready again, in the
/// same order. (A pin is only read while a node runs, so it needs no undo.)
void Scheduler::undo(CellQueue &queue, const Task &task) {
  for (auto it = task.nodes.rbegin(); it != task.nodes.rend(); ++it) {
    auto &subgraph = *static_cast<Subgraph *>(it->record);
    if (subgraph.tree) {
      --subgraph.tree->readyHead;
      ++queue.ready;
    } else if (subgraph.submitted == subgraph.length) {
      ++queue.ready;
    }
    --subgraph.submitted;
  }
}

void Scheduler::batch(uint32_t cellType, int worker, std::vector<Task> &tasks) {
  CellQueue &queue = queues_[cellType];
  uint32_t smallest = queue.config.batchSizes.front();
  for (uint32_t count = 0; count < maxTasksToSubmit_; ++count) {
    Task task;
    task.cellType = cellType;
    task.worker = worker;
    formBatchedTask(queue, worker, task);
    if (task.nodes.empty())
      break;
    if (task.nodes.size() < smallest && count > 0) {
      undo(queue, task); // only a first task may be small
      break;
    }
    commit(queue, task);
    tasks.push_back(std::move(task));
  }
}

/// The fill rule: a type with a few ready nodes waits while a feeder has
/// at least as many as fill its task (offline, a decoder waits for the
/// encoders that are about to end instead of running rounds of a handful
/// of rows; at light load no feeder has that many, so nothing waits), for
/// a bounded number of calls.
Scheduler::FillState Scheduler::fillState(uint32_t cellType) const {
  const CellQueue &queue = queues_[cellType];
  uint32_t fill = queue.fill.rows;
  if (fill == 0 || queue.ready == 0 || queue.ready >= fill)
    return FillState::NoReason;
  for (uint32_t feeder : queue.fill.feeders)
    if (queues_[feeder].ready >= fill)
      return queue.heldCalls < queue.fill.maxHeldCalls
                 ? FillState::Waits
                 : FillState::WaitedEnough;
  return FillState::NoReason;
}

std::vector<Task> Scheduler::schedule(int worker) {
  // Types the fill rule holds back this call. Some type that does not wait
  // has ready nodes then: a waiting type's feeder has, and the first
  // feeder of a line of waiting types does not wait itself.
  for (uint32_t type = 0; !fillStates_.empty() && type < queues_.size(); ++type)
    fillStates_[type] = fillState(type);
  auto waiting = [&](uint32_t type) {
    return !fillStates_.empty() && fillStates_[type] == FillState::Waits;
  };
  // The three tiers of Algorithm 1 (lines 5-9), highest priority within.
  auto choose = [&](auto eligible) -> int {
    int best = -1;
    for (uint32_t type = 0; type < queues_.size(); ++type)
      if (!waiting(type) && eligible(type, queues_[type]) &&
          (best < 0 ||
           queues_[type].config.priority > queues_[best].config.priority))
        best = static_cast<int>(type);
    return best;
  };
  if (worker >= 0 && static_cast<size_t>(worker) >= lastType_.size())
    lastType_.resize(worker + 1, -1);
  int last = worker >= 0 ? lastType_[worker] : -1;
  int chosen = choose([](uint32_t, const CellQueue &q) {
    return q.ready >= q.config.batchSizes.back();
  });
  // Tier two skips the type this worker ran last: where every task is done
  // before the next call (the CPU backend) no type ever has a running task,
  // and the highest priority would otherwise run whenever it has a single
  // ready node while the other types' nodes pile up.
  if (chosen < 0)
    chosen = choose([&](uint32_t type, const CellQueue &q) {
      return q.runningTasks == 0 && q.ready > 0 &&
             static_cast<int>(type) != last;
    });
  if (chosen < 0)
    chosen = choose([](uint32_t, const CellQueue &q) { return q.ready > 0; });
  std::vector<Task> tasks;
  if (chosen >= 0) {
    batch(static_cast<uint32_t>(chosen), worker, tasks);
    if (worker >= 0 && !tasks.empty())
      lastType_[worker] = chosen;
  }
  // A type that has waited enough waits again only after it has run or
  // has had no reason to wait.
  for (uint32_t type = 0; !fillStates_.empty() && type < queues_.size();
       ++type) {
    CellQueue &queue = queues_[type];
    if (fillStates_[type] == FillState::Waits)
      ++queue.heldCalls;
    else if (fillStates_[type] == FillState::NoReason)
      queue.heldCalls = 0;
  }
  if (chosen >= 0 && !tasks.empty())
    queues_[chosen].heldCalls = 0;
  return tasks;
}

std::vector<Scheduler::Completed> Scheduler::finish(const Task &task) {
  CellQueue &queue = queues_.at(task.cellType);
  --queue.runningTasks;
  std::vector<Completed> completed;
  for (const TaskNode &node : task.nodes) {
    Subgraph *subgraph = node.record ? static_cast<Subgraph *>(node.record)
                                     : find(node.subgraph);
    if (!subgraph)
      continue;
    if (++subgraph->finished == subgraph->length) {
      completed.push_back({subgraph->id, subgraph->tag});
      leave(queue, *subgraph);
    }
  }
  return completed;
}
