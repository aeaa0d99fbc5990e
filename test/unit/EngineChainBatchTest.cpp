//===- EngineChainBatchTest.cpp - Chains run from the persistent batch ----===//
//
// The persistent chain batch (EngineOptions::chainBatch, on by default for
// chain models on the CPU) against the scheduler's path with it off, for
// every chain example: a few hundred requests arriving at random rounds
// (more than a task holds at once, so tasks of both shapes run) give the
// same bits, every row comes back, and the batch's tasks are counted only
// when it is on; also as on the GPU (rounds overlapped, the rows the host
// reads written into the results as each task completes; requests cancelled
// with tasks in flight, or failing in the middle of a round, keep their
// outputs until those tasks are done). By default a worker runs one task's
// worth of requests at once (EngineOptions::maxRunning), the rest waiting,
// or as many as it is told; with one task a round and more running
// requests than it holds, every request still gets its turn, no task is
// larger than the largest batch, and requests with the earliest deadlines
// start beyond the cap and run first.
//
//===----------------------------------------------------------------------===//
#include "FaultTests.h"
#include "RandomRequests.h"
#include "cellrun/Engine.h"
#include "engine/EngineTesting.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

using namespace cellrun;
using cellc::testing::expectSameBits;
using cellc::testing::randomRequest;

namespace {

std::shared_ptr<const LoadedArtifact> loadExample(const std::string &model) {
  auto loaded = loadArtifact(std::string(CELL_EXAMPLES_BUILD_DIR) + "/" +
                             model + "/model.cellpack");
  EXPECT_TRUE(loaded.ok()) << loaded.status().toString();
  return loaded.ok() ? std::move(loaded).value() : nullptr;
}

std::unique_ptr<Engine>
manualEngine(std::shared_ptr<const LoadedArtifact> artifact, bool chainBatch,
             uint32_t maxTasks = 5,
             std::function<void(const TaskRecord &)> onTask = nullptr,
             bool asOnTheGpu = false, uint32_t maxRunning = 0) {
  EngineOptions options;
  options.startWorker = false;
  options.chainBatch = chainBatch;
  options.maxRunning = maxRunning;
  if (asOnTheGpu) { // rounds overlap, reads go through the tasks' buffers
    options.overlapRounds = EngineOptions::Overlap::On;
    options.readsThroughTasks = true;
  }
  options.maxTasksToSubmit = maxTasks;
  options.onTask = std::move(onTask);
  auto engine = Engine::create(std::move(artifact), options);
  EXPECT_TRUE(engine.ok()) << engine.status().toString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

/// `texts` served by `engine`, arriving a few at a time between rounds
/// (the same arrivals for the same seed).
/// With `outputs`, request i asks for outputs(i) only.
std::vector<RequestResult>
serve(Engine &engine, const std::vector<std::string> &texts, unsigned seed,
      std::function<std::vector<std::string>(size_t)> outputs = nullptr) {
  std::mt19937 random(seed);
  std::vector<std::future<RequestResult>> futures;
  size_t next = 0;
  while (next < texts.size()) {
    int arrivals = std::uniform_int_distribution<int>(0, 40)(random);
    for (int a = 0; a < arrivals && next < texts.size(); ++a, ++next) {
      auto request = engine.parser().parse(texts[next], "line");
      EXPECT_TRUE(request.ok()) << request.status().toString();
      if (outputs && request.ok())
        request.value().outputs = outputs(next);
      futures.push_back(engine.submit(std::move(request).value()));
    }
    engine.runOnce();
  }
  engine.drain();
  std::vector<RequestResult> results;
  for (auto &future : futures)
    results.push_back(future.get());
  return results;
}

class ChainBatchTest : public ::testing::TestWithParam<const char *> {};

TEST_P(ChainBatchTest, SameBitsAsTheSchedulerAndEveryRowBack) {
  std::string model = GetParam();
  auto artifact = loadExample(model);
  ASSERT_TRUE(artifact);
  std::mt19937 random(31);
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i)
    texts.push_back(randomRequest(model, i, random, 40));
  auto batch = manualEngine(artifact, true);
  auto gpuLike = manualEngine(artifact, true, 5, nullptr, true);
  auto scheduler = manualEngine(artifact, false);
  ASSERT_TRUE(batch && gpuLike && scheduler);
  uint64_t idleRows = engineRowsInUse(*batch);
  std::vector<RequestResult> want = serve(*scheduler, texts, 5);
  for (Engine *engine : {batch.get(), gpuLike.get()}) {
    std::string how = engine == batch.get() ? "" : " (as on the GPU)";
    std::vector<RequestResult> got = serve(*engine, texts, 5);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(got[i].status.isOk()) << got[i].status.toString();
      expectSameBits(got[i], want[i], model + " " + got[i].id + how);
      if (HasFailure())
        return;
    }
    EXPECT_EQ(engineRowsInUse(*engine), idleRows) << how;
    EngineStats on = engine->stats(), off = scheduler->stats();
    EXPECT_GT(on.chainBatchTasks, 0u) << "the batch was not used" << how;
    EXPECT_EQ(on.chainBatchTasks, on.cells[0].tasks) << "both paths" << how;
    EXPECT_EQ(off.chainBatchTasks, 0u);
    EXPECT_EQ(on.cells[0].nodes, off.cells[0].nodes) << "steps run" << how;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ChainBatchTest,
                         ::testing::Values("lstm", "gru", "mingru", "lnlstm",
                                           "stacked"),
                         [](const auto &info) {
                           return std::string(info.param);
                         });

TEST(ChainBatchTurnsTest, MoreRequestsThanATaskHoldsAllGetTheirTurn) {
  auto artifact = loadExample("lstm");
  ASSERT_TRUE(artifact);
  uint32_t largest = artifact->batchSizes(*artifact->cells()[0]).back();
  uint32_t biggest = 0;
  auto engine = manualEngine(
      artifact, true, 1,
      [&](const TaskRecord &task) { biggest = std::max(biggest, task.nodes); },
      false, 3 * largest);
  ASSERT_TRUE(engine);
  std::vector<std::future<RequestResult>> futures;
  for (uint32_t i = 0; i < 3 * largest; ++i)
    futures.push_back(
        engine->submit(engine->parser()
                           .parse("{\"id\": \"t" + std::to_string(i) +
                                      "\", \"tokens\": [3, 4]}",
                                  "line")
                           .value()));
  // One task a round, of at most `largest` rows, in turns: three rounds
  // give every request its first step, none its second yet.
  for (int round = 0; round < 3; ++round)
    engine->runOnce();
  EXPECT_EQ(biggest, largest);
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.cells[0].nodes, uint64_t(3 * largest));
  EXPECT_EQ(stats.completed, 0u) << "some requests ran twice before others";
  engine->drain();
  for (auto &future : futures)
    EXPECT_TRUE(future.get().status.isOk());
}

