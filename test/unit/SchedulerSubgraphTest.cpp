//===- SchedulerSubgraphTest.cpp - Trees, growing chains, cancellation ----===//
//
// The subgraph shapes beyond a fixed chain: a tree's successive levels go
// into successive tasks of one call (paper section 4.4) and never share a
// task with a node they read; a chain that grows while it runs; cancelled
// subgraphs leave at once or when their running nodes finish; ids of
// subgraphs that left are not found again; what is left of a subgraph to
// move to another worker.
//
//===----------------------------------------------------------------------===//
#include "sched/Scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace cellrun;

namespace {

/// The node indices of `task` that belong to `subgraph`, sorted.
std::vector<uint32_t> nodesOf(const Task &task, SubgraphId subgraph) {
  std::vector<uint32_t> nodes;
  for (const TaskNode &node : task.nodes)
    if (node.subgraph == subgraph)
      nodes.push_back(node.index);
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

// A complete binary tree of 7 internal nodes in one subgraph, numbered
// bottom-up: 0-3 read only leaves, 4 reads 0 and 1, 5 reads 2 and 3, 6 (the
// root) reads 4 and 5.
std::vector<int32_t> binaryTree() { return {4, 4, 5, 5, 6, 6, -1}; }

TEST(SchedulerSubgraphTest, TreeLevelsGoIntoSuccessiveTasksOfOneCall) {
  Scheduler scheduler({{"internal", 0, {1, 2, 4, 8}}}, 5);
  auto tree = scheduler.addTree(0, binaryTree(), /*tag=*/7);
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  EXPECT_EQ(scheduler.readyNodes(0), 4u);
  std::vector<Task> tasks = scheduler.schedule(0);
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(nodesOf(tasks[0], tree.value()),
            (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(nodesOf(tasks[1], tree.value()), (std::vector<uint32_t>{4, 5}));
  EXPECT_EQ(nodesOf(tasks[2], tree.value()), (std::vector<uint32_t>{6}));
  EXPECT_EQ(scheduler.readyNodes(0), 0u);
  EXPECT_TRUE(scheduler.finish(tasks[0]).empty());
  EXPECT_TRUE(scheduler.finish(tasks[1]).empty());
  std::vector<Scheduler::Completed> done = scheduler.finish(tasks[2]);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].tag, 7u);
  EXPECT_TRUE(scheduler.idle());
}

TEST(SchedulerSubgraphTest, TreesOfSeveralRequestsShareTasksLevelByLevel) {
  Scheduler scheduler({{"internal", 0, {1, 2, 4, 8, 16}}}, 5);
  SubgraphId a = scheduler.addTree(0, binaryTree(), 1).value();
  SubgraphId b = scheduler.addTree(0, {2, 2, -1}, 2).value();
  std::vector<Task> tasks = scheduler.schedule(0);
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(tasks[0].nodes.size(), 6u); // both bottom levels together
  EXPECT_EQ(nodesOf(tasks[1], a), (std::vector<uint32_t>{4, 5}));
  EXPECT_EQ(nodesOf(tasks[1], b), (std::vector<uint32_t>{2}));
  EXPECT_EQ(nodesOf(tasks[2], a), (std::vector<uint32_t>{6}));
  EXPECT_TRUE(nodesOf(tasks[2], b).empty());
  // No task holds a node together with a node it reads.
  std::vector<int32_t> successorsOfA = binaryTree();
  for (const Task &task : tasks) {
    std::set<uint32_t> inTask;
    for (uint32_t node : nodesOf(task, a))
      inTask.insert(node);
    for (uint32_t node : inTask)
      EXPECT_FALSE(successorsOfA[node] >= 0 &&
                   inTask.count(static_cast<uint32_t>(successorsOfA[node])));
  }
}

TEST(SchedulerSubgraphTest, ATreeLevelLargerThanTheBatchSpillsOver) {
  Scheduler scheduler({{"internal", 0, {1, 2}}}, 5);
  SubgraphId tree = scheduler.addTree(0, binaryTree(), 1).value();
  std::vector<Task> tasks = scheduler.schedule(0);
  std::vector<std::vector<uint32_t>> levels;
  for (const Task &task : tasks)
    levels.push_back(nodesOf(task, tree));
  // 4 ready leaves-level nodes in two tasks; node 4 is ready after the
  // first, node 5 after the second.
  ASSERT_EQ(levels.size(), 4u);
  EXPECT_EQ(levels[0], (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(levels[1], (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(levels[2], (std::vector<uint32_t>{4, 5}));
  EXPECT_EQ(levels[3], (std::vector<uint32_t>{6}));
}

TEST(SchedulerSubgraphTest, MalformedTreesAreRefused) {
  Scheduler scheduler({{"internal", 0, {4}}}, 5);
  EXPECT_FALSE(scheduler.addTree(0, {}, 1).ok());
  EXPECT_FALSE(scheduler.addTree(0, {0}, 1).ok());     // reads itself
  EXPECT_FALSE(scheduler.addTree(0, {-1, 0}, 1).ok()); // reads an earlier
  EXPECT_FALSE(scheduler.addTree(0, {5, -1}, 1).ok()); // out of range
  EXPECT_FALSE(scheduler.addTree(3, {-1}, 1).ok());    // no such cell type
  EXPECT_TRUE(scheduler.idle());
}

TEST(SchedulerSubgraphTest, AChainGrowsWhileItRuns) {
  Scheduler scheduler({{"decoder", 0, {1, 4}}}, 5);
  SubgraphId chain = scheduler.addSubgraph(0, 2, 1);
  std::vector<Task> first = scheduler.schedule(0);
  ASSERT_EQ(first.size(), 2u); // nodes 0 and 1, back to back
  EXPECT_EQ(scheduler.readyNodes(0), 0u);
  // The host saw node 0's result and wants one more step.
  ASSERT_TRUE(scheduler.extend(chain, 1).isOk());
  EXPECT_EQ(scheduler.readyNodes(0), 1u);
  EXPECT_TRUE(scheduler.finish(first[0]).empty());
  EXPECT_TRUE(scheduler.finish(first[1]).empty()); // node 2 is still to run
  std::vector<Task> second = scheduler.schedule(0);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].nodes[0].index, 2u);
  ASSERT_EQ(scheduler.finish(second[0]).size(), 1u);
  EXPECT_FALSE(scheduler.extend(chain, 1).isOk()); // it has left
  EXPECT_TRUE(scheduler.idle());
}

TEST(SchedulerSubgraphTest, CancelledSubgraphsLeaveWhenTheirNodesFinish) {
  Scheduler scheduler({{"decoder", 0, {1, 2}}}, 2);
  SubgraphId running = scheduler.addSubgraph(0, 10, 1);
  std::vector<Task> tasks = scheduler.schedule(0); // nodes 0 and 1
  ASSERT_EQ(tasks.size(), 2u);
  SubgraphId waiting = scheduler.addSubgraph(0, 10, 2);
  EXPECT_EQ(scheduler.readyNodes(0), 2u);

  EXPECT_TRUE(scheduler.cancel(waiting)); // nothing of it runs: gone now
  EXPECT_THROW(scheduler.tagOf(waiting), std::out_of_range);
  EXPECT_FALSE(scheduler.cancel(running)); // two of its nodes still run
  EXPECT_EQ(scheduler.readyNodes(0), 0u);
  EXPECT_TRUE(scheduler.schedule(0).empty());
  EXPECT_TRUE(scheduler.finish(tasks[0]).empty());
  std::vector<Scheduler::Completed> done = scheduler.finish(tasks[1]);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].subgraph, running);
  EXPECT_EQ(done[0].tag, 1u);
  EXPECT_TRUE(scheduler.idle());
}

TEST(SchedulerSubgraphTest, CancellingATreeDropsItsUnsubmittedLevels) {
  Scheduler scheduler({{"internal", 0, {1, 2, 4}}}, 1);
  SubgraphId tree = scheduler.addTree(0, binaryTree(), 1).value();
  std::vector<Task> tasks = scheduler.schedule(0); // the bottom level
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(scheduler.readyNodes(0), 2u); // 4 and 5
  EXPECT_FALSE(scheduler.cancel(tree));
  EXPECT_EQ(scheduler.readyNodes(0), 0u);
  EXPECT_EQ(scheduler.finish(tasks[0]).size(), 1u);
  EXPECT_TRUE(scheduler.idle());
}

TEST(SchedulerSubgraphTest, IdsOfSubgraphsThatLeftAreNotReused) {
  Scheduler scheduler({{"cell", 0, {1}}}, 1);
  std::set<SubgraphId> seen;
  for (uint64_t round = 0; round < 50; ++round) {
    SubgraphId id = scheduler.addSubgraph(0, 1, round);
    EXPECT_TRUE(seen.insert(id).second);
    EXPECT_EQ(scheduler.tagOf(id), round);
    std::vector<Task> tasks = scheduler.schedule(0);
    ASSERT_EQ(tasks.size(), 1u);
    ASSERT_EQ(scheduler.finish(tasks[0]).size(), 1u);
    EXPECT_THROW(scheduler.tagOf(id), std::out_of_range);
  }
  EXPECT_TRUE(scheduler.idle());
}

TEST(SchedulerSubgraphTest, ATooSmallFollowUpTaskLeavesTreeNodesReady) {
  // Smallest batch 2: after the bottom level, one node (the root of the
  // small tree) would form a task of one, which only a first task may be.
  Scheduler scheduler({{"internal", 0, {2, 4}}}, 5);
  SubgraphId tree = scheduler.addTree(0, {2, 2, -1}, 1).value();
  std::vector<Task> tasks = scheduler.schedule(0);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(nodesOf(tasks[0], tree), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(scheduler.readyNodes(0), 1u);
  scheduler.finish(tasks[0]);
  std::vector<Task> next = scheduler.schedule(0);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(nodesOf(next[0], tree), (std::vector<uint32_t>{2}));
}

} // namespace

TEST(SchedulerSubgraphTest, WhatIsLeftOfASubgraphToMoveToAnotherWorker) {
  Scheduler scheduler({{"cell", 0, {1, 2, 4, 8}}}, 1); // one task a call
  SubgraphId tree = scheduler.addTree(0, binaryTree(), 1).value();
  std::vector<int32_t> successor;
  EXPECT_EQ(scheduler.unsubmitted(tree, &successor),
            (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(successor, binaryTree());
  std::vector<Task> first = scheduler.schedule(0);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(nodesOf(first[0], tree), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_TRUE(scheduler.running(tree));
  // Left: 4 and 5, both read by 6, which is at position 2 of what is left.
  EXPECT_EQ(scheduler.unsubmitted(tree, &successor),
            (std::vector<uint32_t>{4, 5, 6}));
  EXPECT_EQ(successor, (std::vector<int32_t>{2, 2, -1}));
  scheduler.finish(first[0]);
  EXPECT_FALSE(scheduler.running(tree));

  SubgraphId chain = scheduler.addSubgraph(0, 5, 2);
  std::vector<Task> second = scheduler.schedule(0);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(nodesOf(second[0], tree), (std::vector<uint32_t>{4, 5}));
  EXPECT_EQ(nodesOf(second[0], chain), (std::vector<uint32_t>{0}));
  EXPECT_TRUE(scheduler.running(chain));
  EXPECT_EQ(scheduler.unsubmitted(chain, nullptr),
            (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(scheduler.unsubmitted(tree, &successor),
            (std::vector<uint32_t>{6}));
  EXPECT_EQ(successor, (std::vector<int32_t>{-1}));
  scheduler.finish(second[0]);
  EXPECT_TRUE(scheduler.cancel(chain));
  EXPECT_FALSE(scheduler.running(chain));
  EXPECT_TRUE(scheduler.unsubmitted(chain, &successor).empty());
  EXPECT_TRUE(successor.empty());
}
