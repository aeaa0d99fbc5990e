//===- EngineCancelTest.cpp - Requests ended early
//-------------------------===//
//
// Engine::cancel and cancelAll on a decoder that never produces its EOS (a
// runaway, test/data/seq2seq-runaway.yaml): a cancelled decode ends at the
// next round with Cancelled and gives every row back, while the requests
// beside it finish exactly as they would alone; a waiting request is
// answered at once; a stale token cancels nothing; a session's chunk
// cancelled while it waits closes its session; cancelAll ends what was
// submitted before it and nothing after. Also the step limit: a decode
// stops at RequestLimits::maxSteps tokens.
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "cellrun/Engine.h"
#include "engine/EngineTesting.h"

#include <gtest/gtest.h>

#include <chrono>

using namespace cellrun;
using cellc::testing::exampleArtifactPath;
using cellc::testing::loadArtifactOrFail;

namespace {

std::unique_ptr<Engine> manualEngine(const std::string &path,
                                     bool overlap = false,
                                     uint32_t maxSteps = 65536) {
  EngineOptions options;
  options.startWorker = false;
  options.limits.maxSteps = maxSteps;
  options.overlapRounds =
      overlap ? EngineOptions::Overlap::On : EngineOptions::Overlap::Off;
  auto engine = Engine::create(loadArtifactOrFail(path), options);
  EXPECT_TRUE(engine.ok()) << engine.status().toString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

Request parse(const Engine &engine, const std::string &json) {
  auto request = engine.parser().parse(json, "");
  EXPECT_TRUE(request.ok()) << request.status().toString();
  return std::move(request).value();
}

bool ready(std::future<RequestResult> &future) {
  return future.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

const char *kRunaway = CELL_SEQ2SEQ_RUNAWAY_ARTIFACT;

class EngineCancelTest : public ::testing::TestWithParam<bool> {};

TEST_P(EngineCancelTest, CancelledDecodeEndsAtTheNextRoundAndGivesRowsBack) {
  auto engine = manualEngine(kRunaway, GetParam());
  ASSERT_TRUE(engine);
  const std::string beside =
      R"({"id": "n", "tokens": [9, 4, 33, 2], "max_decode_length": 20})";
  Request runaway = parse(*engine, R"({"id": "r", "tokens": [5, 17, 3]})");
  auto token = std::make_shared<CancelToken>();
  runaway.cancel = token;
  auto cancelled = engine->submit(std::move(runaway));
  auto other = engine->submit(parse(*engine, beside));
  for (int round = 0; round < 12; ++round)
    ASSERT_TRUE(engine->runOnce());
  ASSERT_FALSE(ready(cancelled)) << "a runaway decode ends only when cancelled";
  EXPECT_GT(engine->stats().poolBytesReserved, 0u);

  engine->cancel(token, "its client went away");
  EXPECT_TRUE(token->cancelled());
  engine->runOnce();
  ASSERT_TRUE(ready(cancelled));
  RequestResult result = cancelled.get();
  EXPECT_EQ(result.status.code(), StatusCode::Cancelled);
  EXPECT_EQ(result.status.message(),
            "request r was cancelled: its client went away");
  EXPECT_TRUE(result.outputs.empty());

  engine->drain();
  RequestResult finished = other.get();
  ASSERT_TRUE(finished.status.isOk()) << finished.status.toString();
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.cancelled, 1u);
  EXPECT_EQ(stats.failed, 0u);
  EXPECT_EQ(stats.completed, 1u);
  EXPECT_EQ(stats.poolBytesReserved, 0u) << "every row came back";

  // The request beside it gives what it gives alone.
  auto alone = manualEngine(kRunaway, GetParam());
  auto aloneFuture = alone->submit(parse(*alone, beside));
  alone->drain();
  RequestResult expected = aloneFuture.get();
  ASSERT_EQ(finished.outputs.size(), expected.outputs.size());
  for (size_t o = 0; o < expected.outputs.size(); ++o) {
    EXPECT_EQ(finished.outputs[o].shape, expected.outputs[o].shape);
    EXPECT_EQ(finished.outputs[o].integers, expected.outputs[o].integers);
    EXPECT_EQ(finished.outputs[o].floats, expected.outputs[o].floats);
  }
  EXPECT_EQ(finished.stopReason, "limit");
}

INSTANTIATE_TEST_SUITE_P(Overlap, EngineCancelTest, ::testing::Bool(),
                         [](const auto &info) {
                           return info.param ? "Overlapped" : "InTurn";
                         });

TEST(EngineCancel, WaitingRequestIsAnsweredAtOnce) {
  auto engine = manualEngine(kRunaway);
  ASSERT_TRUE(engine);
  Request request = parse(*engine, R"({"id": "w", "tokens": [8]})");
  auto token = request.cancel = std::make_shared<CancelToken>();
  auto future = engine->submit(std::move(request));
  EXPECT_EQ(engine->stats().waiting, 1u);
  engine->cancel(token, "the caller changed its mind");
  ASSERT_TRUE(ready(future)) << "answered on the cancelling thread";
  EXPECT_EQ(future.get().status.code(), StatusCode::Cancelled);
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.waiting, 0u);
  EXPECT_EQ(stats.cancelled, 1u);
  EXPECT_FALSE(engine->runOnce()) << "nothing is left to run";
}

TEST(EngineCancel, TokenCancelledBeforeSubmitIsRefused) {
  auto engine = manualEngine(kRunaway);
  ASSERT_TRUE(engine);
  auto token = std::make_shared<CancelToken>();
  Request first = parse(*engine, R"({"id": "a", "tokens": [8]})");
  first.cancel = token;
  auto future = engine->submit(std::move(first));
  engine->cancel(token, "gone");
  Request again = parse(*engine, R"({"id": "b", "tokens": [8]})");
  again.cancel = token;
  Status refused = engine->submit(std::move(again), [](RequestResult) {
    ADD_FAILURE() << "a refused request is not answered";
  });
  EXPECT_EQ(refused.code(), StatusCode::Cancelled);
  EXPECT_EQ(refused.message(), "request b was cancelled: gone");
}

TEST(EngineCancel, StaleTokenCancelsNothing) {
  auto engine = manualEngine(kRunaway);
  ASSERT_TRUE(engine);
  const std::string json =
      R"({"id": "s", "tokens": [3, 1, 4], "max_decode_length": 5})";
  Request first = parse(*engine, json);
  auto stale = first.cancel = std::make_shared<CancelToken>();
  auto done = engine->submit(std::move(first));
  engine->drain();
  ASSERT_TRUE(done.get().status.isOk());
  // The next request takes the slot the first one had.
  Request second = parse(*engine, json);
  second.cancel = std::make_shared<CancelToken>();
  auto next = engine->submit(std::move(second));
  engine->runOnce();
  engine->cancel(stale, "too late");
  engine->drain();
  RequestResult result = next.get();
  EXPECT_TRUE(result.status.isOk()) << result.status.toString();
  EXPECT_EQ(engine->stats().cancelled, 0u);
  EXPECT_EQ(engine->stats().completed, 2u);
}

TEST(EngineCancel, CancelAllEndsWhatCameBeforeAndNothingAfter) {
  auto engine = manualEngine(kRunaway);
  ASSERT_TRUE(engine);
  std::vector<std::future<RequestResult>> before;
  for (int i = 0; i < 2; ++i)
    before.push_back(
        engine->submit(parse(*engine, "{\"id\": \"run" + std::to_string(i) +
                                          "\", \"tokens\": [7]}")));
  for (int round = 0; round < 5; ++round)
    engine->runOnce();
  // Submitted, not yet admitted.
  before.push_back(
      engine->submit(parse(*engine, R"({"id": "queued", "tokens": [6]})")));
  engine->cancelAll("the server is shutting down");
  auto after = engine->submit(parse(
      *engine, R"({"id": "after", "tokens": [6], "max_decode_length": 3})"));
  engine->drain();
  for (auto &future : before) {
    RequestResult result = future.get();
    EXPECT_EQ(result.status.code(), StatusCode::Cancelled) << result.id;
    EXPECT_NE(result.status.message().find("the server is shutting down"),
              std::string::npos);
  }
  EXPECT_TRUE(after.get().status.isOk());
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.cancelled, 3u);
  EXPECT_EQ(stats.completed, 1u);
  EXPECT_EQ(stats.poolBytesReserved, 0u);
}