/// Request `id` of `steps` tokens from `first` on (wrapping below 43).
Request shortRequest(Engine &engine, const std::string &id, uint32_t steps,
                     uint32_t first = 3) {
  std::string tokens;
  for (uint32_t t = 0; t < steps; ++t)
    tokens += (t ? ", " : "") + std::to_string(3 + (first + t) % 40);
  return engine.parser()
      .parse("{\"id\": \"" + id + "\", \"tokens\": [" + tokens + "]}", "line")
      .value();
}

/// Requests t0, t1, ... of `steps` tokens each, submitted to `engine`.
std::vector<std::future<RequestResult>>
submitShort(Engine &engine, uint32_t count, uint32_t steps) {
  std::vector<std::future<RequestResult>> futures;
  for (uint32_t i = 0; i < count; ++i)
    futures.push_back(
        engine.submit(shortRequest(engine, "t" + std::to_string(i), steps, i)));
  return futures;
}

/// The lstm example's engine, each task's rows appended to `taskRows`.
std::unique_ptr<Engine> recordingLstm(std::vector<uint32_t> &taskRows,
                                      uint32_t maxTasks, bool asOnTheGpu,
                                      uint32_t maxRunning) {
  auto artifact = loadExample("lstm");
  if (!artifact)
    return nullptr;
  return manualEngine(
      artifact, true, maxTasks,
      [&taskRows](const TaskRecord &task) { taskRows.push_back(task.nodes); },
      asOnTheGpu, maxRunning);
}

