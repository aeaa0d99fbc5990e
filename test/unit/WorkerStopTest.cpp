//===- WorkerStopTest.cpp - A worker whose device is lost -----------------===//
//
// An injected Device fault makes one worker's executor lost, as a sticky
// CUDA error would. With two workers, the requests the stopped worker held
// fail with Unavailable naming it, every other request equals its result
// alone bit for bit, every row comes back and the other worker serves the
// next wave (manual rounds, and worker threads with requests arriving from
// another thread). With one worker, everything admitted or waiting fails,
// open sessions close and new requests are refused at once.
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "FaultTests.h"
#include "RandomRequests.h"
#include "cellrun/Engine.h"
#include "engine/EngineTesting.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace cellrun;
using cellc::testing::expectSameBits;
using cellc::testing::loadExampleArtifact;
using cellc::testing::randomRequest;
using cellc::testing::submitInTrickles;

namespace {

std::unique_ptr<Engine> makeEngine(std::shared_ptr<const LoadedArtifact> model,
                                   uint32_t workers, bool threads,
                                   FaultInjector inject = {},
                                   uint32_t poolRows = 0) {
  EngineOptions options;
  options.workers = workers;
  // Strict turns: each worker gets some of a few requests (asserted).
  options.admissionSlack = 0;
  options.startWorker = threads;
  options.executor.threads = 1;
  if (poolRows)
    options.poolRows = poolRows;
  auto engine =
      createEngineForTesting(std::move(model), options, std::move(inject));
  EXPECT_TRUE(engine.ok()) << engine.status().toString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

/// Device faults at tasks `at` .. `at + count - 1` submitted (over every
/// worker) once armed.
struct DeviceLoss {
  std::atomic<bool> armed{false}, fired{false};
  std::atomic<uint64_t> calls{0};
  uint64_t at = 1, count = 1;
  FaultInjector injector() {
    return [this](FaultPoint point) {
      if (!armed || point != FaultPoint::Device)
        return Status::ok();
      uint64_t call = ++calls;
      if (call < at || call >= at + count)
        return Status::ok();
      fired = true;
      return Status(StatusCode::Internal, "injected device loss");
    };
  }
};

/// A random LSTM request of up to `length` tokens (at least `minimum`).
Request lstmRequest(const Engine &engine, int id, std::mt19937 &random,
                    int length, SessionChunk session = {}, size_t minimum = 1) {
  Request request;
  do
    request = engine.parser()
                  .parse(randomRequest("lstm", id, random, length), "")
                  .value();
  while (request.steps.size() < minimum);
  request.session = session;
  return request;
}

std::vector<RequestResult>
resultsAlone(std::shared_ptr<const LoadedArtifact> model,
             const std::vector<std::string> &texts) {
  auto alone = makeEngine(model, 1, false);
  std::vector<RequestResult> results;
  for (const std::string &text : texts) {
    auto future = alone->submit(alone->parser().parse(text, "").value());
    alone->drain();
    results.push_back(future.get());
  }
  return results;
}

void expectStopped(const RequestResult &result, const std::string &what) {
  EXPECT_EQ(result.status.code(), StatusCode::Unavailable)
      << what << ": " << result.status.toString();
  EXPECT_NE(result.status.message().find("stopped serving: the device "
                                         "stopped: injected device loss"),
            std::string::npos)
      << what << ": " << result.status.toString();
  EXPECT_TRUE(result.outputs.empty()) << what;
}

class WorkerStopTest : public ::testing::TestWithParam<const char *> {};

TEST_P(WorkerStopTest, TheOtherWorkerServesOn) {
  const char *model = GetParam();
  auto artifact = loadExampleArtifact(model);
  ASSERT_TRUE(artifact);
  std::mt19937 random(5);
  constexpr int kRequests = 100;
  std::vector<std::string> texts;
  for (int i = 0; i < kRequests; ++i)
    texts.push_back(randomRequest(model, i, random, 12));
  std::vector<RequestResult> expected = resultsAlone(artifact, texts);

  DeviceLoss loss;
  loss.at = 40;
  auto engine = makeEngine(artifact, 2, false, loss.injector());
  ASSERT_TRUE(engine);
  uint32_t idle0 = engineExecutor(*engine, 0).rowsInUse();
  uint32_t idle1 = engineExecutor(*engine, 1).rowsInUse();
  loss.armed = true;
  std::vector<std::future<RequestResult>> futures =
      submitInTrickles(*engine, texts, random);
  ASSERT_TRUE(loss.fired);
  EXPECT_EQ(engine->stats().workersInService, 1u);
  int failed = 0;
  for (int i = 0; i < kRequests; ++i) {
    RequestResult result = futures[i].get();
    std::string what = "request " + std::to_string(i);
    if (result.status.isOk()) {
      expectSameBits(result, expected[i], what);
      continue;
    }
    ++failed;
    expectStopped(result, what);
  }
  EXPECT_GT(failed, 0);
  EXPECT_LT(failed, kRequests) << "the other worker must serve the rest";
  EXPECT_EQ(engineExecutor(*engine, 0).rowsInUse(), idle0);
  EXPECT_EQ(engineExecutor(*engine, 1).rowsInUse(), idle1);

  // The next wave: every request on the worker left, exact.
  std::vector<std::future<RequestResult>> again;
  for (int i = 0; i < 30; ++i)
    again.push_back(
        engine->submit(engine->parser().parse(texts[i], "").value()));
  engine->drain();
  for (int i = 0; i < 30; ++i)
    expectSameBits(again[i].get(), expected[i],
                   "after the stop, request " + std::to_string(i));
  std::printf("%s: the stop failed %d of %d requests\n", model, failed,
              kRequests);
}

TEST_P(WorkerStopTest, WorkerThreadsAnswerEveryRequest) {
  const char *model = GetParam();
  auto artifact = loadExampleArtifact(model);
  ASSERT_TRUE(artifact);
  std::mt19937 random(9);
  constexpr int kRequests = 80;
  std::vector<std::string> texts;
  for (int i = 0; i < kRequests; ++i)
    texts.push_back(randomRequest(model, i, random, 12));
  std::vector<RequestResult> expected = resultsAlone(artifact, texts);

  DeviceLoss loss;
  loss.at = 25;
  loss.armed = true;
  auto engine = makeEngine(artifact, 2, true, loss.injector());
  ASSERT_TRUE(engine);
  std::vector<std::future<RequestResult>> futures;
  for (int i = 0; i < kRequests; ++i) {
    futures.push_back(
        engine->submit(engine->parser().parse(texts[i], "").value()));
    if (i % 8 == 7)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  int failed = 0;
  for (int i = 0; i < kRequests; ++i) {
    std::string what = "request " + std::to_string(i);
    ASSERT_EQ(futures[i].wait_for(std::chrono::seconds(60)),
              std::future_status::ready)
        << what << " was never answered";
    RequestResult result = futures[i].get();
    if (result.status.isOk()) {
      expectSameBits(result, expected[i], what);
      continue;
    }
    ++failed;
    expectStopped(result, what);
  }
  EXPECT_TRUE(loss.fired);
  EXPECT_GT(failed, 0);
  EXPECT_EQ(engine->stats().workersInService, 1u);
}

INSTANTIATE_TEST_SUITE_P(Models, WorkerStopTest,
                         ::testing::Values("seq2seq", "attention", "treelstm"));

TEST(WorkerStop, TheLastWorkerFailsEverythingAndRefusesNewRequests) {
  auto artifact = loadExampleArtifact("lstm");
  ASSERT_TRUE(artifact);
  DeviceLoss loss;
  // A small pool: some requests wait for rows when the device is lost.
  auto engine = makeEngine(artifact, 1, false, loss.injector(), 64);
  ASSERT_TRUE(engine);
  uint32_t idle = engineExecutor(*engine).rowsInUse();
  std::mt19937 random(3);

  // A session with its state parked between chunks.
  Request first =
      engine->parser().parse(randomRequest("lstm", 0, random, 6), "").value();
  first.session = {7, true, false};
  auto opened = engine->submit(std::move(first));
  engine->drain();
  ASSERT_TRUE(opened.get().status.isOk());
  ASSERT_EQ(engine->stats().sessionsOpen, 1u);

  std::vector<std::future<RequestResult>> futures;
  for (int i = 1; i <= 40; ++i)
    futures.push_back(
        engine->submit(engine->parser()
                           .parse(randomRequest("lstm", i, random, 20), "")
                           .value()));
  engine->runOnce();
  ASSERT_GT(engine->stats().waiting, 0u) << "the pool should hold some back";
  ASSERT_GT(engine->stats().running, 0u);
  // Requests that ended in that first round are answered already.
  std::vector<bool> answered;
  for (auto &future : futures)
    answered.push_back(future.wait_for(std::chrono::seconds(0)) ==
                       std::future_status::ready);
  loss.armed = true; // the next task submitted loses the device
  engine->drain();
  ASSERT_TRUE(loss.fired);
  for (size_t i = 0; i < futures.size(); ++i) {
    RequestResult result = futures[i].get();
    if (answered[i]) {
      EXPECT_TRUE(result.status.isOk()) << result.status.toString();
      continue;
    }
    EXPECT_EQ(result.status.code(), StatusCode::Unavailable)
        << i << ": " << result.status.toString();
    EXPECT_NE(result.status.message().find("worker 0 stopped serving"),
              std::string::npos)
        << result.status.toString();
  }
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.workersInService, 0u);
  EXPECT_EQ(stats.sessionsOpen, 0u) << "its state was in the lost pools";
  EXPECT_EQ(stats.waiting, 0u);
  EXPECT_EQ(engineExecutor(*engine).rowsInUse(), idle);

  // Refused at once, with the cause: a new request and the session's next
  // chunk alike.
  Request next =
      engine->parser().parse(randomRequest("lstm", 50, random, 6), "").value();
  next.session = {7, false, true};
  RequestResult refused = engine->submit(std::move(next)).get();
  EXPECT_EQ(refused.status.code(), StatusCode::Unavailable);
  EXPECT_NE(refused.status.message().find("no worker is serving (worker 0 "
                                          "stopped serving"),
            std::string::npos)
      << refused.status.toString();
  // A front end's check before decoding refuses the same way.
  Status early = engine->refuseForLoad();
  EXPECT_EQ(early.code(), StatusCode::Unavailable);
  EXPECT_NE(early.message().find("no worker is serving"), std::string::npos)
      << early.toString();
}

TEST(WorkerStop, SessionsOfTheStoppedWorkerAreUnavailableTheOthersServe) {
  auto artifact = loadExampleArtifact("lstm");
  ASSERT_TRUE(artifact);
  DeviceLoss loss;
  auto engine = makeEngine(artifact, 2, false, loss.injector());
  ASSERT_TRUE(engine);
  uint32_t idle0 = engineExecutor(*engine, 0).rowsInUse();
  uint32_t idle1 = engineExecutor(*engine, 1).rowsInUse();
  std::mt19937 random(8);
  // Session 1 starts on worker 0; session 2 arrives while worker 0 is busy
  // and goes to worker 1, which has more room.
  auto first =
      engine->submit(lstmRequest(*engine, 1, random, 40, {1, true}, 30));
  engine->runOnce();
  auto second = engine->submit(lstmRequest(*engine, 2, random, 6, {2, true}));
  engine->runOnce();
  engine->drain();
  ASSERT_TRUE(first.get().status.isOk());
  ASSERT_TRUE(second.get().status.isOk());
  ASSERT_GT(engineExecutor(*engine, 0).rowsInUse(), idle0)
      << "session 1's state";
  ASSERT_GT(engineExecutor(*engine, 1).rowsInUse(), idle1)
      << "session 2's state";

  // Session 1 continues: its worker loses the device at that task.
  loss.armed = true;
  auto lost = engine->submit(lstmRequest(*engine, 3, random, 5, {1}));
  engine->drain();
  ASSERT_TRUE(loss.fired);
  RequestResult lostResult = lost.get();
  EXPECT_EQ(lostResult.status.code(), StatusCode::Unavailable)
      << lostResult.status.toString();
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.workersInService, 1u);
  EXPECT_EQ(stats.sessionsOpen, 1u) << "session 2 lives on worker 1";
  EXPECT_EQ(engineExecutor(*engine, 0).rowsInUse(), idle0);

  // Session 1's next chunk: Unavailable with the cause, not a client error.
  RequestResult again =
      engine->submit(lstmRequest(*engine, 4, random, 3, {1, false, true}))
          .get();
  EXPECT_EQ(again.status.code(), StatusCode::Unavailable)
      << again.status.toString();
  EXPECT_NE(again.status.message().find("was closed when its state was lost "
                                        "(worker 0 stopped serving"),
            std::string::npos)
      << again.status.toString();
  // Session 2 goes on and ends on worker 1; a new request is served there.
  auto ending =
      engine->submit(lstmRequest(*engine, 5, random, 4, {2, false, true}));
  auto plain = engine->submit(lstmRequest(*engine, 6, random, 9));
  engine->drain();
  EXPECT_TRUE(ending.get().status.isOk());
  EXPECT_TRUE(plain.get().status.isOk());
  stats = engine->stats();
  EXPECT_EQ(stats.sessionsOpen, 0u);
  EXPECT_EQ(stats.poolBytesReserved, 0u) << "every reservation given back";
  EXPECT_EQ(engineExecutor(*engine, 1).rowsInUse(), idle1);
  // A new session with the lost id starts afresh.
  auto fresh =
      engine->submit(lstmRequest(*engine, 7, random, 4, {1, true, true}));
  engine->drain();
  EXPECT_TRUE(fresh.get().status.isOk());
}

TEST(WorkerStop, BothWorkersStopWithSessionsOnEach) {
  auto artifact = loadExampleArtifact("lstm");
  ASSERT_TRUE(artifact);
  DeviceLoss loss;
  loss.count = 2; // the next two tasks, one on each worker
  auto engine = makeEngine(artifact, 2, false, loss.injector());
  ASSERT_TRUE(engine);
  uint32_t idle0 = engineExecutor(*engine, 0).rowsInUse();
  uint32_t idle1 = engineExecutor(*engine, 1).rowsInUse();
  std::mt19937 random(12);
  auto first =
      engine->submit(lstmRequest(*engine, 1, random, 40, {1, true}, 30));
  engine->runOnce();
  auto second =
      engine->submit(lstmRequest(*engine, 2, random, 40, {2, true}, 30));
  engine->runOnce();
  auto third = engine->submit(lstmRequest(*engine, 3, random, 6, {3, true}));
  engine->drain();
  for (auto *future : {&first, &second, &third})
    ASSERT_TRUE(future->get().status.isOk());
  ASSERT_GT(engineExecutor(*engine, 0).rowsInUse(), idle0);
  ASSERT_GT(engineExecutor(*engine, 1).rowsInUse(), idle1);

  loss.armed = true;
  auto on0 = engine->submit(lstmRequest(*engine, 4, random, 5, {1}));
  auto on1 = engine->submit(lstmRequest(*engine, 5, random, 5, {2}));
  auto plain = engine->submit(lstmRequest(*engine, 6, random, 5));
  engine->drain();
  for (auto *future : {&on0, &on1, &plain}) {
    RequestResult result = future->get();
    EXPECT_EQ(result.status.code(), StatusCode::Unavailable)
        << result.status.toString();
  }
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.workersInService, 0u);
  EXPECT_EQ(stats.sessionsOpen, 0u);
  EXPECT_EQ(stats.poolBytesReserved, 0u);
  EXPECT_EQ(engineExecutor(*engine, 0).rowsInUse(), idle0);
  EXPECT_EQ(engineExecutor(*engine, 1).rowsInUse(), idle1);
}

} // namespace
