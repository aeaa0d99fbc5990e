//===- SchedulerTest.cpp - Algorithm 1 on a simulated clock ---------------===//
//
// A fake executor where every task takes one time unit drives the scheduler:
// the paper's Figure 5 case (batch size 4; requests of lengths 2, 3, 3, 5 at
// t = 0 and 5, 7, 3, 1 just after) with the exact completion times, against
// graph batching (collect four requests, run their merged graphs to the end)
// on the same clock; a short request overtaking a long one; priorities; and a
// pinned subgraph never handed to a second worker.
//
//===----------------------------------------------------------------------===//
#include "sched/Scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>

using namespace cellrun;

namespace {

struct Request {
  uint64_t id;
  uint32_t length;
  double arrival;
  uint32_t cellType = 0;
};

/// One worker running each task in one time unit, scheduling whenever it is
/// idle (Algorithm 1); returns each request's completion time.
std::map<uint64_t, int>
simulateCellular(Scheduler &scheduler, std::vector<Request> requests,
                 std::vector<size_t> *taskSizes = nullptr) {
  std::sort(
      requests.begin(), requests.end(),
      [](const Request &a, const Request &b) { return a.arrival < b.arrival; });
  std::map<uint64_t, int> done;
  std::deque<Task> queue;
  size_t next = 0;
  int time = 0;
  while (next < requests.size() || !scheduler.idle()) {
    for (; next < requests.size() && requests[next].arrival <= time; ++next)
      scheduler.addSubgraph(requests[next].cellType, requests[next].length,
                            requests[next].id);
    if (queue.empty())
      for (Task &task : scheduler.schedule(0))
        queue.push_back(std::move(task));
    if (queue.empty()) { // nothing ready: wait for the next arrival
      time = static_cast<int>(requests[next].arrival + 0.999);
      continue;
    }
    Task task = std::move(queue.front());
    queue.pop_front();
    if (taskSizes)
      taskSizes->push_back(task.nodes.size());
    ++time;
    for (const Scheduler::Completed &completed : scheduler.finish(task))
      done[completed.tag] = time;
  }
  return done;
}

/// Graph batching (DyNet/Fold style): take up to `batch` waiting requests,
/// run their merged graphs level by level to the end, return them together.
std::map<uint64_t, int> simulateGraphBatching(std::vector<Request> requests,
                                              size_t batch) {
  std::map<uint64_t, int> done;
  int time = 0;
  size_t next = 0;
  while (next < requests.size()) {
    time = std::max(time, static_cast<int>(requests[next].arrival + 0.999));
    std::vector<Request> group;
    for (; next < requests.size() && group.size() < batch &&
           requests[next].arrival <= time;
         ++next)
      group.push_back(requests[next]);
    uint32_t levels = 0;
    for (const Request &request : group)
      levels = std::max(levels, request.length);
    time += static_cast<int>(levels);
    for (const Request &request : group)
      done[request.id] = time;
  }
  return done;
}

TEST(SchedulerTest, Figure5CellularBatchingFinishesNoLaterThanGraphBatching) {
  // Requests 5-8 arrive "just after" 1-4 started: before the second step.
  std::vector<Request> requests = {{1, 2, 0},   {2, 3, 0},   {3, 3, 0},
                                   {4, 5, 0},   {5, 5, 0.5}, {6, 7, 0.5},
                                   {7, 3, 0.5}, {8, 1, 0.5}};
  Scheduler scheduler({{"rnn", 0, {4}}}, /*maxTasksToSubmit=*/5);
  std::vector<size_t> sizes;
  std::map<uint64_t, int> cellular =
      simulateCellular(scheduler, requests, &sizes);
  std::map<uint64_t, int> graph = simulateGraphBatching(requests, 4);

  // t=0: two full tasks of req1-4 (a third would hold 3 nodes, fewer than
  // the batch size). t=2: req1 has left; req2-5, then req4-7 twice, then
  // req5-8. From t=6 the stragglers run alone, one task per call.
  std::map<uint64_t, int> expectedCellular = {{1, 2}, {2, 3},  {3, 3}, {4, 5},
                                              {5, 7}, {6, 10}, {7, 6}, {8, 6}};
  std::map<uint64_t, int> expectedGraph = {{1, 5},  {2, 5},  {3, 5},  {4, 5},
                                           {5, 12}, {6, 12}, {7, 12}, {8, 12}};
  EXPECT_EQ(cellular, expectedCellular);
  EXPECT_EQ(graph, expectedGraph);
  for (const auto &[request, finished] : cellular)
    EXPECT_LE(finished, graph[request]) << "request " << request;
  EXPECT_EQ(sizes, (std::vector<size_t>{4, 4, 4, 4, 4, 4, 2, 1, 1, 1}));
  EXPECT_TRUE(scheduler.idle());
}

TEST(SchedulerTest, AShortRequestReturnsBeforeALongRunningOne) {
  Scheduler scheduler({{"rnn", 0, {1, 2, 4}}}, 5);
  std::map<uint64_t, int> done =
      simulateCellular(scheduler, {{1, 20, 0}, {2, 2, 3}});
  EXPECT_EQ(done[2], 7); // joins at t=5, after the five tasks issued at t=0
  EXPECT_EQ(done[1], 20);
  EXPECT_LT(done[2], done[1]);
}

TEST(SchedulerTest, HigherPriorityCellTypeGoesFirstWithinATier) {
  // Neither type has a full batch and neither runs: tier two, priority.
  Scheduler scheduler({{"encoder", 0, {1, 8}}, {"decoder", 1, {1, 8}}}, 1);
  scheduler.addSubgraph(0, 3, 10);
  scheduler.addSubgraph(1, 3, 20);
  std::vector<Task> tasks = scheduler.schedule(0);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].cellType, 1u);
  // With the decoder running, tier two picks the encoder.
  std::vector<Task> next = scheduler.schedule(1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].cellType, 0u);
}

