//===- EngineRoundsTest.cpp - What each round of the engine runs ----------===//
//
// The engine's rounds as its task records show them (EngineOptions::onTask):
// a tree's internal levels go into successive tasks of one round; a
// decoder's steps are issued back to back, at most a window ahead of the
// last token the host has read, and the steps issued past EOS are few;
// every task is recorded with its cell type and batch size. Also: the
// queue limit holds exactly under concurrent submitters, small pools
// make requests wait, never fail, when rounds overlap, and answered
// requests' entries wait (at most a limit of them) for the next submitter
// to free them.
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "cellrun/Engine.h"
#include "engine/EngineTesting.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace cellrun;
using cellc::testing::exampleArtifactPath;
using cellc::testing::loadArtifactOrFail;

namespace {

/// A manual-mode engine whose task records land in rounds_, one vector a
/// call of runOnce().
class RecordingEngine {
public:
  RecordingEngine(std::shared_ptr<const LoadedArtifact> artifact,
                  EngineOptions options = EngineOptions()) {
    options.startWorker = false;
    options.onTask = [this](const TaskRecord &record) {
      rounds_.back().push_back(record);
    };
    auto created = Engine::create(std::move(artifact), options);
    EXPECT_TRUE(created.ok()) << created.status().toString();
    if (created.ok())
      engine_ = std::move(created).value();
  }
  Engine &operator*() { return *engine_; }
  Engine *operator->() { return engine_.get(); }
  /// Runs rounds until every request is done.
  void drain() {
    do
      rounds_.emplace_back();
    while (engine_->runOnce());
  }
  const std::vector<std::vector<TaskRecord>> &rounds() const { return rounds_; }

private:
  std::unique_ptr<Engine> engine_;
  std::vector<std::vector<TaskRecord>> rounds_;
};

TEST(EngineRoundsTest, TreeLevelsRunInSuccessiveTasksOfOneRound) {
  auto artifact = loadArtifactOrFail(exampleArtifactPath("treelstm"));
  ASSERT_TRUE(artifact);
  RecordingEngine engine(artifact);
  // A complete binary tree of 8 leaves: levels of 4, 2 and 1 internal nodes.
  std::string json = R"({"id": "t", "nodes": [)";
  for (int leaf = 0; leaf < 8; ++leaf)
    json += "{\"token\": " + std::to_string(11 * leaf + 3) + "}, ";
  json += R"({"children": [0, 1]}, {"children": [2, 3]}, )"
          R"({"children": [4, 5]}, {"children": [6, 7]}, )"
          R"({"children": [8, 9]}, {"children": [10, 11]}, )"
          R"({"children": [12, 13]}]})";
  auto future = engine->submit(engine->parser().parse(json, "").value());
  engine.drain();
  ASSERT_TRUE(future.get().status.isOk());
  const auto &rounds = engine.rounds();
  ASSERT_GE(rounds.size(), 2u);
  ASSERT_EQ(rounds[0].size(), 1u); // every leaf in one task
  EXPECT_EQ(rounds[0][0].cellType, 0u);
  EXPECT_EQ(rounds[0][0].nodes, 8u);
  ASSERT_EQ(rounds[1].size(), 3u); // the three levels, back to back
  for (size_t t = 0; t < 3; ++t) {
    EXPECT_EQ(rounds[1][t].cellType, 1u);
    EXPECT_EQ(rounds[1][t].nodes, 4u >> t);
    EXPECT_GE(rounds[1][t].batchSize, rounds[1][t].nodes);
  }
}

TEST(EngineRoundsTest, DecoderStepsRunBackToBackWithinTheWindow) {
  auto artifact = loadArtifactOrFail(exampleArtifactPath("seq2seq"));
  ASSERT_TRUE(artifact);
  EngineOptions options;
  options.maxTasksToSubmit = 5;
  RecordingEngine engine(artifact, options);
  auto future = engine->submit(
      engine->parser()
          .parse(R"({"tokens": [5, 6, 7], "max_decode_length": 12})", "d")
          .value());
  engine.drain();
  RequestResult result = future.get();
  ASSERT_TRUE(result.status.isOk()) << result.status.toString();
  size_t decoded = result.find("tokens")->integers.size();
  uint32_t decoderNodes = 0, widestRound = 0;
  for (const auto &round : engine.rounds()) {
    uint32_t decoderTasks = 0;
    for (const TaskRecord &record : round)
      if (record.cellType == 1) {
        decoderNodes += record.nodes;
        ++decoderTasks;
      }
    widestRound = std::max(widestRound, decoderTasks);
  }
  // Five steps a round, each reading the token of the one before on the
  // device; no step runs past the limit, and at most four past an EOS.
  EXPECT_EQ(widestRound, 5u);
  EXPECT_GE(decoderNodes, decoded);
  if (result.stopReason == "limit")
    EXPECT_EQ(decoderNodes, 12u);
  else
    EXPECT_LE(decoderNodes, decoded + 4);
}

TEST(EngineRoundsTest, StepsIssuedPastEosAreFewAndDropped) {
  auto artifact = loadArtifactOrFail(CELL_SEQ2SEQ_EOS_ARTIFACT);
  ASSERT_TRUE(artifact);
  RecordingEngine engine(artifact);
  uint32_t idle = engineExecutor(*engine).rowsInUse();
  std::vector<std::future<RequestResult>> futures;
  for (int i = 0; i < 40; ++i)
    futures.push_back(
        engine->submit(engine->parser()
                           .parse("{\"tokens\": [" + std::to_string(3 + i) +
                                      ", " + std::to_string(200 - i) + "]}",
                                  "e")
                           .value()));
  engine.drain();
  uint64_t decoded = 0, atEos = 0;
  for (auto &future : futures) {
    RequestResult result = future.get();
    ASSERT_TRUE(result.status.isOk()) << result.status.toString();
    decoded += result.find("tokens")->integers.size();
    atEos += result.stopReason == "eos";
  }
  uint64_t decoderNodes = 0;
  for (const auto &round : engine.rounds())
    for (const TaskRecord &record : round)
      decoderNodes += record.cellType == 1 ? record.nodes : 0;
  EXPECT_GT(atEos, 20u);
  EXPECT_GE(decoderNodes, decoded);
  EXPECT_LE(decoderNodes, decoded + 4 * atEos); // window 5: 4 steps ahead
  EXPECT_EQ(engineExecutor(*engine).rowsInUse(), idle); // dropped steps' too
}

TEST(EngineRoundsTest, EveryTaskIsRecordedWithItsCellAndBatchSize) {
  auto artifact = loadArtifactOrFail(exampleArtifactPath("seq2seq"));
  ASSERT_TRUE(artifact);
  RecordingEngine engine(artifact);
  for (int i = 0; i < 30; ++i)
    engine->submit(engine->parser()
                       .parse("{\"tokens\": [" + std::to_string(1 + i) +
                                  ", 9, 4], \"max_decode_length\": 6}",
                              "r")
                       .value());
  engine.drain();
  EngineStats stats = engine->stats();
  std::vector<uint64_t> tasks(2, 0), nodes(2, 0), batch(2, 0);
  for (const auto &round : engine.rounds())
    for (const TaskRecord &record : round) {
      ASSERT_LT(record.cellType, 2u);
      ++tasks[record.cellType];
      nodes[record.cellType] += record.nodes;
      batch[record.cellType] += record.batchSize;
      EXPECT_FALSE(record.failed);
      EXPECT_GE(record.batchSize, record.nodes);
      EXPECT_LE(record.submitted, record.finished);
    }
  for (uint32_t cell = 0; cell < 2; ++cell) {
    EXPECT_EQ(tasks[cell], stats.cells[cell].tasks);
    EXPECT_EQ(nodes[cell], stats.cells[cell].nodes);
    EXPECT_EQ(batch[cell], stats.cells[cell].batchSizeSum);
  }
  EXPECT_EQ(nodes[0], 90u); // three encoder steps each
}

TEST(EngineRoundsTest, ConcurrentSubmittersNeverExceedTheQueueLimit) {
  auto artifact = loadArtifactOrFail(exampleArtifactPath("lstm"));
  ASSERT_TRUE(artifact);
  EngineOptions options;
  options.startWorker = false;
  options.maxQueue = 50;
  options.workers = 2;
  auto engine = Engine::create(artifact, options).value();
  std::atomic<int> accepted{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        Status status = engine->submit(
            engine->parser().parse(R"({"tokens": [4, 5]})", "q").value(),
            [](RequestResult) {});
        (status.isOk() ? accepted : refused)++;
        if (!status.isOk()) {
          EXPECT_EQ(status.code(), StatusCode::ResourceExhausted);
        }
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(accepted.load(), 50);
  EXPECT_EQ(refused.load(), 150);
  engine->drain();
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.completed, 50u);
  EXPECT_EQ(stats.rejected, 150u);
  EXPECT_EQ(stats.waiting, 0u);
}

TEST(EngineRoundsTest, RefuseForLoadWhileTheQueueIsFull) {
  auto artifact = loadArtifactOrFail(exampleArtifactPath("lstm"));
  ASSERT_TRUE(artifact);
  EngineOptions options;
  options.startWorker = false;
  options.maxQueue = 2;
  auto engine = Engine::create(artifact, options).value();
  auto submitOne = [&] {
    return engine->submit(
        engine->parser().parse(R"({"tokens": [4, 5, 6]})", "q").value(),
        [](RequestResult) {});
  };
  EXPECT_TRUE(engine->refuseForLoad().isOk());
  ASSERT_TRUE(submitOne().isOk());
  EXPECT_TRUE(engine->refuseForLoad().isOk());
  ASSERT_TRUE(submitOne().isOk());
  // Full: the check refuses as submit would, and counts the refusal.
  Status full = engine->refuseForLoad();
  EXPECT_EQ(full.code(), StatusCode::ResourceExhausted);
  EXPECT_NE(full.message().find("overloaded: 2 requests are waiting"),
            std::string::npos)
      << full.message();
  EXPECT_EQ(submitOne().code(), StatusCode::ResourceExhausted);
  EXPECT_EQ(engine->stats().rejected, 2u);
  EXPECT_EQ(engine->stats().submitted, 2u);
  engine->drain();
  EXPECT_TRUE(engine->refuseForLoad().isOk());
  EXPECT_EQ(engine->stats().completed, 2u);
}

TEST(EngineRoundsTest, OverlappedRoundsWithSmallPoolsWaitNeverFail) {
  auto artifact = loadArtifactOrFail(exampleArtifactPath("lstm"));
  ASSERT_TRUE(artifact);
  EngineOptions options;
  options.startWorker = false;
  options.poolRows = 40;
  options.overlapRounds = EngineOptions::Overlap::On;
  auto engine = Engine::create(artifact, options).value();
  uint32_t idle = engineExecutor(*engine).rowsInUse();
  std::vector<std::future<RequestResult>> futures;
  for (int i = 0; i < 30; ++i) {
    std::string tokens = "[";
    for (int t = 0; t <= i % 9; ++t)
      tokens += (t ? ", " : "") + std::to_string(7 * t + i + 1);
    futures.push_back(engine->submit(
        engine->parser().parse("{\"tokens\": " + tokens + "]}", "s").value()));
    if (i % 3 == 0)
      engine->runOnce();
  }
  engine->drain();
  for (auto &future : futures) {
    RequestResult result = future.get();
    EXPECT_TRUE(result.status.isOk()) << result.status.toString();
  }
  EXPECT_EQ(engineExecutor(*engine).rowsInUse(), idle);
}

} // namespace

