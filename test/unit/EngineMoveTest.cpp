//===- EngineMoveTest.cpp - Requests moved between workers ----------------===//
//
// Algorithm 1's moving of subgraphs with no node running, across two
// workers in manual rounds, for the LSTM, GRU (also with its input
// projection hoisted: the products in pool rows move with the request),
// seq2seq, attention and TreeLSTM examples: requests left on one worker move to
// the other (and with moving off stay), every result is what one worker
// computes, every row comes back, and a moved request can still be cancelled,
// also on its way between the workers; and with worker threads, waves of long
// and short requests, some cancelled, all answered right.
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "FaultTests.h"
#include "cellrun/Engine.h"
#include "engine/EngineTesting.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <random>
#include <thread>

using namespace cellrun;
using cellc::testing::expectSameBits;

namespace {

/// A long request for `model` (a few hundred nodes): random tokens or
/// features, a left-deep tree (one level a leaf) for the TreeLSTM.
std::string longRequest(const std::string &model, int id,
                        std::mt19937 &random) {
  std::string json = "{\"id\": \"m" + std::to_string(id) + "\", ";
  auto list = [&](int count, auto item) {
    std::string items;
    for (int k = 0; k < count; ++k)
      items += (k ? ", " : "") + item(k);
    return "[" + items + "]";
  };
  auto token = [&](int) { return std::to_string(1 + random() % 400); };
  if (model == "treelstm") {
    int leaves = 40 + id;
    std::string nodes =
        list(leaves, [&](int) { return "{\"token\": " + token(0) + "}"; });
    nodes.pop_back();
    for (int k = 1; k < leaves; ++k) // joins the tree so far with leaf k
      nodes += ", {\"children\": [" +
               std::to_string(k == 1 ? 0 : leaves + k - 2) + ", " +
               std::to_string(k) + "]}";
    return json + "\"nodes\": " + nodes + "]}";
  }
  if (model == "gru" || model == "gru_step") {
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    return json + "\"steps\": " +
           list(60 + 5 * id,
                [&](int) {
                  return "{\"x\": " +
                         list(64,
                              [&](int) {
                                return std::to_string(value(random));
                              }) +
                         "}";
                }) +
           "}";
  }
  // Short sources and long decodes for seq2seq (the attention example
  // attends over at most 50 source steps): most moves are of decoders.
  json += "\"tokens\": " +
          list(model == "lstm" ? 100 + 10 * id : 20 + 2 * id, token);
  if (model != "lstm")
    json += ", \"max_decode_length\": 60";
  return json + "}";
}

/// Two workers in manual rounds admit one request each a round while
/// their rooms are equal, the first worker first: the even requests go to
/// the first, the odd ones to the second. Once all are admitted the odd
/// ones are cancelled, which leaves the first worker with six requests and
/// the second with none, unless some move.
struct MoveScenario {
  explicit MoveScenario(const std::string &model)
      : artifact(cellc::testing::loadExampleArtifact(model)) {
    if (!artifact)
      return;
    std::mt19937 random(23);
    for (int i = 0; i < 12; ++i)
      texts.push_back(longRequest(model, i, random));
    EngineOptions options;
    options.startWorker = false;
    auto single = Engine::create(artifact, options).value();
    std::vector<std::future<RequestResult>> futures;
    for (const std::string &text : texts)
      futures.push_back(
          single->submit(single->parser().parse(text, "").value()));
    single->drain();
    for (auto &future : futures)
      together.push_back(future.get());
  }
  std::shared_ptr<const LoadedArtifact> artifact;
  std::vector<std::string> texts;
  std::vector<RequestResult> together; // one worker, all at once
  std::unique_ptr<Engine> pair(bool move) {
    EngineOptions options;
    options.workers = 2;
    options.admissionSlack = 0; // strict turns: the spread the cases build
    options.startWorker = false;
    options.moveRequests = move;
    auto engine = Engine::create(artifact, options);
    EXPECT_TRUE(engine.ok()) << engine.status().toString();
    return engine.ok() ? std::move(engine).value() : nullptr;
  }
  /// Submits every request with a cancel token, runs rounds until all are
  /// admitted, and cancels the odd ones (`idle` 1) or the even ones (0).
  void start(Engine &engine, std::vector<std::future<RequestResult>> &futures,
             std::vector<std::shared_ptr<CancelToken>> &tokens,
             size_t idle = 1) {
    for (const std::string &text : texts) {
      Request request = engine.parser().parse(text, "").value();
      tokens.push_back(request.cancel = std::make_shared<CancelToken>());
      futures.push_back(engine.submit(std::move(request)));
    }
    while (engine.stats().waiting > 0 && engine.runOnce()) {
    }
    for (size_t i = idle; i < tokens.size(); i += 2)
      engine.cancel(tokens[i], "leaving one worker idle");
  }
};

class EngineMoveTest : public ::testing::TestWithParam<const char *> {};

TEST_P(EngineMoveTest, RequestsLeftOnOneWorkerMoveToTheOther) {
  MoveScenario scenario(GetParam());
  ASSERT_TRUE(scenario.artifact);
  for (bool move : {true, false}) {
    auto engine = scenario.pair(move);
    ASSERT_TRUE(engine);
    uint64_t idleRows = engineRowsInUse(*engine);
    std::vector<std::future<RequestResult>> futures;
    std::vector<std::shared_ptr<CancelToken>> tokens;
    scenario.start(*engine, futures, tokens);
    uint64_t secondBefore = engine->stats().workerTasks[1];
    while (engine->runOnce()) {
    }
    engine->drain();
    for (size_t i = 0; i < futures.size(); ++i) {
      RequestResult result = futures[i].get();
      if (i % 2 && result.status.code() == StatusCode::Cancelled)
        continue; // an odd one that had ended by then has its result
      expectSameBits(result, scenario.together[i],
                     "request " + std::to_string(i));
    }
    EngineStats stats = engine->stats();
    if (move) {
      // Half of what the first holds; later the first may run dry and
      // take some back.
      EXPECT_GE(stats.requestsMoved, 2u);
      EXPECT_GT(stats.workerTasks[1], secondBefore) << "the second idled";
    } else {
      EXPECT_EQ(stats.requestsMoved, 0u);
      EXPECT_EQ(stats.workerTasks[1], secondBefore);
    }
    EXPECT_EQ(engineRowsInUse(*engine), idleRows) << "move " << move;
    EXPECT_EQ(stats.poolBytesReserved, 0u) << "move " << move;
  }
}

/// The scenario on two workers with moves, run until some requests have
/// moved (the requests of worker `idle`'s parity cancelled at the start);
/// then requests first, first + 2, ... are cancelled: those that ended
/// before have their results; every other one, wherever it is, must end
/// Cancelled (the moved ones at least), and every row and reservation
/// comes back. `takeFirst`: one more round, so that the moved requests
/// are taken before the cancellations.
void cancelAfterMoving(const char *model, size_t idle, bool takeFirst,
                       size_t first) {
  MoveScenario scenario(model);
  ASSERT_TRUE(scenario.artifact);
  auto engine = scenario.pair(true);
  ASSERT_TRUE(engine);
  uint64_t idleRows = engineRowsInUse(*engine);
  std::vector<std::future<RequestResult>> futures;
  std::vector<std::shared_ptr<CancelToken>> tokens;
  scenario.start(*engine, futures, tokens, idle);
  while (engine->stats().requestsMoved == 0 && engine->runOnce()) {
  }
  ASSERT_GT(engine->stats().requestsMoved, 0u);
  if (takeFirst)
    engine->runOnce();
  std::vector<bool> endedBefore(tokens.size(), false);
  for (size_t i = first; i < tokens.size(); i += 2) {
    endedBefore[i] = futures[i].wait_for(std::chrono::seconds(0)) ==
                     std::future_status::ready;
    engine->cancel(tokens[i], "cancelled after moving");
  }
  engine->drain();
  int cancelled = 0;
  for (size_t i = first; i < futures.size(); i += 2) {
    RequestResult result = futures[i].get();
    if (endedBefore[i]) {
      expectSameBits(result, scenario.together[i],
                     "request " + std::to_string(i));
      continue;
    }
    EXPECT_EQ(result.status.code(), StatusCode::Cancelled)
        << "request " << i << ": " << result.status.toString();
    ++cancelled;
  }
  EXPECT_GE(cancelled, 3) << "the moved ones at least";
  EXPECT_EQ(engineRowsInUse(*engine), idleRows);
  EXPECT_EQ(engine->stats().poolBytesReserved, 0u);
}

TEST_P(EngineMoveTest, AMovedRequestCanStillBeCancelled) {
  // Once requests have moved and the second worker has taken them, the
  // first worker's requests are cancelled, wherever they run now.
  cancelAfterMoving(GetParam(), /*idle=*/1, /*takeFirst=*/true, /*first=*/0);
}

TEST_P(EngineMoveTest, ARequestCancelledOnItsWayEndsWhereItArrives) {
  // The second worker is left with the requests this time: those it moves
  // wait for the first worker's next round, and are cancelled meanwhile
  // (their tokens already name the first worker).
  cancelAfterMoving(GetParam(), /*idle=*/0, /*takeFirst=*/false, /*first=*/1);
}

TEST(EngineMoveThreadsTest, WorkerThreadsMoveRequestsAndAnswerEveryOne) {
  // Two worker threads; waves of requests of very different lengths, every
  // fifth cancelled while it runs: whatever moves where and when, each
  // request ends with the bits of one worker or Cancelled, and every row
  // and reservation comes back (the sanitizer builds run this too).
  auto artifact = cellc::testing::loadExampleArtifact("lstm");
  ASSERT_TRUE(artifact);
  std::mt19937 random(41);
  std::vector<std::string> texts;
  for (int i = 0; i < 120; ++i) {
    int length = i % 3 == 0 ? 200 + int(random() % 100) : 1 + int(random() % 8);
    texts.push_back("{\"id\": \"t" + std::to_string(i) + "\", \"tokens\": [");
    for (int t = 0; t < length; ++t)
      texts.back() += (t ? ", " : "") + std::to_string(1 + random() % 999);
    texts.back() += "]}";
  }
  EngineOptions single;
  single.startWorker = false;
  auto alone = Engine::create(artifact, single).value();
  std::vector<std::future<RequestResult>> expected;
  for (const std::string &text : texts)
    expected.push_back(alone->submit(alone->parser().parse(text, "").value()));
  alone->drain();

  EngineOptions options;
  options.workers = 2;
  options.admissionSlack = 0; // strict turns: the spread the cases build
  options.executor.threads = 1;
  auto engine = Engine::create(artifact, options).value();
  std::vector<std::future<RequestResult>> futures;
  std::vector<std::shared_ptr<CancelToken>> tokens;
  for (size_t i = 0; i < texts.size(); ++i) {
    Request request = engine->parser().parse(texts[i], "").value();
    tokens.push_back(request.cancel = std::make_shared<CancelToken>());
    futures.push_back(engine->submit(std::move(request)));
    if (i % 30 == 29)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (i % 5 == 4)
      engine->cancel(tokens[i - 3], "cancelled while it runs");
  }
  for (size_t i = 0; i < futures.size(); ++i) {
    RequestResult result = futures[i].get();
    RequestResult want = expected[i].get();
    if (i % 5 == 1 && result.status.code() == StatusCode::Cancelled)
      continue;
    expectSameBits(result, want, "request " + std::to_string(i));
  }
  // Every result is in; the last rounds may still be giving rows back.
  EngineStats stats = engine->stats();
  for (int wait = 0;
       wait < 2000 && (stats.running > 0 || stats.poolBytesReserved > 0);
       ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    stats = engine->stats();
  }
  EXPECT_EQ(stats.running, 0u);
  EXPECT_EQ(stats.poolBytesReserved, 0u);
  EXPECT_EQ(stats.completed + stats.cancelled, texts.size());
  std::printf("worker threads: %llu of %zu requests moved\n",
              (unsigned long long)stats.requestsMoved, texts.size());
}

INSTANTIATE_TEST_SUITE_P(
    Examples, EngineMoveTest,
    ::testing::Values("lstm", "gru", "gru_step", "seq2seq", "attention",
                      "treelstm"),
    [](const ::testing::TestParamInfo<const char *> &info) {
      return std::string(info.param);
    });

} // namespace
