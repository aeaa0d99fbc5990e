//===- StridedBroadcastTest.cpp - Broadcast maps as two loops -------------===//
//
// The CPU interpreter runs Add, Sub, Mul and Div over broadcast operands as
// two nested loops (a run against a run, a number against a run) when the
// broadcast maps have that form: Mamba's dt x A, its outer products and
// its read-outs. Each form must read exactly the elements the map reads.
//
//===----------------------------------------------------------------------===//
#include "backend/cpu/RegionInterpreterImpl.h"

#include <gtest/gtest.h>

#include <vector>

namespace {
using cellrun::cpu::detail::broadcastMap;
using cellrun::cpu::detail::StridedBroadcast;
using cellrun::cpu::detail::stridedBroadcast;
using Shape = std::vector<int64_t>;

/// The form of `a` op `b` into `result` (row shapes with the leading 1).
StridedBroadcast formOf(const Shape &a, const Shape &b, const Shape &result) {
  std::vector<std::vector<int64_t>> maps = {broadcastMap(a, result),
                                            broadcastMap(b, result)};
  int64_t count = 1;
  for (int64_t d : result)
    count *= d;
  StridedBroadcast form = stridedBroadcast(maps, result, count);
  // Wherever a form is found, it reads what the maps read.
  for (size_t n = 0; form.inner > 0 && n < 2; ++n)
    for (int64_t k = 0; k < count; ++k) {
      int64_t want = maps[n].empty() ? k : maps[n][k];
      EXPECT_EQ(k / form.inner * form.outerStride[n] +
                    k % form.inner * form.innerStride[n],
                want)
          << "operand " << n << " element " << k;
    }
  return form;
}

TEST(StridedBroadcastTest, ANumberPerRowOfAMatrixAgainstAWeight) {
  // dt.unsqueeze(-1) * A: [B, 6, 1] * [6, 4].
  StridedBroadcast form = formOf({1, 6, 1}, {6, 4}, {1, 6, 4});
  ASSERT_EQ(form.inner, 4);
  EXPECT_EQ(form.innerStride[0], 0);
  EXPECT_EQ(form.outerStride[0], 1);
  EXPECT_EQ(form.innerStride[1], 1);
  EXPECT_EQ(form.outerStride[1], 4);
}

TEST(StridedBroadcastTest, OuterProductAndReadOut) {
  // (x * dt).unsqueeze(-1) * B.unsqueeze(1): [B, 6, 1] * [B, 1, 4].
  StridedBroadcast outer = formOf({1, 6, 1}, {1, 1, 4}, {1, 6, 4});
  ASSERT_EQ(outer.inner, 4);
  EXPECT_EQ(outer.outerStride[1], 0);
  EXPECT_EQ(outer.innerStride[1], 1);
  // ssm * C.unsqueeze(1): [B, 6, 4] * [B, 1, 4].
  StridedBroadcast readOut = formOf({1, 6, 4}, {1, 1, 4}, {1, 6, 4});
  ASSERT_EQ(readOut.inner, 4);
  EXPECT_EQ(readOut.outerStride[0], 4);
  EXPECT_EQ(readOut.outerStride[1], 0);
}

TEST(StridedBroadcastTest, ABiasAndEqualShapesAreOneRun) {
  StridedBroadcast bias = formOf({1, 8}, {8}, {1, 8});
  EXPECT_EQ(bias.inner, 8);
  EXPECT_EQ(bias.innerStride[0], 1);
  EXPECT_EQ(bias.innerStride[1], 1);
  // A number against a row.
  StridedBroadcast number = formOf({1, 8}, {1, 1}, {1, 8});
  EXPECT_EQ(number.innerStride[1], 0);
}

TEST(StridedBroadcastTest, EqualShapesAreOneRunEvenAgainstAWeight) {
  // conv_state * weight: [B, 6, 4] * [6, 4], the same elements a row.
  StridedBroadcast form = formOf({1, 6, 4}, {6, 4}, {1, 6, 4});
  EXPECT_EQ(form.inner, 24);
  EXPECT_EQ(form.innerStride[0], 1);
  EXPECT_EQ(form.innerStride[1], 1);
}

TEST(StridedBroadcastTest, ThreeLevelsHaveNoTwoLoopForm) {
  // [B, 2, 1, 3] * [B, 1, 4, 1]: neither operand reads runs over one split.
  StridedBroadcast form = formOf({1, 2, 1, 3}, {1, 1, 4, 1}, {1, 2, 4, 3});
  EXPECT_EQ(form.inner, 0);
}

} // namespace
