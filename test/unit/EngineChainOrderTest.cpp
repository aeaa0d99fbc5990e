//===- EngineChainOrderTest.cpp - Longest chains first, tasks spread ------===//
//
// EngineOptions::ChainOrder::LongestFirst on the persistent chain batch: a
// known set of requests runs in as many tasks as its longest request has
// steps, each task as large as the steps left spread over the tasks the
// longest still needs, at most the largest batch (checked against a model
// of the rule written here), with the bits the default order gives, also as
// on the GPU (rounds overlapped, rows read through the tasks); while
// requests wait for room in the pools the tasks take every running
// request, as the default order does, and once all are in they go longest
// first; requests with deadlines still go by deadline. (Taking turns among
// every request that fits ends in tasks of a few rows; by default a task's
// worth run at once.)
//
//===----------------------------------------------------------------------===//
#include "FaultTests.h"
#include "artifact/Artifact.h"
#include "cellrun/Engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

using namespace cellrun;
using cellc::testing::expectSameBits;

namespace {

std::shared_ptr<const LoadedArtifact> loadLstm() {
  auto loaded = loadArtifact(std::string(CELL_EXAMPLES_BUILD_DIR) +
                             "/lstm/model.cellpack");
  EXPECT_TRUE(loaded.ok()) << loaded.status().toString();
  return loaded.ok() ? std::move(loaded).value() : nullptr;
}

struct ChainRun {
  std::vector<uint32_t> taskRows; // in the order the tasks ran
  std::vector<RequestResult> results;
};

/// Requests of `lengths` tokens (random ids), all submitted before the first
/// round, run to the end with `order` (and EngineOptions::maxRunning).
ChainRun runAll(std::shared_ptr<const LoadedArtifact> artifact,
                const std::vector<uint32_t> &lengths,
                EngineOptions::ChainOrder order, uint32_t poolRows = 4096,
                bool deadlines = false, bool asOnTheGpu = false,
                uint32_t maxRunning = 0) {
  ChainRun run;
  EngineOptions options;
  options.startWorker = false;
  options.maxRunning = maxRunning;
  if (asOnTheGpu) { // rounds overlap, reads go through the tasks' buffers
    options.overlapRounds = EngineOptions::Overlap::On;
    options.readsThroughTasks = true;
  }
  options.chainOrder = order;
  options.poolRows = poolRows;
  options.maxQueue = static_cast<uint32_t>(lengths.size());
  options.onTask = [&](const TaskRecord &task) {
    run.taskRows.push_back(task.nodes);
  };
  auto created = Engine::create(std::move(artifact), options);
  EXPECT_TRUE(created.ok()) << created.status().toString();
  if (!created.ok())
    return run;
  Engine &engine = *created.value();
  std::mt19937 random(11);
  std::vector<std::future<RequestResult>> futures;
  for (size_t i = 0; i < lengths.size(); ++i) {
    std::string tokens;
    for (uint32_t t = 0; t < lengths[i]; ++t)
      tokens += (t ? ", " : "") + std::to_string(random() % 50);
    std::string json = "{\"id\": \"r" + std::to_string(i) +
                       "\", \"tokens\": [" + tokens + "]" +
                       (deadlines ? ", \"deadline_ms\": 60000" : "") + "}";
    auto request = engine.parser().parse(json, "line");
    EXPECT_TRUE(request.ok()) << request.status().toString();
    futures.push_back(engine.submit(std::move(request).value()));
  }
  engine.drain();
  for (auto &future : futures)
    run.results.push_back(future.get());
  return run;
}

/// The rule's task sizes, worked out from the lengths alone: each task
/// takes the requests with the most steps left, ceil(steps left / most
/// left) of them (at most `largest`). Which of equal ones it takes does not
/// change the sizes.
std::vector<uint32_t> spreadTaskRows(std::vector<uint32_t> left,
                                     uint32_t largest) {
  std::vector<uint32_t> sizes;
  while (true) {
    std::sort(left.begin(), left.end(), std::greater<uint32_t>());
    while (!left.empty() && left.back() == 0)
      left.pop_back();
    if (left.empty())
      return sizes;
    uint64_t stepsLeft = std::accumulate(left.begin(), left.end(), 0ull);
    uint64_t take = std::min<uint64_t>(
        {left.size(), largest, (stepsLeft + left[0] - 1) / left[0]});
    for (uint64_t k = 0; k < take; ++k)
      --left[k];
    sizes.push_back(static_cast<uint32_t>(take));
  }
}

/// 300 requests of 1-12 steps and a few of 30-60: a long tail.
std::vector<uint32_t> tailedLengths() {
  std::mt19937 random(5);
  std::vector<uint32_t> lengths;
  for (int i = 0; i < 300; ++i)
    lengths.push_back(1 + random() % 12);
  for (uint32_t longest : {60u, 41u, 30u})
    lengths.insert(lengths.begin() + longest, longest);
  return lengths;
}

/// Every request of `got` ended well with the bits it has in `want`.
void expectSameResults(const ChainRun &got, const ChainRun &want,
                       const std::string &what) {
  ASSERT_EQ(got.results.size(), want.results.size()) << what;
  for (size_t i = 0; i < got.results.size(); ++i) {
    expectSameBits(got.results[i], want.results[i],
                   "r" + std::to_string(i) + " " + what);
    if (::testing::Test::HasFailure())
      return;
  }
}

} // namespace

