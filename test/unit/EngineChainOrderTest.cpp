//===- EngineChainOrderTest.cpp - Longest chains first, tasks spread ------===//
//
// EngineOptions::ChainOrder::LongestFirst on the persistent chain batch: a
// known set of requests runs in as many tasks as its longest request has
// steps, each task as large as the steps left spread over the tasks the
// longest still needs (checked against a model of the rule written here),
// with the bits the default order gives; while requests wait for room in
// the pools the tasks take every running request, as the default order
// does; requests with deadlines still go by deadline.
//
//===----------------------------------------------------------------------===//
#include "FaultTests.h"
#include "artifact/Artifact.h"
#include "cellrun/Engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
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
  std::vector<std::string> finished; // ids, in the order they finished
};

/// Requests of `lengths` tokens (random ids), all submitted before the first
/// round, run to the end with `order`.
ChainRun runAll(std::shared_ptr<const LoadedArtifact> artifact,
                const std::vector<uint32_t> &lengths,
                EngineOptions::ChainOrder order, uint32_t poolRows = 4096,
                bool deadlines = false) {
  ChainRun run;
  std::mutex mutex;
  EngineOptions options;
  options.startWorker = false;
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
    auto promise = std::make_shared<std::promise<RequestResult>>();
    futures.push_back(promise->get_future());
    Status submitted = engine.submit(
        std::move(request).value(), [&, promise](RequestResult result) {
          {
            std::lock_guard<std::mutex> lock(mutex);
            run.finished.push_back(result.id);
          }
          promise->set_value(std::move(result));
        });
    EXPECT_TRUE(submitted.isOk()) << submitted.toString();
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
  ChainRun longest =
      runAll(artifact, lengths, EngineOptions::ChainOrder::LongestFirst);
  ASSERT_EQ(longest.results.size(), lengths.size());
  ASSERT_EQ(turns.results.size(), lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i) {
    ASSERT_TRUE(longest.results[i].status.isOk())
        << longest.results[i].status.toString();
    expectSameBits(longest.results[i], turns.results[i],
                   "r" + std::to_string(i) + " longest first");
    if (HasFailure())
      return;
  }
  std::vector<uint32_t> want = spreadTaskRows(lengths, largest);
  EXPECT_EQ(want.size(), 60u) << "the model: one task a step of the longest";
  EXPECT_EQ(longest.taskRows, want);
  // The default order ends in tasks of the three long requests alone.
  EXPECT_GT(turns.taskRows.size(), want.size());
  EXPECT_EQ(turns.taskRows.back(), 1u);
  EXPECT_GT(*std::min_element(want.begin(), want.end()), 3u);
}

TEST(ChainOrderTest, WhileRequestsWaitForRoomEveryRunningRequestRuns) {
  // Pools for a few requests: the rest wait, and until they are all in,
  // tasks take every running request (the short ones finishing make room).
  auto artifact = loadLstm();
  ASSERT_TRUE(artifact);
  std::vector<uint32_t> lengths = tailedLengths();
  ChainRun turns =
      runAll(artifact, lengths, EngineOptions::ChainOrder::Turns, 96);
  ChainRun longest =
      runAll(artifact, lengths, EngineOptions::ChainOrder::LongestFirst, 96);
  ASSERT_EQ(longest.results.size(), lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i)
    ASSERT_TRUE(longest.results[i].status.isOk())
        << longest.results[i].status.toString();
  ASSERT_FALSE(longest.taskRows.empty());
  ASSERT_LT(longest.taskRows[0], lengths.size()) << "all fitted at once";
  // The first rounds are those of the default order.
  size_t same = 0;
  while (same < std::min(turns.taskRows.size(), longest.taskRows.size()) &&
         turns.taskRows[same] == longest.taskRows[same])
    ++same;
  EXPECT_GE(same, 5u) << "the first round differs from taking turns";
  uint64_t steps = std::accumulate(lengths.begin(), lengths.end(), 0ull);
  EXPECT_EQ(
      std::accumulate(longest.taskRows.begin(), longest.taskRows.end(), 0ull),
      steps);
}

TEST(ChainOrderTest, DeadlinesStillComeFirst) {
  // Requests with deadlines go by earliest deadline whatever the order
  // asked for: the tasks are those of the default order.
  auto artifact = loadLstm();
  ASSERT_TRUE(artifact);
  std::vector<uint32_t> lengths = tailedLengths();
  ChainRun longest = runAll(
      artifact, lengths, EngineOptions::ChainOrder::LongestFirst, 4096, true);
  ASSERT_EQ(longest.results.size(), lengths.size());
  ChainRun turns =
      runAll(artifact, lengths, EngineOptions::ChainOrder::Turns, 4096, true);
  EXPECT_EQ(longest.taskRows, turns.taskRows)
      << "with deadlines the order makes no difference";
}
