//===- FaultTests.h - What the fault tests share ---------------*- C++ -*-===//
//
// The check the fault tests make of every request a fault did not touch
// (it succeeded, and its outputs are the bits of the same request run
// alone), and the way they submit requests: a few between rounds.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_FAULTTESTS_H
#define CELL_TEST_FAULTTESTS_H

#include "cellrun/Engine.h"

#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <random>
#include <string>
#include <vector>

namespace cellc::testing {

inline void expectSameBits(const cellrun::RequestResult &got,
                           const cellrun::RequestResult &alone,
                           const std::string &what) {
  ASSERT_TRUE(got.status.isOk()) << what << ": " << got.status.toString();
  ASSERT_EQ(got.outputs.size(), alone.outputs.size()) << what;
  EXPECT_EQ(got.stopReason, alone.stopReason) << what;
  for (const cellrun::OutputTensor &want : alone.outputs) {
    const cellrun::OutputTensor *have = got.find(want.name);
    ASSERT_NE(have, nullptr) << what << ": no output " << want.name;
    EXPECT_EQ(have->integers, want.integers) << what << " " << want.name;
    ASSERT_EQ(have->floats.size(), want.floats.size()) << what;
    if (!want.floats.empty()) {
      EXPECT_EQ(std::memcmp(have->floats.data(), want.floats.data(),
                            want.floats.size() * sizeof(float)),
                0)
          << what << " " << want.name;
    }
  }
}

/// Submits `texts` 0 to 6 at a time with a round of the engine (manual
/// mode) after each group, then drains it.
inline std::vector<std::future<cellrun::RequestResult>>
submitInTrickles(cellrun::Engine &engine, const std::vector<std::string> &texts,
                 std::mt19937 &random) {
  std::vector<std::future<cellrun::RequestResult>> futures;
  for (size_t next = 0; next < texts.size();) {
    int arrivals = std::uniform_int_distribution<int>(0, 6)(random);
    for (int a = 0; a < arrivals && next < texts.size(); ++a, ++next)
      futures.push_back(
          engine.submit(engine.parser().parse(texts[next], "").value()));
    engine.runOnce();
  }
  engine.drain();
  return futures;
}

} // namespace cellc::testing

#endif // CELL_TEST_FAULTTESTS_H