namespace {

/// The engine's time split: with the cpu backend delivering reads at wait
/// (as the cuda backend does), the delivery time is counted, within the
/// executor's time; the cpu backend never blocks on a device.
TEST(EngineRoundsTest, ExecutorTimeSplitsIntoBlockedAndDelivering) {
  auto artifact = loadArtifactOrFail(exampleArtifactPath("lstm"));
  ASSERT_TRUE(artifact);
  for (bool readsAtWait : {false, true}) {
    EngineOptions options;
    options.executor.readsAtWait = readsAtWait;
    RecordingEngine engine(artifact, options);
    for (int i = 0; i < 40; ++i)
      engine->submit(engine->parser()
                         .parse("{\"tokens\": [3, 9, 4, 7, 1, 2]}", "r")
                         .value());
    engine.drain();
    EngineStats stats = engine->stats();
    EXPECT_GT(stats.executorSeconds, 0.0);
    EXPECT_EQ(stats.executorBlockedSeconds, 0.0);
    if (readsAtWait) {
      EXPECT_GT(stats.executorDeliverSeconds, 0.0);
      EXPECT_LE(stats.executorDeliverSeconds, stats.executorSeconds);
    } else {
      EXPECT_EQ(stats.executorDeliverSeconds, 0.0);
    }
  }
}

TEST(EngineRoundsTest, AnsweredRequestsAreFreedByTheNextSubmitter) {
  auto artifact = loadArtifactOrFail(exampleArtifactPath("lstm"));
  ASSERT_TRUE(artifact);
  RecordingEngine engine(artifact);
  uint64_t limit = engineRetiredLimit();
  std::vector<std::future<RequestResult>> answers;
  for (uint64_t k = 0; k < limit + 40; ++k) {
    std::string json = "{\"id\": \"r" + std::to_string(k) +
                       "\", \"tokens\": [" + std::to_string(k % 97 + 1) +
                       ", 5, 9]}";
    answers.push_back(engine->submit(engine->parser().parse(json, "").value()));
  }
  engine.drain();
  for (auto &answer : answers)
    ASSERT_TRUE(answer.get().status.isOk());
  // Every request answered: as many entries as may wait do, the worker
  // freed the others.
  EXPECT_EQ(engineRetiredEntries(*engine), limit);
  auto next = engine->submit(
      engine->parser().parse(R"({"id": "n", "tokens": [4, 2]})", "").value());
  EXPECT_EQ(engineRetiredEntries(*engine), 0u) << "the submitter freed them";
  engine.drain();
  ASSERT_TRUE(next.get().status.isOk());
  EXPECT_EQ(engineRetiredEntries(*engine), 1u);
}

} // namespace