TEST(SchedulerTest, TierTwoTurnsToTheOtherTypesAfterATask) {
  // Tasks finish before the next call (as on the CPU): no type ever has a
  // running task, yet the encoder must get its turn between decoder tasks
  // instead of waiting until the decoder has nothing ready.
  Scheduler scheduler({{"encoder", 0, {1, 8}}, {"decoder", 1, {1, 8}}}, 1);
  scheduler.addSubgraph(0, 4, 10);
  scheduler.addSubgraph(1, 4, 20);
  std::vector<uint32_t> order;
  for (int round = 0; round < 4; ++round) {
    std::vector<Task> tasks = scheduler.schedule(0);
    ASSERT_EQ(tasks.size(), 1u);
    order.push_back(tasks[0].cellType);
    scheduler.finish(tasks[0]);
  }
  EXPECT_EQ(order, (std::vector<uint32_t>{1, 0, 1, 0}));
  // Another worker's last type does not count: worker 1 starts with the
  // higher priority.
  std::vector<Task> other = scheduler.schedule(1);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].cellType, 1u);
}

TEST(SchedulerTest, NearestDeadlinesFillATaskFirst) {
  Scheduler scheduler({{"cell", 0, {1, 2}}}, 1);
  scheduler.addSubgraph(0, 1, /*tag=*/1); // no deadline
  scheduler.addSubgraph(0, 1, /*tag=*/2, /*deadline=*/50);
  scheduler.addSubgraph(0, 1, /*tag=*/3, /*deadline=*/10);
  std::vector<Task> tasks = scheduler.schedule(0);
  ASSERT_EQ(tasks.size(), 1u);
  ASSERT_EQ(tasks[0].nodes.size(), 2u);
  EXPECT_EQ(scheduler.tagOf(tasks[0].nodes[0].subgraph), 3u);
  EXPECT_EQ(scheduler.tagOf(tasks[0].nodes[1].subgraph), 2u);
  scheduler.finish(tasks[0]);
  // Without deadlines the order is arrival order.
  Scheduler plain({{"cell", 0, {1, 2}}}, 1);
  for (uint64_t tag : {1, 2, 3})
    plain.addSubgraph(0, 1, tag);
  std::vector<Task> first = plain.schedule(0);
  EXPECT_EQ(plain.tagOf(first[0].nodes[0].subgraph), 1u);
  EXPECT_EQ(plain.tagOf(first[0].nodes[1].subgraph), 2u);
}

TEST(SchedulerTest, AFullBatchBeatsPriority) {
  Scheduler scheduler({{"leaf", 0, {1, 2}}, {"internal", 5, {1, 2}}}, 1);
  scheduler.addSubgraph(0, 1, 1);
  scheduler.addSubgraph(0, 1, 2);
  scheduler.addSubgraph(1, 1, 3);
  std::vector<Task> tasks = scheduler.schedule(0);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].cellType, 0u); // two ready leaves fill the batch
  EXPECT_EQ(tasks[0].nodes.size(), 2u);
}

TEST(SchedulerTest, APinnedSubgraphNeverRunsOnTwoWorkers) {
  Scheduler scheduler({{"rnn", 0, {1, 4}}}, 5);
  SubgraphId a = scheduler.addSubgraph(0, 6, 1);
  std::vector<Task> first = scheduler.schedule(0);
  ASSERT_FALSE(first.empty());
  // Subgraph a is pinned to worker 0 while its tasks run: worker 1 gets
  // nothing of it, then a new subgraph arrives and only that one goes to 1.
  EXPECT_TRUE(scheduler.schedule(1).empty());
  SubgraphId b = scheduler.addSubgraph(0, 2, 2);
  std::vector<Task> second = scheduler.schedule(1);
  for (const Task &task : second)
    for (const TaskNode &node : task.nodes) {
      EXPECT_NE(node.subgraph, a);
      EXPECT_EQ(node.subgraph, b);
    }
  // Once worker 0 has finished every task of a, a is free again.
  for (const Task &task : first)
    scheduler.finish(task);
  std::vector<Task> third = scheduler.schedule(1);
  bool aOnWorker1 = false;
  for (const Task &task : third)
    for (const TaskNode &node : task.nodes)
      aOnWorker1 |= node.subgraph == a;
  EXPECT_TRUE(aOnWorker1);
}

} // namespace