/// Rounds of `engine` until `count` requests have ended (at most `limit`):
/// how many it took.
int roundsUntilEnded(Engine &engine, uint64_t count, int limit = 100) {
  int rounds = 0;
  while (rounds < limit &&
         engine.stats().completed + engine.stats().failed < count) {
    engine.runOnce();
    ++rounds;
  }
  return rounds;
}

TEST(ChainBatchTurnsTest, OneTasksWorthRunsAtOnceByDefault) {
  // Three tasks' worth of two-step requests, one task a round: the first
  // `largest` run (the rest wait) and end after two rounds, before any
  // other starts; taking turns among all of them, none would have ended.
  auto artifact = loadExample("lstm");
  ASSERT_TRUE(artifact);
  uint32_t largest = artifact->batchSizes(*artifact->cells()[0]).back();
  std::vector<uint32_t> taskRows;
  auto engine = recordingLstm(taskRows, 1, false, 0);
  ASSERT_TRUE(engine);
  auto futures = submitShort(*engine, 3 * largest, 2);
  engine->runOnce();
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.running, largest);
  EXPECT_EQ(stats.waiting, 2 * largest);
  engine->runOnce();
  stats = engine->stats();
  EXPECT_EQ(stats.completed, uint64_t(largest))
      << "the running requests end before the waiting ones start";
  EXPECT_EQ(stats.running, 0u); // the next start in the next round
  engine->drain();
  EXPECT_EQ(taskRows, std::vector<uint32_t>(6, largest));
  for (auto &future : futures)
    EXPECT_TRUE(future.get().status.isOk());
}

TEST(ChainBatchTurnsTest, MaxRunningCapsTheRequestsRunningAtOnce) {
  // Told to run five at once: every round's tasks hold five rows (five
  // steps of the same requests), never more, and every request ends with
  // the bits it has when all run at once.
  std::vector<uint32_t> taskRows, allRows;
  auto capped = recordingLstm(taskRows, 5, false, 5);
  auto all = recordingLstm(allRows, 5, false, 1000);
  ASSERT_TRUE(capped && all);
  auto futures = submitShort(*capped, 23, 5);
  auto reference = submitShort(*all, 23, 5);
  for (int round = 0; round < 100 && roundsUntilEnded(*capped, 23, 1) == 1;
       ++round)
    EXPECT_LE(capped->stats().running, 5u);
  all->drain();
  ASSERT_EQ(taskRows.size(), 25u) << "five rounds of five full tasks";
  EXPECT_EQ(taskRows.front(), 5u);
  EXPECT_EQ(taskRows.back(), 3u); // the last three requests
  EXPECT_EQ(allRows.front(), 23u);
  for (size_t i = 0; i < futures.size(); ++i)
    expectSameBits(futures[i].get(), reference[i].get(),
                   "t" + std::to_string(i));
}

TEST(ChainBatchTurnsTest, RequestsWithEveryStepBoundDoNotCountAgainstTheCap) {
  // As on the GPU (rounds overlapped): four requests of five steps bind
  // every step in one round and end only when it completes, after the next
  // round is bound; that round takes the next four already. Twelve such
  // requests take three rounds of tasks and one more to complete the last
  // (counted against the cap, they would leave every other round empty).
  std::vector<uint32_t> taskRows;
  auto engine = recordingLstm(taskRows, 5, true, 4);
  ASSERT_TRUE(engine);
  auto futures = submitShort(*engine, 12, 5);
  EXPECT_EQ(roundsUntilEnded(*engine, 12, 20), 4);
  EXPECT_EQ(taskRows, std::vector<uint32_t>(15, 4));
  for (auto &future : futures)
    EXPECT_TRUE(future.get().status.isOk());
}

TEST(ChainBatchTurnsTest, SessionChunksStartBeyondTheCap) {
  // One running at a time: a long request runs; a session's chunk submitted
  // after it starts at once (its state is the session's), a plain request
  // waits for the long one to end.
  std::vector<uint32_t> taskRows;
  auto engine = recordingLstm(taskRows, 1, false, 1);
  ASSERT_TRUE(engine);
  auto longOne = engine->submit(shortRequest(*engine, "long", 20));
  engine->runOnce();
  Request chunk = shortRequest(*engine, "chunk", 3);
  chunk.session = {7, true, true};
  auto chunkResult = engine->submit(std::move(chunk));
  auto plain = engine->submit(shortRequest(*engine, "plain", 3));
  engine->runOnce();
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.running, 2u) << "the long request and the session's chunk";
  EXPECT_EQ(stats.waiting, 1u) << "the plain request";
  EXPECT_EQ(taskRows.back(), 2u);
  engine->drain();
  EXPECT_TRUE(longOne.get().status.isOk());
  EXPECT_TRUE(chunkResult.get().status.isOk());
  EXPECT_TRUE(plain.get().status.isOk());
}

