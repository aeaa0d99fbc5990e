//===- ResultChecks.h - A request's result against a reference ---*- C++
//-*-===//
//
// The engine's tests compare a request's result with the same request run
// another way (alone, on one worker): same outputs, shapes, tokens and stop
// reason; floats within 1e-6 relative + 1e-6 absolute (another batch size
// may sum in another order).
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_TEST_UNIT_RESULTCHECKS_H
#define CELLC_TEST_UNIT_RESULTCHECKS_H

#include "cellrun/Request.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace cellc::testing {

inline void expectSameResult(const cellrun::RequestResult &got,
                             const cellrun::RequestResult &alone,
                             const std::string &what) {
  ASSERT_TRUE(got.status.isOk()) << what << ": " << got.status.toString();
  ASSERT_EQ(got.outputs.size(), alone.outputs.size()) << what;
  EXPECT_EQ(got.stopReason, alone.stopReason) << what;
  for (const cellrun::OutputTensor &want : alone.outputs) {
    const cellrun::OutputTensor *have = got.find(want.name);
    ASSERT_NE(have, nullptr) << what << ": no output " << want.name;
    EXPECT_EQ(have->shape, want.shape) << what << " " << want.name;
    EXPECT_EQ(have->integers, want.integers) << what << " " << want.name;
    ASSERT_EQ(have->floats.size(), want.floats.size()) << what;
    int bad = 0;
    for (size_t i = 0; i < want.floats.size() && bad < 3; ++i)
      if (!(std::fabs(have->floats[i] - want.floats[i]) <=
            1e-6f * std::fabs(want.floats[i]) + 1e-6f)) {
        ++bad;
        ADD_FAILURE() << what << " " << want.name << "[" << i
                      << "] = " << have->floats[i] << ", alone "
                      << want.floats[i];
      }
  }
}

} // namespace cellc::testing

#endif // CELLC_TEST_UNIT_RESULTCHECKS_H
