//===- RowReductionsTest.cpp - A row's sum and largest element -----------===//
//
// rowSum and rowMax (backend/cpu/RowReductions.h), which the region
// interpreter uses for a whole row's ReduceSum, ReduceMean and ReduceMax:
// close to a double sum at every length around the lanes' width, the exact
// largest element, NaN wherever it sits, and a row's bits independent of
// what lies around it.
//
//===----------------------------------------------------------------------===//
#include "backend/cpu/RowReductions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {
using namespace cellrun::cpu;

std::vector<float> randomRow(int64_t count, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  std::vector<float> row(count);
  for (float &x : row)
    x = uniform(random);
  return row;
}

TEST(RowReductionsTest, SumsAreCloseToADoubleSumAtEveryLength) {
  for (int64_t count : {1, 2, 15, 16, 17, 31, 32, 33, 50, 64, 255, 256, 1031}) {
    std::vector<float> row = randomRow(count, 11 + count);
    double exact = 0, magnitude = 0;
    for (float x : row) {
      exact += x;
      magnitude += std::fabs(x);
    }
    EXPECT_NEAR(rowSum(row.data(), count), exact, 1e-6 * magnitude + 1e-7)
        << count << " elements";
  }
}

TEST(RowReductionsTest, TheLargestElementWhereverItIs) {
  for (int64_t count : {1, 7, 16, 17, 50, 256, 1031}) {
    std::vector<float> row = randomRow(count, 5 + count);
    for (int64_t at : {int64_t(0), count / 2, count - 1}) {
      std::vector<float> copy = row;
      copy[at] = 10.0f;
      EXPECT_EQ(rowMax(copy.data(), count), 10.0f) << count << ", at " << at;
    }
    EXPECT_EQ(rowMax(row.data(), count),
              *std::max_element(row.begin(), row.end()));
  }
  std::vector<float> least(40, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(rowMax(least.data(), 40), -std::numeric_limits<float>::infinity());
}

TEST(RowReductionsTest, NanAnywhereGivesNan) {
  for (int64_t count : {3, 16, 17, 50}) {
    for (int64_t at : {int64_t(0), count / 2, count - 1}) {
      std::vector<float> row = randomRow(count, 3);
      row[at] = std::numeric_limits<float>::quiet_NaN();
      EXPECT_TRUE(std::isnan(rowMax(row.data(), count)))
          << count << ", NaN at " << at;
      EXPECT_TRUE(std::isnan(rowSum(row.data(), count)));
    }
  }
}

TEST(RowReductionsTest, ARowHasTheSameBitsWhereverItLies) {
  // The same 50 values at different offsets of a larger buffer (another
  // alignment, other neighbours): the same bits.
  std::vector<float> row = randomRow(50, 21);
  std::vector<float> buffer = randomRow(200, 22);
  float sum = rowSum(row.data(), 50), largest = rowMax(row.data(), 50);
  for (int64_t offset : {1, 3, 17, 101}) {
    std::copy(row.begin(), row.end(), buffer.begin() + offset);
    EXPECT_EQ(rowSum(buffer.data() + offset, 50), sum);
    EXPECT_EQ(rowMax(buffer.data() + offset, 50), largest);
  }
}

} // namespace
