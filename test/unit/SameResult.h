//===- SameResult.h - Two results of one request, bit for bit --*- C++ -*-===//
//
// The check the fault tests make of every request a fault did not touch:
// it succeeded, and its outputs are the bits of the same request run alone.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_SAMERESULT_H
#define CELL_TEST_SAMERESULT_H

#include "cellrun/Engine.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

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
    if (!want.floats.empty())
      EXPECT_EQ(std::memcmp(have->floats.data(), want.floats.data(),
                            want.floats.size() * sizeof(float)),
                0)
          << what << " " << want.name;
  }
}

} // namespace cellc::testing

#endif // CELL_TEST_SAMERESULT_H
