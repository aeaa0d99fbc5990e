//===- GemmAmxTest.cpp - bf16 products on AMX tiles
//------------------------===//
//
// The AMX kernel (GemmAmx.h) where this processor and OS run it: its sums
// against a double reference of the bf16-rounded inputs, the same bits for
// a row in any batch and any split among threads, the columns past n left
// alone, at depths that fill whole tiles and at others (padded).
//
//===----------------------------------------------------------------------===//
#include "backend/cpu/GemmAmx.h"
#include "backend/cpu/PackedGemmBf16.h"
#include "backend/cpu/ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace cellrun::cpu;

namespace {

std::vector<float> randomFloats(size_t count, std::mt19937 &random) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float &value : values)
    value = uniform(random);
  return values;
}

float roundedToBf16(float x) { return fromBf16(toBf16(x)); }

#define SKIP_WITHOUT_AMX()                                                     \
  if (!cpuHasAmxBf16())                                                        \
  GTEST_SKIP() << "no AMX bf16 here (processor, OS, CELLRUN_CPU_AMX=off or "   \
                  "CELLRUN_CPU_ISA)"

TEST(AmxGemmTest, MatchesADoubleReferenceOfTheRoundedInputs) {
  SKIP_WITHOUT_AMX();
  ThreadPool pool(3);
  struct Shape {
    int64_t m, k, n;
  };
  for (Shape shape :
       {Shape{1, 32, 16}, Shape{3, 64, 17}, Shape{17, 96, 40},
        Shape{33, 1024, 70}, Shape{150, 256, 33}, Shape{1, 1, 1},
        Shape{5, 33, 20}, Shape{40, 301, 48}, Shape{17, 1030, 33}}) {
    std::mt19937 random(5 + shape.m + shape.k + shape.n);
    std::vector<float> a = randomFloats(shape.m * shape.k, random);
    std::vector<float> w = randomFloats(shape.n * shape.k, random); // [n, k]
    std::vector<float> bias = randomFloats(shape.n, random);
    PackedMatrixBf16 packed(w.data(), shape.k, shape.n, true);
    ASSERT_TRUE(amxTakes(packed)) << shape.k;
    for (ThreadPool *workers : {static_cast<ThreadPool *>(nullptr), &pool}) {
      GemmEpilogue epilogue;
      epilogue.alpha = 0.5f;
      epilogue.beta = 2.0f;
      epilogue.bias = bias.data();
      int64_t ldd = shape.n + 3;
      std::vector<float> d(shape.m * ldd, 42.0f);
      packedGemmBf16(a.data(), shape.k, shape.m, packed, epilogue, d.data(),
                     ldd, workers, Bf16Kernels::Amx);
      for (int64_t i = 0; i < shape.m; ++i) {
        for (int64_t j = 0; j < shape.n; ++j) {
          double sum = 0.0, magnitude = 0.0;
          for (int64_t k = 0; k < shape.k; ++k) {
            double product = double(roundedToBf16(a[i * shape.k + k])) *
                             roundedToBf16(w[j * shape.k + k]);
            sum += product;
            magnitude += std::fabs(product);
          }
          ASSERT_NEAR(d[i * ldd + j], 0.5 * sum + 2.0 * bias[j],
                      1e-6 * (magnitude + 4.0))
              << "(" << i << ", " << j << ") of " << shape.m << "x" << shape.k
              << "x" << shape.n;
        }
        for (int64_t j = shape.n; j < ldd; ++j)
          ASSERT_EQ(d[i * ldd + j], 42.0f) << "wrote past column n";
      }
    }
  }
}

TEST(AmxGemmTest, PerRowBiasAndScaleOnly) {
  // The epilogue's other forms as the rows leave the tiles: a bias row per
  // row of D (biasStride n), and a scale without bias.
  SKIP_WITHOUT_AMX();
  constexpr int64_t kRows = 19, kDepth = 70, kColumns = 37;
  std::mt19937 random(29);
  std::vector<float> a = randomFloats(kRows * kDepth, random);
  std::vector<float> w = randomFloats(kColumns * kDepth, random);
  std::vector<float> bias = randomFloats(kRows * kColumns, random);
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
  std::vector<float> a = randomFloats(kRows * kDepth, random);
  std::vector<float> w = randomFloats(kColumns * kDepth, random);
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
