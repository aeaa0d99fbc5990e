//===- Scheduler.cpp - Algorithm 1 of BatchMaker --------------------------===//
#include "cellrun/Scheduler.h"

#include <algorithm>

using namespace cellrun;

struct Scheduler::Subgraph {
  SubgraphId id;
  uint64_t tag;
  uint64_t deadline = UINT64_MAX;
  uint32_t length;
  uint32_t submitted = 0; // nodes put into tasks (dependencies updated)
  uint32_t finished = 0;  // nodes whose task ran
  int pinned = -1;        // worker, while a task of this subgraph runs
  uint32_t running = 0;   // tasks with nodes of this subgraph not finished
  /// Nodes ready to be batched: the next one, once the previous is submitted.
  uint32_t ready() const { return submitted < length ? 1 : 0; }
};

struct Scheduler::CellQueue {
  CellTypeConfig config;
  std::vector<Subgraph *> subgraphs; // in arrival order (records in arena_)
  uint32_t runningTasks = 0;
  /// Subgraphs with a ready node (kept up to date, not counted each time).
  uint32_t ready = 0;
  /// Subgraphs with a deadline (when 0, queue order is the only order).
  uint32_t withDeadline = 0;
  /// Completed subgraphs still in `subgraphs` (removed in batches).
  uint32_t completed = 0;
  uint32_t readyNodes() const { return ready; }
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

SubgraphId Scheduler::addSubgraph(uint32_t cellType, uint32_t length,
                                  uint64_t tag, uint64_t deadline) {
  // Records live in one arena and are reused, so scanning a queue touches
  // compact memory.
  Subgraph *subgraph;
  if (freeRecords_.empty()) {
    arena_.emplace_back();
    subgraph = &arena_.back();
  } else {
    subgraph = freeRecords_.back();
    freeRecords_.pop_back();
    *subgraph = Subgraph();
  }
  subgraph->id = nextId_++;
  subgraph->tag = tag;
  subgraph->deadline = deadline;
  subgraph->length = std::max(1u, length);
  SubgraphId id = subgraph->id;
  CellQueue &queue = queues_.at(cellType);
  subgraphsById_[id] = subgraph;
  queue.subgraphs.push_back(subgraph);
  ++queue.ready;
  queue.withDeadline += deadline != UINT64_MAX;
  return id;
}

Scheduler::Subgraph &Scheduler::find(SubgraphId id) const {
  return *subgraphsById_.at(id); // std::out_of_range for an unknown id
}

uint64_t Scheduler::tagOf(SubgraphId subgraph) const {
  return find(subgraph).tag;
}

uint64_t Scheduler::tagOf(const TaskNode &node) const {
  return node.record ? static_cast<const Subgraph *>(node.record)->tag
                     : tagOf(node.subgraph);
}

uint32_t Scheduler::readyNodes(uint32_t cellType) const {
  return queues_.at(cellType).readyNodes();
}

uint32_t Scheduler::runningTasks(uint32_t cellType) const {
  return queues_.at(cellType).runningTasks;
}

bool Scheduler::idle() const {
  return std::all_of(queues_.begin(), queues_.end(), [](const CellQueue &q) {
    return q.subgraphs.size() == q.completed && q.runningTasks == 0;
  });
}

/// Submits `subgraph`'s ready node into a task on `worker`: dependencies
/// are updated now, so its next node may join the very next task on this
/// worker, and the subgraph is pinned to the worker.
static void submitNode(Scheduler::Subgraph &subgraph, uint32_t &queueReady,
                       int worker) {
  if (++subgraph.submitted == subgraph.length)
    --queueReady;
  ++subgraph.running;
  subgraph.pinned = worker;
}

/// FormBatchedTask (and submission of its nodes): ready nodes of subgraphs
/// not pinned to another worker, in queue order (nearest deadlines first
/// when there are more than fit), up to the largest batch size.
Task Scheduler::formBatchedTask(CellQueue &queue, int worker) {
  Task task;
  task.worker = worker;
  uint32_t largest = queue.config.batchSizes.back();
  auto eligible = [&](const Subgraph &subgraph) {
    return (subgraph.pinned == -1 || subgraph.pinned == worker) &&
           subgraph.ready() > 0;
  };
  if (queue.withDeadline > 0 && queue.ready > largest) {
    // Stable: arrival order among equal deadlines and among those without.
    std::vector<Subgraph *> candidates;
    for (Subgraph *subgraph : queue.subgraphs)
      if (eligible(*subgraph))
        candidates.push_back(subgraph);
    size_t take = std::min<size_t>(largest, candidates.size());
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Subgraph *a, const Subgraph *b) {
                       return a->deadline < b->deadline;
                     });
    for (size_t i = 0; i < take; ++i) {
      task.nodes.push_back(
          {candidates[i]->id, candidates[i]->submitted, candidates[i]});
      submitNode(*candidates[i], queue.ready, worker);
    }
    return task;
  }
  task.nodes.reserve(std::min<size_t>(largest, queue.ready));
  for (Subgraph *subgraph : queue.subgraphs) {
    if (!eligible(*subgraph))
      continue;
    // Field by field: a braced temporary costs a store-forwarding stall.
    TaskNode &node = task.nodes.emplace_back();
    node.subgraph = subgraph->id;
    node.index = subgraph->submitted;
    node.record = subgraph;
    submitNode(*subgraph, queue.ready, worker);
    if (task.nodes.size() == largest)
      break;
  }
  return task;
}

