//===- BatchInvarianceTest.cpp - A request's bits do not depend on batching
//===//
//
// For every example (and the seq2seq model whose decodes mostly reach EOS;
// the attention model's requests of different source lengths share decoder
// tasks, each reading its own memory),
// 150 random requests are run one at a time on a one-thread CPU engine
// (a task holds one request's nodes only), then all arrive at random rounds of
// a two-thread engine, so they run in batches of every size up to the largest
// plan, beside different requests at every step. Every float of every result
// must be identical bit for bit, and every decoded token the same: the CPU
// backend sums each row in a fixed order whatever its batch (PackedGemm.h), and
// its activations are element-wise (VectorMath.h).
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "RandomRequests.h"
#include "cellrun/Engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace cellrun;
using cellc::testing::exampleArtifactPath;
using cellc::testing::randomRequest;

namespace {

/// An engine driven by the test; `largestTask` follows the most rows of
/// requests any task ran.
std::unique_ptr<Engine> manual(std::shared_ptr<const LoadedArtifact> artifact,
                               unsigned threads, uint32_t &largestTask) {
  EngineOptions options;
  options.startWorker = false;
  options.executor.threads = threads;
  // With two threads every task's rows into the results are shared between
  // them (at hidden 1024 from 256 KB), so that way is checked too.
  if (threads > 1)
    options.executor.sharedCopyBytes = 1;
  options.onTask = [&largestTask](const TaskRecord &task) {
    largestTask = std::max(largestTask, task.nodes);
  };
  auto engine = Engine::create(std::move(artifact), options);
  EXPECT_TRUE(engine.ok()) << engine.status().toString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

class BatchInvarianceTest : public ::testing::TestWithParam<const char *> {};

TEST_P(BatchInvarianceTest, ResultsAreTheSameBitsAloneAndBatched) {
  std::string model = GetParam();
  auto loaded = loadArtifact(exampleArtifactPath(model));
  ASSERT_TRUE(loaded.ok()) << loaded.status().toString();
  std::shared_ptr<const LoadedArtifact> artifact = std::move(loaded).value();
  uint32_t largestAlone = 0, largestBatched = 0;
  auto single = manual(artifact, 1, largestAlone);
  auto batched = manual(artifact, 2, largestBatched);
  ASSERT_TRUE(single && batched);

  std::mt19937 random(77);
  constexpr int kRequests = 150;
  std::vector<std::string> texts;
  for (int i = 0; i < kRequests; ++i)
    texts.push_back(randomRequest(model, i, random));
  std::vector<RequestResult> alone(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    auto future = single->submit(single->parser().parse(texts[i], "r").value());
    single->drain();
    alone[i] = future.get();
    ASSERT_TRUE(alone[i].status.isOk()) << alone[i].status.toString();
  }

  std::vector<std::future<RequestResult>> futures;
  // Half arrive at once (the largest batches), the rest at random rounds.
  int next = 0;
  for (; next < kRequests / 2; ++next)
    futures.push_back(
        batched->submit(batched->parser().parse(texts[next], "r").value()));
  while (next < kRequests) {
    int arrivals = std::uniform_int_distribution<int>(0, 5)(random);
    for (int a = 0; a < arrivals && next < kRequests; ++a, ++next)
      futures.push_back(
          batched->submit(batched->parser().parse(texts[next], "r").value()));
    batched->runOnce();
  }
  batched->drain();
  // Alone, a request's tasks hold only its own nodes (a tree's leaves run
  // together); batched, other requests' rows join them.
  EXPECT_GT(largestBatched, std::max(16u, largestAlone))
      << "the batched run must reach the plans with a separate GEMM step";

  for (int i = 0; i < kRequests; ++i) {
    RequestResult got = futures[i].get();
    ASSERT_TRUE(got.status.isOk()) << got.status.toString();
    ASSERT_EQ(got.outputs.size(), alone[i].outputs.size());
    for (const OutputTensor &expected : alone[i].outputs) {
      const OutputTensor *have = got.find(expected.name);
      ASSERT_NE(have, nullptr) << expected.name;
      EXPECT_EQ(have->integers, expected.integers)
          << "request " << i << " " << expected.name;
      ASSERT_EQ(have->floats.size(), expected.floats.size());
      for (size_t e = 0; e < expected.floats.size(); ++e)
        ASSERT_EQ(
            std::memcmp(&have->floats[e], &expected.floats[e], sizeof(float)),
            0)
            << "request " << i << " " << expected.name << "[" << e
            << "]: " << have->floats[e] << " batched, " << expected.floats[e]
            << " alone";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, BatchInvarianceTest,
                         ::testing::Values("lstm", "gru", "seq2seq",
                                           "seq2seq_eos", "treelstm",
                                           "attention", "bahdanau", "mingru",
                                           "mamba", "rwkv", "slstm"));

} // namespace
