//===- FaultInjectionTest.cpp - The engine under injected executor faults -===//
//
// The executor is made to fail at chosen points (ExecutorOptions::
// injectFault): a pool row that cannot be taken (an allocation), a task whose
// data cannot be moved (a transfer), a task whose kernels report an error
// when waited for. Under each, with requests of the seq2seq, attention,
// TreeLSTM and hoisted GRU examples arriving between rounds (rounds overlapping
// or not), the requests whose nodes were hit fail with the fault's message,
// every other request equals its result alone bit for bit, every pool row comes
// back, and the engine serves a second wave of requests without a fault
// afterwards.
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "FaultTests.h"
#include "RandomRequests.h"
#include "cellrun/Engine.h"
#include "engine/EngineTesting.h"

#include <gtest/gtest.h>

using namespace cellrun;
using cellc::testing::expectSameBits;
using cellc::testing::loadExampleArtifact;
using cellc::testing::randomRequest;
using cellc::testing::submitInTrickles;

namespace {

struct FaultCase {
  const char *model;
  FaultPoint point;
  bool overlap;
};

std::string pointName(FaultPoint point) {
  switch (point) {
  case FaultPoint::Allocate:
    return "allocate";
  case FaultPoint::Transfer:
    return "transfer";
  case FaultPoint::Kernel:
    return "kernel";
  case FaultPoint::Device:
    return "device";
  }
  return "?";
}

std::string caseName(const FaultCase &c) {
  return std::string(c.model) + "_" + pointName(c.point) +
         (c.overlap ? "_overlapped" : "");
}
/// What gtest (and ctest's test list) prints for the parameter.
void PrintTo(const FaultCase &c, std::ostream *os) { *os << caseName(c); }

std::unique_ptr<Engine> makeEngine(std::shared_ptr<const LoadedArtifact> model,
                                   bool overlap, FaultInjector inject = {}) {
  EngineOptions options;
  options.startWorker = false;
  options.executor.threads = 2;
  options.overlapRounds =
      overlap ? EngineOptions::Overlap::On : EngineOptions::Overlap::Off;
  auto engine =
      createEngineForTesting(std::move(model), options, std::move(inject));
  EXPECT_TRUE(engine.ok()) << engine.status().toString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

class FaultInjectionTest : public ::testing::TestWithParam<FaultCase> {};

TEST_P(FaultInjectionTest, HitRequestsFailAndTheRestAreServed) {
  auto [model, point, overlap] = GetParam();
  auto artifact = loadExampleArtifact(model);
  ASSERT_TRUE(artifact);
  std::mt19937 random(11);
  constexpr int kRequests = 120;
  std::vector<std::string> texts;
  for (int i = 0; i < kRequests; ++i)
    texts.push_back(randomRequest(model, i, random, 12));

  auto alone = makeEngine(artifact, false);
  ASSERT_TRUE(alone);
  std::vector<RequestResult> expected;
  for (const std::string &text : texts) {
    auto future = alone->submit(alone->parser().parse(text, "").value());
    alone->drain();
    expected.push_back(future.get());
    ASSERT_TRUE(expected.back().status.isOk());
  }

  // Faults at a few calls of the point, once the engine is running (its
  // zero and scratch rows are taken at creation).
  bool armed = false;
  uint64_t calls = 0, injected = 0;
  auto inject = [&](FaultPoint at) {
    if (!armed || at != point)
      return Status::ok();
    // A handful, spread over the run (rows are taken far more often than
    // tasks are issued).
    uint64_t every = point == FaultPoint::Allocate ? 401 : 97;
    if (++calls % every != 13)
      return Status::ok();
    ++injected;
    return Status(StatusCode::Internal, "injected " + pointName(point) +
                                            " fault #" +
                                            std::to_string(injected));
  };
  auto engine = makeEngine(artifact, overlap, inject);
  ASSERT_TRUE(engine);
  uint32_t idleRows = engineExecutor(*engine).rowsInUse();
  armed = true;
  std::vector<std::future<RequestResult>> futures =
      submitInTrickles(*engine, texts, random);
  armed = false;
  ASSERT_GT(injected, 0u) << "no fault was injected";
  int failed = 0;
  for (int i = 0; i < kRequests; ++i) {
    RequestResult result = futures[i].get();
    if (!result.status.isOk()) {
      ++failed;
      EXPECT_NE(result.status.message().find("injected " + pointName(point)),
                std::string::npos)
          << result.status.toString();
      EXPECT_TRUE(result.outputs.empty());
      continue;
    }
    expectSameBits(result, expected[i], "request " + std::to_string(i));
  }
  EXPECT_GT(failed, 0);
  EXPECT_LT(failed, kRequests / 2) << "a fault must hit only its task's rows";
  EXPECT_EQ(engineExecutor(*engine).rowsInUse(), idleRows)
      << "the failed requests' rows must come back";

  // The engine serves on: a second wave, without faults, is exact.
  std::vector<std::future<RequestResult>> again;
  for (int i = 0; i < 20; ++i)
    again.push_back(
        engine->submit(engine->parser().parse(texts[i], "").value()));
  engine->drain();
  for (int i = 0; i < 20; ++i)
    expectSameBits(again[i].get(), expected[i],
                   "after the faults, request " + std::to_string(i));
  EXPECT_EQ(engineExecutor(*engine).rowsInUse(), idleRows);
  std::printf("%s/%s%s: %llu faults failed %d of %d requests\n", model,
              pointName(point).c_str(), overlap ? " (overlapped)" : "",
              (unsigned long long)injected, failed, kRequests);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, FaultInjectionTest,
    ::testing::Values(FaultCase{"seq2seq", FaultPoint::Kernel, false},
                      FaultCase{"seq2seq", FaultPoint::Kernel, true},
                      FaultCase{"seq2seq", FaultPoint::Transfer, false},
                      FaultCase{"seq2seq", FaultPoint::Transfer, true},
                      FaultCase{"seq2seq", FaultPoint::Allocate, false},
                      FaultCase{"attention", FaultPoint::Kernel, true},
                      FaultCase{"attention", FaultPoint::Allocate, true},
                      FaultCase{"treelstm", FaultPoint::Kernel, false},
                      FaultCase{"treelstm", FaultPoint::Allocate, false},
                      // Products in pool rows: a failed projection task or
                      // product row fails the requests admitted with it.
                      FaultCase{"gru", FaultPoint::Kernel, false},
                      FaultCase{"gru", FaultPoint::Kernel, true},
                      FaultCase{"gru", FaultPoint::Allocate, false}),
    [](const auto &info) { return caseName(info.param); });

} // namespace
