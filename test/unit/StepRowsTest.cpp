//===- StepRowsTest.cpp - A request's step rows in one buffer -------------===//
//
// StepRows keeps every step's rows in one buffer: while the steps are alike
// a row is found by arithmetic, and a step unlike the first (other sizes,
// other counts) switches to offsets without changing a byte of any row.
//
//===----------------------------------------------------------------------===//
#include "cellrun/Request.h"

#include <gtest/gtest.h>

using namespace cellrun;

namespace {

std::vector<uint8_t> bytes(std::initializer_list<int> values) {
  std::vector<uint8_t> row;
  for (int value : values)
    row.push_back(static_cast<uint8_t>(value));
  return row;
}

/// Every step of `steps` as NodeData, for comparison.
std::vector<NodeData> all(const StepRows &steps) {
  std::vector<NodeData> out;
  for (size_t s = 0; s < steps.size(); ++s)
    out.push_back(steps.step(s));
  return out;
}

} // namespace

TEST(StepRows, RegularStepsAreFoundByArithmetic) {
  StepRows steps;
  EXPECT_TRUE(steps.empty());
  std::vector<NodeData> expected;
  for (int s = 0; s < 5; ++s) {
    expected.push_back({bytes({s, s + 1}), bytes({10 * s, 0, 0, 1})});
    steps.push_back(expected.back());
  }
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps.rows(3), 2u);
  EXPECT_EQ(steps.rowSize(4, 1), 4u);
  EXPECT_EQ(steps.row(3, 1)[0], 30);
  EXPECT_EQ(steps.row(2, 1) - steps.row(2, 0), 2); // rows laid end to end
  EXPECT_EQ(all(steps), expected);
  // Built in place, the same.
  StepRows built;
  for (const NodeData &step : expected) {
    for (const std::vector<uint8_t> &row : step)
      std::copy(row.begin(), row.end(), built.appendRow(row.size()));
    built.endStep();
  }
  EXPECT_EQ(all(built), expected);
}

TEST(StepRows, AStepUnlikeTheFirstKeepsEveryRow) {
  std::vector<NodeData> expected = {
      {bytes({1}), bytes({2, 3})},
      {bytes({4}), bytes({5, 6})},
      {bytes({7, 8, 9}), bytes({10})},             // other sizes
      {bytes({11})},                               // fewer rows
      {bytes({12}), bytes({13, 14}), bytes({15})}, // more rows
      {},
      {bytes({16}), bytes({17, 18})}};
  StepRows steps;
  for (const NodeData &step : expected)
    steps.push_back(step);
  ASSERT_EQ(steps.size(), expected.size());
  EXPECT_EQ(steps.rows(4), 3u);
  EXPECT_EQ(steps.rows(5), 0u);
  EXPECT_EQ(steps.rowSize(2, 0), 3u);
  EXPECT_EQ(all(steps), expected);
  // Slices and reversal keep the rows.
  EXPECT_EQ(all(steps.slice(2, 5)),
            std::vector<NodeData>(expected.begin() + 2, expected.begin() + 5));
  steps.reverse();
  EXPECT_EQ(all(steps),
            std::vector<NodeData>(expected.rbegin(), expected.rend()));
  // More rows in the first step than kept inline: offsets from the start.
  NodeData wide;
  for (int r = 0; r < 12; ++r)
    wide.push_back(bytes({r, r}));
  StepRows many;
  many.push_back(wide);
  many.push_back(wide);
  EXPECT_EQ(all(many), (std::vector<NodeData>{wide, wide}));
  EXPECT_EQ(many.row(1, 11)[0], 11);
}
