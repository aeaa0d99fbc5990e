//===- GemmAmxTest.cpp - bf16 products on AMX tiles
//------------------------===//
//
// The AMX kernel (GemmAmx.h) where this processor and OS run it: the same
// bits for a row in any batch and any split among threads, at depths that
// fill whole tiles and at others (padded), and the epilogue's forms. Its sums
// against a double reference: Bf16GemmTest (CpuKernelsTest.cpp).
//
//===----------------------------------------------------------------------===//
#include "backend/cpu/GemmAmx.h"
#include "RandomFloats.h"
#include "backend/cpu/PackedGemmBf16.h"
#include "backend/cpu/ThreadPool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

using namespace cellrun::cpu;
using cellc::testing::randomFloats;

namespace {

#define SKIP_WITHOUT_AMX()                                                     \
  if (!cpuHasAmxBf16())                                                        \
  GTEST_SKIP() << "no AMX bf16 here (processor, OS, CELLRUN_CPU_AMX=off or "   \
                  "CELLRUN_CPU_ISA)"

TEST(AmxGemmTest, PerRowBiasAndScaleOnly) {
  // The epilogue's other forms as the rows leave the tiles: a bias row per
  // row of D (biasStride n), and a scale without bias.
  SKIP_WITHOUT_AMX();
  constexpr int64_t kRows = 40, kDepth = 70, kColumns = 37; // two blocks
  std::mt19937 random(29);
  std::vector<float> a = randomFloats(random, kRows * kDepth);
  std::vector<float> w = randomFloats(random, kColumns * kDepth);
  std::vector<float> bias = randomFloats(random, kRows * kColumns);
  PackedMatrixBf16 packed(w.data(), kDepth, kColumns, true);
  GemmEpilogue plain;
  std::vector<float> sums(kRows * kColumns);
  packedGemmBf16(a.data(), kDepth, kRows, packed, plain, sums.data(), kColumns,
                 nullptr, Bf16Kernels::Amx);
  GemmEpilogue perRow;
  perRow.beta = 0.5f;
  perRow.bias = bias.data();
  perRow.biasStride = kColumns;
  GemmEpilogue scaleOnly;
  scaleOnly.alpha = 3.0f;
  for (const GemmEpilogue *epilogue : {&perRow, &scaleOnly}) {
    std::vector<float> d(kRows * kColumns);
    packedGemmBf16(a.data(), kDepth, kRows, packed, *epilogue, d.data(),
                   kColumns, nullptr, Bf16Kernels::Amx);
    for (int64_t i = 0; i < kRows; ++i)
      for (int64_t j = 0; j < kColumns; ++j) {
        float sum = sums[i * kColumns + j];
        float want =
            epilogue->bias ? sum + 0.5f * bias[i * kColumns + j] : 3.0f * sum;
        ASSERT_EQ(d[i * kColumns + j], want) << "(" << i << ", " << j << ")";
      }
  }
}

class AmxBatchTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(AmxBatchTest, EveryRowHasItsBitsInAnyBatchAndSplit) {
  SKIP_WITHOUT_AMX();
  const int64_t kDepth = GetParam(), kColumns = 16 * 13 + 5, kRows = 150;
  std::mt19937 random(19);
  std::vector<float> a = randomFloats(random, kRows * kDepth);
  std::vector<float> w = randomFloats(random, kColumns * kDepth);
  PackedMatrixBf16 packed(w.data(), kDepth, kColumns, true);
  GemmEpilogue epilogue;
  // Each row alone, on the calling thread.
  std::vector<float> alone(kRows * kColumns);
  for (int64_t r = 0; r < kRows; ++r)
    packedGemmBf16(a.data() + r * kDepth, kDepth, 1, packed, epilogue,
                   alone.data() + r * kColumns, kColumns, nullptr,
                   Bf16Kernels::Amx);
  ThreadPool two(2), three(3);
  for (int64_t rows : {2, 15, 16, 17, 31, 32, 33, 150})
    for (ThreadPool *workers :
         {static_cast<ThreadPool *>(nullptr), &two, &three}) {
      // A batch starting at row `first`: each row lands in a different
      // place of its tiles than when it ran alone.
      int64_t first = kRows - rows;
      std::vector<float> batch(rows * kColumns);
      packedGemmBf16(a.data() + first * kDepth, kDepth, rows, packed, epilogue,
                     batch.data(), kColumns, workers, Bf16Kernels::Amx);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(std::memcmp(batch.data() + r * kColumns,
                              alone.data() + (first + r) * kColumns,
                              kColumns * sizeof(float)),
                  0)
            << "row " << first + r << " differs in a batch of " << rows
            << " from its product alone";
    }
}

// Whole tiles of k, and depths padded to them.
INSTANTIATE_TEST_SUITE_P(Depths, AmxBatchTest,
                         ::testing::Values(int64_t{640}, int64_t{601},
                                           int64_t{17}));

} // namespace