// A chain request's result made on the submitting thread counts against
// the engine's budget for queued results while it waits, and is given back
// when it is cancelled there or when it starts.
TEST(EngineCancel, QueuedResultsGiveTheirBytesBack) {
  auto engine = manualEngine(exampleArtifactPath("lstm"));
  ASSERT_TRUE(engine);
  Request waiting = parse(*engine, R"({"id": "w", "tokens": [8, 9]})");
  auto token = waiting.cancel = std::make_shared<CancelToken>();
  auto cancelled = engine->submit(std::move(waiting));
  int64_t one = engineQueuedResultBytes(*engine);
  EXPECT_GT(one, 0);
  auto served =
      engine->submit(parse(*engine, R"({"id": "s", "tokens": [3, 4, 5]})"));
  EXPECT_GT(engineQueuedResultBytes(*engine), one);
  engine->cancel(token, "the caller changed its mind");
  engine->drain();
  EXPECT_EQ(cancelled.get().status.code(), StatusCode::Cancelled);
  RequestResult result = served.get();
  ASSERT_TRUE(result.status.isOk()) << result.status.toString();
  EXPECT_FALSE(result.outputs.empty());
  EXPECT_EQ(engineQueuedResultBytes(*engine), 0);
}

TEST(EngineCancel, WaitingChunkCancelledClosesItsSession) {
  auto engine = manualEngine(exampleArtifactPath("lstm"));
  ASSERT_TRUE(engine);
  std::vector<std::future<RequestResult>> chunks;
  auto token = std::make_shared<CancelToken>();
  for (int k = 0; k < 3; ++k) {
    Request chunk = parse(*engine, "{\"id\": \"c" + std::to_string(k) +
                                       "\", \"tokens\": [1, 2, 3, 4]}");
    chunk.session = {7, k == 0, k == 2};
    if (k == 1)
      chunk.cancel = token;
    chunks.push_back(engine->submit(std::move(chunk)));
  }
  engine->cancel(token, "gone");
  engine->drain();
  EXPECT_TRUE(chunks[0].get().status.isOk());
  EXPECT_EQ(chunks[1].get().status.code(), StatusCode::Cancelled);
  EXPECT_FALSE(chunks[2].get().status.isOk())
      << "the chunk after a cancelled one has no state to continue from";
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.sessionsOpen, 0u);
  EXPECT_EQ(stats.poolBytesReserved, 0u);
}

TEST(EngineCancel, DecodeStopsAtTheStepLimit) {
  auto engine = manualEngine(kRunaway, false, /*maxSteps=*/40);
  ASSERT_TRUE(engine);
  auto future =
      engine->submit(parse(*engine, R"({"id": "l", "tokens": [5, 6]})"));
  engine->drain();
  RequestResult result = future.get();
  ASSERT_TRUE(result.status.isOk()) << result.status.toString();
  EXPECT_EQ(result.stopReason, "limit");
  const OutputTensor *tokens = result.find("tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->integers.size(), 40u);
  auto refused = engine->parser().parse(
      R"({"id": "x", "tokens": [5], "max_decode_length": 41})", "");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(
                "from 1 to 40, the server's step limit (the model's "
                "max_decode_length 65536)"),
            std::string::npos)
      << refused.status().message();
}

} // namespace