TEST(ChainBatchTurnsTest, AWorkerAtItsCapDoesNotHoldTheHeadFromAnother) {
  // Two workers in strict turns, two running at once each. Worker 0 keeps
  // four sessions' parked state and runs one request; worker 1 runs two (its
  // cap) and has more room (here a running request reserves 6 rows of the
  // pools, a parked session 2: 14 rows against 12; with two sessions worker
  // 0 would have had more room and this test would not tell). The next
  // request starts on worker 0 at once: worker 1 cannot take it, so it is
  // not waited for (without that, it waited: mutation checked).
  auto artifact = loadExample("lstm");
  ASSERT_TRUE(artifact);
  EngineOptions options;
  options.startWorker = false;
  options.workers = 2;
  options.admissionSlack = 0;
  options.maxRunning = 2;
  options.maxTasksToSubmit = 1; // a step a round
  auto created = Engine::create(artifact, options);
  ASSERT_TRUE(created.ok()) << created.status().toString();
  Engine &engine = *created.value();
  // Each session's first chunk on worker 0, idle and asked first; their
  // state stays (the sessions go on).
  std::vector<std::future<RequestResult>> futures;
  for (uint64_t session = 1; session <= 4; ++session) {
    Request chunk = shortRequest(engine, "s" + std::to_string(session), 2);
    chunk.session = {session, true, false};
    futures.push_back(engine.submit(std::move(chunk)));
    engine.drain();
  }
  ASSERT_EQ(engine.stats().workerTasks.at(1), 0u);
  futures.push_back(engine.submit(shortRequest(engine, "long0", 30)));
  engine.runOnce(); // worker 0, holding no request, takes it
  futures.push_back(engine.submit(shortRequest(engine, "long1", 30)));
  futures.push_back(engine.submit(shortRequest(engine, "long2", 30)));
  engine.runOnce(); // worker 1, with more room, takes both: its cap
  EngineStats stats = engine.stats();
  ASSERT_EQ(stats.running, 3u);
  ASSERT_EQ(stats.waiting, 0u);
  futures.push_back(engine.submit(shortRequest(engine, "next", 3)));
  engine.runOnce();
  stats = engine.stats();
  EXPECT_EQ(stats.waiting, 0u) << "the request waited for the capped worker";
  EXPECT_EQ(stats.running, 4u);
  // The sessions end with a last chunk each.
  for (uint64_t session = 1; session <= 4; ++session) {
    Request chunk = shortRequest(engine, "e" + std::to_string(session), 1);
    chunk.session = {session, false, true};
    futures.push_back(engine.submit(std::move(chunk)));
  }
  engine.drain();
  for (auto &future : futures)
    EXPECT_TRUE(future.get().status.isOk());
}

TEST(ChainBatchTurnsTest, EarliestDeadlinesRunFirstWhenTheBatchOverflows) {
  auto artifact = loadExample("lstm");
  ASSERT_TRUE(artifact);
  uint32_t largest = artifact->batchSizes(*artifact->cells()[0]).back();
  auto engine = manualEngine(artifact, true, 1);
  ASSERT_TRUE(engine);
  std::vector<std::string> order;
  std::mutex mutex;
  std::string tokens = "[5, 6, 7, 8]";
  // `largest` requests without a deadline run a step; then `largest` with
  // one join them, beyond the running cap (admission alone orders by
  // deadline, so they come after): from then on they take the one task a
  // round and finish first.
  for (uint32_t i = 0; i < 2 * largest; ++i) {
    if (i == largest)
      engine->runOnce();
    std::string id = (i < largest ? "late" : "due") + std::to_string(i);
    std::string json = "{\"id\": \"" + id + "\", \"tokens\": " + tokens +
                       (i < largest ? "" : ", \"deadline_ms\": 10000") + "}";
    auto request = engine->parser().parse(json, "line");
    ASSERT_TRUE(request.ok()) << request.status().toString();
    Status submitted =
        engine->submit(std::move(request).value(), [&](RequestResult result) {
          std::lock_guard<std::mutex> lock(mutex);
          order.push_back(result.id);
        });
    ASSERT_TRUE(submitted.isOk()) << submitted.toString();
  }
  engine->drain();
  ASSERT_EQ(order.size(), size_t(2 * largest));
  for (uint32_t i = 0; i < largest; ++i)
    EXPECT_EQ(order[i].rfind("due", 0), 0u)
        << order[i] << " finished before a request with a deadline";
}

} // namespace

