//===- EngineValueMemoryTest.cpp - The engine on installed value memory --===//
//
// The cuda backend's --pinned-results puts every request and result value
// in an arena (base/HostArena.h) for the rest of the process. Here, on the
// cpu backend and without a GPU: random requests of each example run at
// random rounds, first with values on the heap, then, once an arena is
// installed (no registration), twice more (the second time on blocks the
// first gave back). Results are the same bits each time, and the later
// ones lie in the arena. Each test runs in a process of its own (ctest).
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "RandomRequests.h"
#include "base/HostArena.h"
#include "cellrun/Engine.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace cellrun;
using cellc::testing::exampleArtifactPath;
using cellc::testing::randomRequest;

namespace {

/// 150 random requests of `model` at random rounds of a new cpu engine.
std::vector<RequestResult> runRequests(const std::string &model) {
  auto loaded = loadArtifact(exampleArtifactPath(model));
  EXPECT_TRUE(loaded.ok()) << loaded.status().toString();
  if (!loaded.ok())
    return {};
  EngineOptions options;
  options.startWorker = false;
  options.executor.threads = 1;
  auto created = Engine::create(std::move(loaded).value(), options);
  EXPECT_TRUE(created.ok()) << created.status().toString();
  if (!created.ok())
    return {};
  Engine &engine = *created.value();
  std::mt19937 random(515);
  constexpr int kRequests = 150;
  std::vector<std::future<RequestResult>> futures;
  for (int next = 0; next < kRequests;) {
    int arrivals = std::uniform_int_distribution<int>(0, 5)(random);
    for (int a = 0; a < arrivals && next < kRequests; ++a, ++next) {
      std::string text = randomRequest(model, next, random);
      futures.push_back(
          engine.submit(engine.parser().parse(text, "r").value()));
    }
    engine.runOnce();
  }
  engine.drain();
  std::vector<RequestResult> results;
  for (auto &future : futures)
    results.push_back(future.get());
  return results;
}

void expectSameBits(const std::vector<RequestResult> &got,
                    const std::vector<RequestResult> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(got[i].status.isOk()) << got[i].status.toString();
    ASSERT_EQ(got[i].outputs.size(), want[i].outputs.size());
    for (size_t o = 0; o < want[i].outputs.size(); ++o) {
      const OutputTensor &a = got[i].outputs[o], &b = want[i].outputs[o];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.shape, b.shape);
      ASSERT_EQ(a.floats.size(), b.floats.size()) << "request " << i;
      EXPECT_EQ(0, std::memcmp(a.floats.data(), b.floats.data(),
                               a.floats.size() * sizeof(float)))
          << "request " << i << " " << a.name;
      EXPECT_EQ(a.integers, b.integers) << "request " << i << " " << a.name;
    }
  }
}

class EngineValueMemoryTest : public ::testing::TestWithParam<const char *> {};

TEST_P(EngineValueMemoryTest, ResultsAreTheSameBitsInAnInstalledArena) {
  std::string model = GetParam();
  std::vector<RequestResult> onTheHeap = runRequests(model);
  ASSERT_FALSE(onTheHeap.empty());

  HostArena::Limits limits;
  limits.reserveBytes = size_t(4) << 30;
  limits.chunkBytes = size_t(4) << 20;
  limits.maxBytes = size_t(1) << 30;
  auto arena = HostArena::create(limits, {});
  ASSERT_TRUE(arena.ok()) << arena.status().toString();
  const HostArena &memory = *arena.value();
  installValueMemory(std::move(arena).value());

  for (int pass = 0; pass < 2; ++pass) {
    std::vector<RequestResult> inTheArena = runRequests(model);
    expectSameBits(inTheArena, onTheHeap);
    size_t owned = 0, tensors = 0;
    for (const RequestResult &result : inTheArena)
      for (const OutputTensor &tensor : result.outputs) {
        ++tensors;
        owned += memory.owns(tensor.floats.empty()
                                 ? (const void *)tensor.integers.data()
                                 : tensor.floats.data());
      }
    EXPECT_EQ(owned, tensors) << "pass " << pass;
  }
  std::printf("%s: %zu bytes of arena chunks made usable\n", model.c_str(),
              memory.usableBytes());
}

INSTANTIATE_TEST_SUITE_P(Examples, EngineValueMemoryTest,
                         ::testing::Values("lstm", "gru", "seq2seq", "treelstm",
                                           "attention"));

} // namespace