void Scheduler::batch(uint32_t cellType, int worker, std::vector<Task> &tasks) {
  CellQueue &queue = queues_[cellType];
  uint32_t smallest = queue.config.batchSizes.front();
  for (uint32_t count = 0; count < maxTasksToSubmit_; ++count) {
    Task task = formBatchedTask(queue, worker);
    task.cellType = cellType;
    if (task.nodes.empty() || (task.nodes.size() < smallest && count > 0)) {
      // Not submitted after all (only a first task may be small): undo.
      for (auto it = task.nodes.rbegin(); it != task.nodes.rend(); ++it) {
        Subgraph &subgraph = *static_cast<Subgraph *>(it->record);
        if (subgraph.submitted-- == subgraph.length)
          ++queue.ready;
        if (--subgraph.running == 0)
          subgraph.pinned = -1;
      }
      break;
    }
    ++queue.runningTasks;
    tasks.push_back(std::move(task));
  }
}

std::vector<Task> Scheduler::schedule(int worker) {
  // The three tiers of Algorithm 1 (lines 5-9), highest priority within.
  auto choose = [&](auto eligible) -> int {
    int best = -1;
    for (uint32_t type = 0; type < queues_.size(); ++type)
      if (eligible(queues_[type]) &&
          (best < 0 ||
           queues_[type].config.priority > queues_[best].config.priority))
        best = static_cast<int>(type);
    return best;
  };
  int chosen = choose([](const CellQueue &q) {
    return q.readyNodes() >= q.config.batchSizes.back();
  });
  if (chosen < 0)
    chosen = choose([](const CellQueue &q) {
      return q.runningTasks == 0 && q.readyNodes() > 0;
    });
  if (chosen < 0)
    chosen = choose([](const CellQueue &q) { return q.readyNodes() > 0; });
  std::vector<Task> tasks;
  if (chosen >= 0)
    batch(static_cast<uint32_t>(chosen), worker, tasks);
  return tasks;
}

std::vector<Scheduler::Completed> Scheduler::finish(const Task &task) {
  CellQueue &queue = queues_.at(task.cellType);
  --queue.runningTasks;
  std::vector<Completed> completed;
  for (const TaskNode &node : task.nodes) {
    Subgraph &subgraph = node.record ? *static_cast<Subgraph *>(node.record)
                                     : find(node.subgraph);
    ++subgraph.finished;
    if (--subgraph.running == 0)
      subgraph.pinned = -1; // no task of it runs any more
    if (subgraph.finished == subgraph.length)
      completed.push_back({subgraph.id, subgraph.tag});
  }
  if (completed.empty())
    return completed;
  for (const Completed &done : completed) {
    queue.withDeadline -=
        subgraphsById_.at(done.subgraph)->deadline != UINT64_MAX;
    subgraphsById_.erase(done.subgraph);
  }
  // Completed subgraphs have no ready node, so they may stay in the queue a
  // while: one pass removes them once they are a quarter of it, keeping
  // arrival order.
  queue.completed += static_cast<uint32_t>(completed.size());
  if (queue.completed * 4 >= queue.subgraphs.size()) {
    queue.subgraphs.erase(
        std::remove_if(queue.subgraphs.begin(), queue.subgraphs.end(),
                       [&](Subgraph *subgraph) {
                         if (subgraph->finished != subgraph->length)
                           return false;
                         freeRecords_.push_back(subgraph);
                         return true;
                       }),
        queue.subgraphs.end());
    queue.completed = 0;
  }
  return completed;
}