TEST_P(ChainBatchTest, RequestsAskingForSomeOutputsGetThoseAlone) {
  // Request i asks for every output, the per-step rows only, the final
  // states only, or one final state: on every path (the batch, as on the
  // GPU, the scheduler) it gets exactly those, with the bits of the full
  // result, and the rows it did not ask for are not read back (a final
  // state whose per-step rows were left out comes from the last step).
  std::string model = GetParam();
  auto artifact = loadExample(model);
  ASSERT_TRUE(artifact);
  std::mt19937 random(17);
  std::vector<std::string> texts;
  for (int i = 0; i < 120; ++i)
    texts.push_back(randomRequest(model, i, random, 40));
  auto full = manualEngine(artifact, false);
  ASSERT_TRUE(full);
  std::vector<std::string> steps, finals;
  for (const TensorDescription &output : full->parser().signature().outputs)
    (output.name.rfind("final_", 0) == 0 ? finals : steps)
        .push_back(output.name);
  ASSERT_FALSE(steps.empty() || finals.empty()) << model;
  auto asked = [&](size_t i) -> std::vector<std::string> {
    switch (i % 4) {
    case 0:
      return {};
    case 1:
      return steps;
    case 2:
      return finals;
    default:
      return {finals.back()};
    }
  };
  // A name the model lacks, or one asked for twice, is refused.
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"nope"}, {finals[0], finals[0]}}) {
    Request request = full->parser().parse(texts[0], "line").value();
    request.outputs = bad;
    Status refused = full->submit(std::move(request), [](RequestResult) {});
    EXPECT_EQ(refused.code(), StatusCode::InvalidArgument) << bad[0];
    EXPECT_NE(refused.message().find("is unknown or asked for twice"),
              std::string::npos)
        << refused.message();
  }
  std::vector<RequestResult> everything = serve(*full, texts, 9);
  for (bool chainBatch : {true, false})
    for (bool asOnTheGpu : {false, true}) {
      auto engine = manualEngine(artifact, chainBatch, 5, nullptr, asOnTheGpu);
      ASSERT_TRUE(engine);
      uint64_t idleRows = engineRowsInUse(*engine);
      std::vector<RequestResult> got = serve(*engine, texts, 9, asked);
      ASSERT_EQ(got.size(), everything.size());
      for (size_t i = 0; i < got.size(); ++i) {
        RequestResult want = everything[i];
        std::vector<std::string> names = asked(i);
        if (!names.empty())
          want.outputs.erase(
              std::remove_if(want.outputs.begin(), want.outputs.end(),
                             [&](const OutputTensor &tensor) {
                               return std::find(names.begin(), names.end(),
                                                tensor.name) == names.end();
                             }),
              want.outputs.end());
        expectSameBits(got[i], want,
                       model + " " + got[i].id +
                           (chainBatch ? " batch" : " scheduler") +
                           (asOnTheGpu ? " as on the GPU" : ""));
        if (HasFailure())
          return;
      }
      EXPECT_EQ(engineRowsInUse(*engine), idleRows);
    }
}