TEST(ChainOrderTest, NamesParse) {
  EXPECT_EQ(parseChainOrder("turns").value(), EngineOptions::ChainOrder::Turns);
  EXPECT_EQ(parseChainOrder("longest-first").value(),
            EngineOptions::ChainOrder::LongestFirst);
  auto bad = parseChainOrder("shortest");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("turns or longest-first"),
            std::string::npos)
      << bad.status().message();
  EXPECT_STREQ(chainOrderName(EngineOptions::ChainOrder::LongestFirst),
               "longest-first");
}

TEST(ChainOrderTest, LongestFirstRunsAsManyTasksAsTheLongestHasSteps) {
  auto artifact = loadLstm();
  ASSERT_TRUE(artifact);
  uint32_t largest = artifact->batchSizes(*artifact->cells()[0]).back();
  std::vector<uint32_t> lengths = tailedLengths();
  ChainRun turns = runAll(artifact, lengths, EngineOptions::ChainOrder::Turns);
  std::vector<uint32_t> want = spreadTaskRows(lengths, largest);
  EXPECT_EQ(want.size(), 60u) << "the model: one task a step of the longest";
  EXPECT_GT(*std::min_element(want.begin(), want.end()), 3u);
  EXPECT_LT(*std::max_element(want.begin(), want.end()), largest)
      << "here the spread alone sizes the tasks";
  for (bool asOnTheGpu : {false, true}) {
    std::string how =
        asOnTheGpu ? "longest first, as on the GPU" : "longest first";
    ChainRun longest =
        runAll(artifact, lengths, EngineOptions::ChainOrder::LongestFirst, 4096,
               false, asOnTheGpu);
    expectSameResults(longest, turns, how);
    EXPECT_EQ(longest.taskRows, want) << how;
  }
  // Taking turns among every request that fits ends in tasks of the three
  // long requests alone. (By default a task's worth run at once, here
  // with the three long ones among them from the start: as many tasks.)
  ChainRun everyOne =
      runAll(artifact, lengths, EngineOptions::ChainOrder::Turns, 4096, false,
             false, UINT32_MAX);
  expectSameResults(everyOne, turns, "turns, every request running");
  EXPECT_GT(everyOne.taskRows.size(), want.size());
  EXPECT_EQ(everyOne.taskRows.back(), 1u);
  EXPECT_EQ(turns.taskRows.size(), want.size());
}

TEST(ChainOrderTest, TheLargestBatchCapsATask) {
  // 600 short requests and one of 20 steps: the spread asks for more rows
  // than a task holds, so the first tasks are of the largest batch, and
  // the run takes more tasks than the longest request has steps.
  auto artifact = loadLstm();
  ASSERT_TRUE(artifact);
  uint32_t largest = artifact->batchSizes(*artifact->cells()[0]).back();
  std::mt19937 random(9);
  std::vector<uint32_t> lengths;
  for (int i = 0; i < 600; ++i)
    lengths.push_back(1 + random() % 12);
  lengths.insert(lengths.begin() + 100, 20);
  std::vector<uint32_t> want = spreadTaskRows(lengths, largest);
  ASSERT_EQ(want.front(), largest);
  ASSERT_GT(want.size(), 20u);
  ChainRun longest =
      runAll(artifact, lengths, EngineOptions::ChainOrder::LongestFirst);
  EXPECT_EQ(longest.taskRows, want);
  expectSameResults(longest,
                    runAll(artifact, lengths, EngineOptions::ChainOrder::Turns),
                    "capped");
}

TEST(ChainOrderTest, WhileRequestsWaitForRoomEveryRunningRequestRuns) {
  // Pools for a few requests: the rest wait, and until they are all in,
  // tasks take every running request (the short ones finishing make room);
  // after that the long ones go first.
  auto artifact = loadLstm();
  ASSERT_TRUE(artifact);
  std::vector<uint32_t> lengths = tailedLengths();
  ChainRun turns =
      runAll(artifact, lengths, EngineOptions::ChainOrder::Turns, 96);
  ChainRun longest =
      runAll(artifact, lengths, EngineOptions::ChainOrder::LongestFirst, 96);
  expectSameResults(longest, turns, "longest first, pools for a few");
  ASSERT_FALSE(longest.taskRows.empty());
  size_t same = 0;
  while (same < std::min(turns.taskRows.size(), longest.taskRows.size()) &&
         turns.taskRows[same] == longest.taskRows[same])
    ++same;
  EXPECT_GE(same, 5u) << "the first round differs from taking turns";
  EXPECT_NE(longest.taskRows, turns.taskRows)
      << "never longest first once the queue had emptied";
}

TEST(ChainOrderTest, DeadlinesStillComeFirst) {
  // Requests with deadlines go by earliest deadline whatever the order
  // asked for: the tasks are those of the default order.
  auto artifact = loadLstm();
  ASSERT_TRUE(artifact);
  std::vector<uint32_t> lengths = tailedLengths();
  ChainRun longest = runAll(
      artifact, lengths, EngineOptions::ChainOrder::LongestFirst, 4096, true);
  ChainRun turns =
      runAll(artifact, lengths, EngineOptions::ChainOrder::Turns, 4096, true);
  EXPECT_EQ(longest.taskRows, turns.taskRows)
      << "with deadlines the order makes no difference";
  expectSameResults(longest, turns, "with deadlines");
}