TEST(ChainBatchGpuPathTest,
     RequestsCancelledWithTasksInFlightKeepTheirOutputs) {
  // As on the GPU the executor writes a task's rows into the results when
  // the task is waited for, a round after it was submitted: requests
  // cancelled in between end with their outputs kept until then (under
  // ASan, freeing them at once is a use after free); the others get the
  // bits they get alone.
  auto artifact = loadExample("lstm");
  ASSERT_TRUE(artifact);
  auto engine = manualEngine(artifact, true, 5, nullptr, true);
  auto alone = manualEngine(artifact, true);
  ASSERT_TRUE(engine && alone);
  std::mt19937 random(7);
  std::vector<std::string> texts;
  for (int i = 0; i < 60; ++i)
    texts.push_back(cellc::testing::randomRequest("lstm", i, random, 40));
  std::vector<std::shared_ptr<CancelToken>> tokens;
  std::vector<std::future<RequestResult>> futures;
  for (const std::string &text : texts) {
    Request request = engine->parser().parse(text, "line").value();
    request.cancel = tokens.emplace_back(std::make_shared<CancelToken>());
    futures.push_back(engine->submit(std::move(request)));
  }
  engine->runOnce(); // a round in flight, its rows not yet written
  for (size_t i = 0; i < tokens.size(); i += 2)
    engine->cancel(tokens[i], "gone");
  engine->drain();
  std::vector<RequestResult> want = serve(*alone, texts, 3);
  uint64_t cancelled = 0;
  for (size_t i = 0; i < futures.size(); ++i) {
    RequestResult got = futures[i].get();
    if (i % 2 == 0 && got.status.code() == StatusCode::Cancelled) {
      ++cancelled;
      EXPECT_TRUE(got.outputs.empty()) << got.id;
      continue;
    }
    ASSERT_TRUE(got.status.isOk()) << got.id << ": " << got.status.toString();
    expectSameBits(got, want[i], "lstm " + got.id + " (as on the GPU)");
  }
  EXPECT_GT(cancelled, 20u) << "most cancelled requests were still running";
  EXPECT_EQ(engineRowsInUse(*engine), engineRowsInUse(*alone));
}

TEST(ChainBatchGpuPathTest, RequestsFailingMidRoundKeepTheirOutputsToItsEnd) {
  // Requests of three steps fitting one task run a step in each of a
  // round's three tasks. The second task's kernels fail (injected): its
  // requests fail when it is waited for, while the third task, waited for
  // after it, still writes their rows into their results. So their outputs
  // are kept until the whole round has completed, not just its first task
  // (under ASan, freeing them at the second task is a use after free).
  auto artifact = loadExample("lstm");
  ASSERT_TRUE(artifact);
  EngineOptions options;
  options.startWorker = false;
  options.overlapRounds = EngineOptions::Overlap::On;
  options.readsThroughTasks = true;
  options.maxTasksToSubmit = 5;
  const Engine *observed = nullptr;
  std::vector<uint64_t> keptAtTask;
  options.onTask = [&](const TaskRecord &) {
    keptAtTask.push_back(engineKeptOutputs(*observed));
  };
  int kernels = 0;
  auto engine = createEngineForTesting(
      artifact, options, [&](FaultPoint point) -> Status {
        if (point == FaultPoint::Kernel && ++kernels == 2)
          return Status(StatusCode::Internal, "injected: the kernel failed");
        return Status::ok();
      });
  ASSERT_TRUE(engine.ok()) << engine.status().toString();
  observed = engine.value().get();
  std::vector<std::future<RequestResult>> futures;
  for (int i = 0; i < 6; ++i) {
    auto request = (*engine)->parser().parse(
        "{\"id\": \"r" + std::to_string(i) + "\", \"tokens\": [5, 6, 7]}",
        "line");
    ASSERT_TRUE(request.ok()) << request.status().toString();
    futures.push_back((*engine)->submit(std::move(request).value()));
  }
  (*engine)->drain();
  for (auto &future : futures) {
    RequestResult result = future.get();
    EXPECT_EQ(result.status.code(), StatusCode::Internal)
        << result.id << ": " << result.status.toString();
    EXPECT_TRUE(result.outputs.empty()) << result.id;
  }
  ASSERT_EQ(keptAtTask.size(), 3u) << "one round of three tasks";
  EXPECT_EQ(keptAtTask[0], 0u);
  EXPECT_EQ(keptAtTask[1], 6u) << "kept when the second task failed";
  EXPECT_EQ(keptAtTask[2], 6u) << "kept while the third was completed";
  EXPECT_EQ(engineKeptOutputs(**engine), 0u) << "freed after the round";
  EXPECT_EQ(engineRowsInUse(**engine),
            engineRowsInUse(*manualEngine(artifact, true)));
}
