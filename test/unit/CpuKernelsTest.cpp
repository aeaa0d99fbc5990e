//===- CpuKernelsTest.cpp - The CPU backend's GEMM and activations -------===//
//
// The packed GEMM against a double-precision reference for odd shapes (a
// last panel that is partly padding, K not a multiple of the K block, row
// counts on both sides of the small-row path), with and without a bias;
// rows read where they lie (packedGemmGathered) as if copied together;
// its batch invariance (a row's bits are the same whatever rows and
// threads it runs with) on every kernel set the processor has, and the AVX2
// and AVX-512 kernels giving the same bits; sigmoid and tanh against the C
// library over their whole range, and every version against the portable
// one.
//
//===----------------------------------------------------------------------===//
#include "ProcessorIsas.h"
#include "backend/cpu/GemmAmx.h"
#include "backend/cpu/PackedGemm.h"
#include "backend/cpu/PackedGemmBf16.h"
#include "backend/cpu/ThreadPool.h"
#include "backend/cpu/VectorMath.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
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

std::vector<CpuIsa> isas() { return cellc::testing::processorIsas(); }

struct Shape {
  int64_t m, k, n;
};

/// D (m x n, row stride ldd, filled with 42 before the product) against a
/// double reference of 0.5 * A * W^T + 2 * bias, W [n, k], the inputs first
/// passed through `round`: within 1e-6 of the sum of |products| (fp32 sums),
/// and the columns past n untouched. Row i's bias starts at i * biasStride.
template <typename Round>
void expectReference(const Shape &shape, const std::vector<float> &a,
                     const std::vector<float> &w,
                     const std::vector<float> &bias,
                     const std::vector<float> &d, int64_t ldd, Round round,
                     const std::string &what, int64_t biasStride = 0) {
  for (int64_t i = 0; i < shape.m; ++i) {
    for (int64_t j = 0; j < shape.n; ++j) {
      double sum = 0.0, magnitude = 0.0;
      for (int64_t k = 0; k < shape.k; ++k) {
        double product =
            double(round(a[i * shape.k + k])) * round(w[j * shape.k + k]);
        sum += product;
        magnitude += std::fabs(product);
      }
      ASSERT_NEAR(d[i * ldd + j], 0.5 * sum + 2.0 * bias[i * biasStride + j],
                  1e-6 * (magnitude + 4.0))
          << what << " at (" << i << ", " << j << ") of " << shape.m << "x"
          << shape.k << "x" << shape.n;
    }
    for (int64_t j = shape.n; j < ldd; ++j)
      ASSERT_EQ(d[i * ldd + j], 42.0f) << what << ": wrote past column n";
  }
}

/// packedGemm of A by `packed` (W's product) with alpha 0.5 and beta 2 on
/// `bias` (row i's at i * biasStride), on every kernel set the processor
/// has, on the calling thread and split among workers: each against the
/// reference.
void expectEveryWayMatches(const Shape &shape, const std::vector<float> &a,
                           const std::vector<float> &w,
                           const std::vector<float> &bias, int64_t biasStride,
                           const PackedMatrix &packed,
                           const std::string &what) {
  ThreadPool pool(3);
  for (CpuIsa isa : isas())
    for (ThreadPool *workers : {static_cast<ThreadPool *>(nullptr), &pool}) {
      GemmEpilogue epilogue;
      epilogue.alpha = 0.5f;
      epilogue.beta = 2.0f;
      epilogue.bias = bias.data();
      epilogue.biasStride = biasStride;
      // Columns past n in the row stride must stay untouched.
      int64_t ldd = shape.n + 3;
      std::vector<float> d(shape.m * ldd, 42.0f);
      packedGemm(a.data(), shape.k, shape.m, packed, epilogue, d.data(), ldd,
                 workers, isa);
      expectReference(
          shape, a, w, bias, d, ldd, [](float x) { return x; },
          std::string(cpuIsaName(isa)) + " " + what, biasStride);
    }
}

class PackedGemmTest : public ::testing::TestWithParam<Shape> {};

TEST_P(PackedGemmTest, MatchesADoubleReference) {
  Shape shape = GetParam();
  std::mt19937 random(7 + shape.m * 31 + shape.k * 7 + shape.n);
  std::vector<float> a = randomFloats(shape.m * shape.k, random);
  std::vector<float> w = randomFloats(shape.n * shape.k, random); // [n, k]
  std::vector<float> bias = randomFloats(shape.n, random);
  for (bool transposed : {true, false}) {
    // The same logical B either way: w is [n, k]; its transpose [k, n].
    std::vector<float> source = w;
    if (!transposed)
      for (int64_t j = 0; j < shape.n; ++j)
        for (int64_t k = 0; k < shape.k; ++k)
          source[k * shape.n + j] = w[j * shape.k + k];
    PackedMatrix packed(source.data(), shape.k, shape.n, transposed);
    expectEveryWayMatches(shape, a, w, bias, 0, packed,
                          "transposed=" + std::to_string(transposed));
  }
}

// A bias row per row of D ([m, n], e.g. a product added to a GEMM's): each
// row's own, whichever group, row block and worker finishes it.
TEST_P(PackedGemmTest, PerRowBiasMatchesADoubleReference) {
  Shape shape = GetParam();
  std::mt19937 random(11 + shape.m * 31 + shape.k * 7 + shape.n);
  std::vector<float> a = randomFloats(shape.m * shape.k, random);
  std::vector<float> w = randomFloats(shape.n * shape.k, random); // [n, k]
  int64_t biasStride = shape.n + 5;
  std::vector<float> bias = randomFloats(shape.m * biasStride, random);
  PackedMatrix packed(w.data(), shape.k, shape.n, /*transposed=*/true);
  expectEveryWayMatches(shape, a, w, bias, biasStride, packed, "per-row bias");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PackedGemmTest,
    ::testing::Values(Shape{1, 1, 1}, Shape{1, 64, 256}, Shape{3, 33, 17},
                      Shape{7, 300, 40}, Shape{16, 70, 48}, Shape{17, 257, 33},
                      Shape{150, 520, 50}, Shape{6, 0, 20}));

TEST(PackedGemmInvarianceTest, ARowHasTheSameBitsInEveryBatchAndSplit) {
  constexpr int64_t kDepth = 600, kColumns = 200, kRows = 300;
  std::mt19937 random(11);
  std::vector<float> a = randomFloats(kRows * kDepth, random);
  std::vector<float> w = randomFloats(kColumns * kDepth, random);
  std::vector<float> bias = randomFloats(kColumns, random);
  PackedMatrix packed(w.data(), kDepth, kColumns, true);
  GemmEpilogue epilogue;
  epilogue.bias = bias.data();
  ThreadPool pool(2);
  for (CpuIsa isa : isas()) {
    // Row 0 alone, then in batches of every path (small, blocked) at two
    // positions, with and without workers.
    std::vector<float> alone(kColumns);
    packedGemm(a.data(), kDepth, 1, packed, epilogue, alone.data(), kColumns,
               nullptr, isa);
    for (int64_t rows : {2, 5, 16, 17, 150, 300})
      for (ThreadPool *workers : {static_cast<ThreadPool *>(nullptr), &pool}) {
        std::vector<float> batch(rows * kColumns);
        packedGemm(a.data(), kDepth, rows, packed, epilogue, batch.data(),
                   kColumns, workers, isa);
        ASSERT_EQ(
            std::memcmp(batch.data(), alone.data(), kColumns * sizeof(float)),
            0)
            << cpuIsaName(isa) << ": row 0 differs in a batch of " << rows;
        // The last row of this batch, alone.
        std::vector<float> last(kColumns);
        packedGemm(a.data() + (rows - 1) * kDepth, kDepth, 1, packed, epilogue,
                   last.data(), kColumns, nullptr, isa);
        ASSERT_EQ(std::memcmp(batch.data() + (rows - 1) * kColumns, last.data(),
                              kColumns * sizeof(float)),
                  0)
            << cpuIsaName(isa) << ": row " << rows - 1 << " differs";
      }
  }
}

TEST(PackedGemmInvarianceTest, Avx2AndAvx512KernelsGiveTheSameBits) {
  if (!cpuHasAvx512())
    GTEST_SKIP() << "this processor has no AVX-512: the AVX2 kernels only";
  // Row counts through every block shape of both kernel sets (1-3 rows in
  // wide blocks, groups of 6, the blocked path past 16 rows), a K past
  // the K block, columns that end in a partial panel and in strips that do
  // not divide the panels.
  constexpr int64_t kDepth = 530, kColumns = 16 * 13 + 5;
  std::mt19937 random(13);
  std::vector<float> w = randomFloats(kColumns * kDepth, random);
  std::vector<float> bias = randomFloats(kColumns, random);
  PackedMatrix packed(w.data(), kDepth, kColumns, true);
  GemmEpilogue epilogue;
  epilogue.bias = bias.data();
  ThreadPool pool(2);
  for (int64_t rows : {1, 2, 3, 4, 5, 6, 7, 8, 13, 16, 17, 40, 150}) {
    std::vector<float> a = randomFloats(rows * kDepth, random);
    for (ThreadPool *workers : {static_cast<ThreadPool *>(nullptr), &pool}) {
      std::vector<float> avx2(rows * kColumns), avx512(rows * kColumns);
      packedGemm(a.data(), kDepth, rows, packed, epilogue, avx2.data(),
                 kColumns, workers, CpuIsa::Avx2);
      packedGemm(a.data(), kDepth, rows, packed, epilogue, avx512.data(),
                 kColumns, workers, CpuIsa::Avx512);
      ASSERT_EQ(
          std::memcmp(avx2.data(), avx512.data(), avx2.size() * sizeof(float)),
          0)
          << rows << " rows";
    }
  }
}

TEST(PackedGemmGatheredTest, RowsReadWhereTheyLieGiveTheSameBits) {
  // A's rows scattered through a larger "pool" (rows in random order,
  // others between them) against the same rows copied together, for row
  // counts on both sides of the small-row path and of a row block, with
  // and without threads.
  std::mt19937 random(21);
  const int64_t k = 600, n = 70, poolRows = 700;
  std::vector<float> pool = randomFloats(poolRows * k, random);
  std::vector<float> w = randomFloats(n * k, random);
  std::vector<float> bias = randomFloats(n, random);
  PackedMatrix packed(w.data(), k, n, /*transposed=*/true);
  GemmEpilogue epilogue;
  epilogue.beta = 1.0f;
  epilogue.bias = bias.data();
  ThreadPool threads(2);
  for (int64_t m : {1, 5, 16, 17, 150, 300})
    for (ThreadPool *workers : {static_cast<ThreadPool *>(nullptr), &threads}) {
      std::vector<int64_t> order(poolRows);
      for (int64_t r = 0; r < poolRows; ++r)
        order[r] = r;
      std::shuffle(order.begin(), order.end(), random);
      std::vector<const float *> rows(m);
      std::vector<float> dense(m * k);
      for (int64_t r = 0; r < m; ++r) {
        rows[r] = pool.data() + order[r] * k;
        std::copy(rows[r], rows[r] + k, dense.begin() + r * k);
      }
      std::vector<float> want(m * n), got(m * n);
      packedGemm(dense.data(), k, m, packed, epilogue, want.data(), n, workers);
      packedGemmGathered(rows.data(), m, packed, epilogue, got.data(), n,
                         workers);
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
          << m << " rows" << (workers ? ", two threads" : "");
    }
}

TEST(Bf16GemmTest, RoundsToNearestEven) {
  EXPECT_EQ(toBf16(1.0f), 0x3f80);
  EXPECT_EQ(toBf16(1.00390625f), 0x3f80); // halfway, to the even 1.0
  EXPECT_EQ(toBf16(1.01171875f), 0x3f82); // halfway, to the even 1.015625
  EXPECT_EQ(toBf16(std::nextafter(1.00390625f, 2.0f)), 0x3f81); // past it
  EXPECT_EQ(toBf16(-2.5f), 0xc020);
  EXPECT_TRUE(std::isnan(fromBf16(toBf16(NAN))));
  EXPECT_EQ(fromBf16(toBf16(3.0f)), 3.0f);
}

TEST(Bf16GemmTest, MatchesADoubleReferenceOfTheRoundedInputs) {
  ThreadPool pool(3);
  for (Shape shape : {Shape{1, 1, 1}, Shape{3, 33, 17}, Shape{7, 301, 40},
                      Shape{17, 257, 33}, Shape{150, 1030, 70}}) {
    std::mt19937 random(3 + shape.m + shape.k + shape.n);
    std::vector<float> a = randomFloats(shape.m * shape.k, random);
    std::vector<float> w = randomFloats(shape.n * shape.k, random); // [n, k]
    std::vector<float> bias = randomFloats(shape.n, random);
    PackedMatrixBf16 packed(w.data(), shape.k, shape.n, true);
    // AMX (GemmAmx.h) sums in its own order: within the same bound.
    for (Bf16Kernels kernels :
         {Bf16Kernels::Portable, Bf16Kernels::Avx512Bf16, Bf16Kernels::Amx}) {
      if ((kernels == Bf16Kernels::Avx512Bf16 && !cpuHasAvx512Bf16()) ||
          (kernels == Bf16Kernels::Amx && !amxTakes(packed)))
        continue;
      for (ThreadPool *workers : {static_cast<ThreadPool *>(nullptr), &pool}) {
        GemmEpilogue epilogue;
        epilogue.alpha = 0.5f;
        epilogue.beta = 2.0f;
        epilogue.bias = bias.data();
        int64_t ldd = shape.n + 3;
        std::vector<float> d(shape.m * ldd, 42.0f);
        packedGemmBf16(a.data(), shape.k, shape.m, packed, epilogue, d.data(),
                       ldd, workers, kernels);
        // fp32 sums of products of bf16 values, which are exact.
        expectReference(
            shape, a, w, bias, d, ldd,
            [](float x) { return fromBf16(toBf16(x)); },
            "bf16 kernels " + std::to_string(static_cast<int>(kernels)));
      }
    }
  }
}

TEST(Bf16GemmTest, SameBitsInEveryBatchAndOnBothKernels) {
  constexpr int64_t kDepth = 601, kColumns = 16 * 13 + 5, kRows = 150;
  std::mt19937 random(17);
  std::vector<float> a = randomFloats(kRows * kDepth, random);
  std::vector<float> w = randomFloats(kColumns * kDepth, random);
  PackedMatrixBf16 packed(w.data(), kDepth, kColumns, true);
  ThreadPool pool(2);
  GemmEpilogue epilogue;
  std::vector<float> alone(kColumns);
  packedGemmBf16(a.data(), kDepth, 1, packed, epilogue, alone.data(), kColumns,
                 nullptr, Bf16Kernels::Portable);
  for (bool avx512Bf16 : {false, true}) {
    if (avx512Bf16 && !cpuHasAvx512Bf16())
      continue;
    for (int64_t rows : {1, 2, 3, 5, 8, 16, 17, 150})
      for (ThreadPool *workers : {static_cast<ThreadPool *>(nullptr), &pool}) {
        std::vector<float> batch(rows * kColumns);
        packedGemmBf16(a.data(), kDepth, rows, packed, epilogue, batch.data(),
                       kColumns, workers,
                       avx512Bf16 ? Bf16Kernels::Avx512Bf16
                                  : Bf16Kernels::Portable);
        ASSERT_EQ(
            std::memcmp(batch.data(), alone.data(), kColumns * sizeof(float)),
            0)
            << "avx512bf16=" << avx512Bf16 << ": row 0 differs in a batch of "
            << rows << " (from the portable kernel alone)";
      }
  }
}

/// Relative error in units of the float spacing at the true value.
double ulps(float got, double want) {
  double spacing =
      std::ldexp(1.0, std::ilogb(std::max(std::fabs(want), 1e-37)) - 23);
  return std::fabs(got - want) / spacing;
}

TEST(VectorMathTest, SigmoidAndTanhAreAccurateOverTheirRange) {
  std::vector<float> inputs;
  for (float x = -30.0f; x <= 30.0f; x += 0.00731f)
    inputs.push_back(x);
  // tanh's rational function is clamped at 9.02 (and 9.0109 is where tanh
  // rounds to 1); 5.99860096 is where it is furthest from tanh (5.26 ulp,
  // found over every float).
  for (float x : {0.0f, -0.0f, 0.625f, -0.625f, 1e-30f, 88.0f, -88.0f, 1000.0f,
                  -1000.0f, 9.0109f, 9.02f, -9.03f, 5.99860096f, -5.99860096f})
    inputs.push_back(x);
  for (CpuIsa isa : isas()) {
    std::vector<float> sigmoid(inputs.size()), tanh(inputs.size());
    sigmoidArray(inputs.data(), sigmoid.data(), inputs.size(), isa);
    tanhArray(inputs.data(), tanh.data(), inputs.size(), isa);
    double worstSigmoid = 0.0, worstTanh = 0.0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      double x = inputs[i];
      double wantSigmoid = 1.0 / (1.0 + std::exp(-x));
      double wantTanh = std::tanh(x);
      // Below 1e-30 the absolute error is what matters (denormals).
      if (wantSigmoid > 1e-30)
        worstSigmoid = std::max(worstSigmoid, ulps(sigmoid[i], wantSigmoid));
      else
        ASSERT_LT(sigmoid[i], 1e-30f);
      worstTanh =
          std::max(worstTanh, std::fabs(x) < 1e-30 ? std::fabs(tanh[i] - x)
                                                   : ulps(tanh[i], wantTanh));
    }
    EXPECT_LE(worstSigmoid, 4.0) << cpuIsaName(isa);
    EXPECT_LE(worstTanh, 5.5) << cpuIsaName(isa);
    EXPECT_GT(worstTanh, 5.0) << cpuIsaName(isa) << ": the worst input moved";
    EXPECT_EQ(std::signbit(tanh[inputs.size() - 13]), true) << "tanh(-0)";
    std::printf("%s: worst sigmoid %.2f ulp, worst tanh %.2f ulp\n",
                cpuIsaName(isa), worstSigmoid, worstTanh);
  }
}

TEST(VectorMathTest, NanPassesThroughAndLimitsHold) {
  float inputs[9] = {NAN, 1e4f, -1e4f, INFINITY, -INFINITY, 0, 0, 0, 0};
  for (CpuIsa isa : isas()) {
    float sigmoid[9], tanh[9];
    sigmoidArray(inputs, sigmoid, 9, isa);
    tanhArray(inputs, tanh, 9, isa);
    EXPECT_TRUE(std::isnan(sigmoid[0]) && std::isnan(tanh[0]));
    EXPECT_EQ(sigmoid[1], 1.0f);
    EXPECT_LT(sigmoid[2], 1e-37f);
    EXPECT_EQ(sigmoid[3], 1.0f);
    EXPECT_EQ(tanh[1], 1.0f);
    EXPECT_EQ(tanh[2], -1.0f);
    EXPECT_EQ(tanh[3], 1.0f);
    EXPECT_EQ(tanh[4], -1.0f);
    EXPECT_EQ(sigmoid[5], 0.5f);
    EXPECT_EQ(tanh[5], 0.0f);
  }
}

TEST(VectorMathTest, ExpIsAccurateOverTheFloatRange) {
  std::vector<float> inputs;
  for (float x = -103.5f; x <= 88.7f; x += 0.0173f)
    inputs.push_back(x);
  for (CpuIsa isa : isas()) {
    std::vector<float> result(inputs.size());
    expArray(inputs.data(), result.data(), inputs.size(), isa);
    double worst = 0.0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      double want = std::exp(double(inputs[i]));
      if (want >= 1.2e-38) // normal results: within a few ulp
        worst = std::max(worst, ulps(result[i], want));
      else // subnormal ones: within their spacing
        ASSERT_LE(std::fabs(result[i] - want), 2.0 * 1.5e-45) << inputs[i];
    }
    EXPECT_LE(worst, 4.0) << cpuIsaName(isa);
    std::printf("%s: worst exp %.2f ulp\n", cpuIsaName(isa), worst);
  }
}

TEST(VectorMathTest, ExpLimitsAndNan) {
  // The float above ln(FLT_MAX) overflows; the one below it does not.
  float inputs[8] = {NAN,
                     INFINITY,
                     -INFINITY,
                     89.0f,
                     88.72283935546875f,
                     88.72283172607422f,
                     -110.0f,
                     0.0f};
  for (CpuIsa isa : isas()) {
    float result[8];
    expArray(inputs, result, 8, isa);
    EXPECT_TRUE(std::isnan(result[0])) << cpuIsaName(isa);
    EXPECT_EQ(result[1], INFINITY);
    EXPECT_EQ(result[2], 0.0f);
    EXPECT_EQ(result[3], INFINITY);
    EXPECT_EQ(result[4], INFINITY);
    EXPECT_TRUE(std::isfinite(result[5]));
    EXPECT_GT(result[5], 3.4e38f);
    EXPECT_EQ(result[6], 0.0f);
    EXPECT_EQ(result[7], 1.0f);
  }
}

TEST(VectorMathTest, EveryVersionGivesThePortableBits) {
  if (!cpuHasAvx2())
    GTEST_SKIP() << "this processor has no AVX2: one version only";
  std::mt19937 random(5);
  std::vector<float> inputs = randomFloats(10001, random);
  for (float &x : inputs)
    x *= 12.0f;
  // And many small ones, where the roundings of tanh's x P(x^2) / Q(x^2)
  // (a multiply-add fused in one version and not in another) show.
  for (float x : randomFloats(40000, random))
    inputs.push_back(x * 0.7f);
  // And the edges: zeros, infinities, a NaN with a payload, subnormals, the
  // clamps.
  float payloadNan;
  uint32_t payloadBits = 0x7fc01234u;
  std::memcpy(&payloadNan, &payloadBits, sizeof(payloadNan));
  for (float x : {0.0f, -0.0f, INFINITY, -INFINITY, payloadNan, -payloadNan,
                  1e-40f, -1e-40f, 1e-45f, 9.02f, -9.02f, 88.0f, -104.0f})
    inputs.push_back(x);
  std::vector<float> portable(inputs.size()), vector(inputs.size());
  std::vector<float> portableTanh(inputs.size());
  sigmoidArray(inputs.data(), portable.data(), inputs.size(), CpuIsa::Generic);
  tanhArray(inputs.data(), portableTanh.data(), inputs.size(), CpuIsa::Generic);
  for (CpuIsa isa : isas()) {
    sigmoidArray(inputs.data(), vector.data(), inputs.size(), isa);
    for (size_t i = 0; i < inputs.size(); ++i)
      ASSERT_EQ(std::memcmp(&vector[i], &portable[i], sizeof(float)), 0)
          << cpuIsaName(isa) << " sigmoid(" << inputs[i] << ")";
    tanhArray(inputs.data(), vector.data(), inputs.size(), isa);
    for (size_t i = 0; i < inputs.size(); ++i)
      ASSERT_EQ(std::memcmp(&vector[i], &portableTanh[i], sizeof(float)), 0)
          << cpuIsaName(isa) << " tanh(" << inputs[i] << ")";
  }
  // exp over more of its range: results from subnormal to near FLT_MAX.
  for (float &x : inputs)
    x *= 8.0f;
  std::vector<float> portableExp(inputs.size());
  expArray(inputs.data(), portableExp.data(), inputs.size(), CpuIsa::Generic);
  for (CpuIsa isa : isas()) {
    expArray(inputs.data(), vector.data(), inputs.size(), isa);
    for (size_t i = 0; i < inputs.size(); ++i)
      ASSERT_EQ(std::memcmp(&vector[i], &portableExp[i], sizeof(float)), 0)
          << cpuIsaName(isa) << " exp(" << inputs[i] << ")";
  }
}

TEST(VectorMathTest, TailsGiveThePortableBitsAndWriteNothingPast) {
  // Every length up to three vectors: the masked tail lanes give the
  // portable bits, and the floats after the array keep theirs.
  std::mt19937 random(13);
  for (int64_t count = 1; count <= 48; ++count) {
    std::vector<float> inputs = randomFloats(count, random);
    for (float &x : inputs)
      x *= 15.0f;
    std::vector<float> portable(count);
    for (CpuIsa isa : isas()) {
      using Function = void (*)(const float *, float *, int64_t, CpuIsa);
      for (Function function :
           {Function(sigmoidArray), Function(tanhArray), Function(expArray)}) {
        function(inputs.data(), portable.data(), count, CpuIsa::Generic);
        std::vector<float> got(count + 8, 42.0f);
        function(inputs.data(), got.data(), count, isa);
        for (int64_t i = 0; i < count; ++i)
          ASSERT_EQ(std::memcmp(&got[i], &portable[i], sizeof(float)), 0)
              << cpuIsaName(isa) << ", length " << count << ", element " << i;
        for (int64_t i = count; i < count + 8; ++i)
          ASSERT_EQ(got[i], 42.0f)
              << cpuIsaName(isa) << ": wrote past " << count;
      }
    }
  }
}

TEST(VectorMathTest, RowsWhereverTheyLieGiveTheArraysBits) {
  // Rows of 1-40 floats (vector tails included) read through pointers into
  // a larger buffer, against the array functions over the same rows copied
  // together first, on every version the processor runs.
  std::mt19937 random(9);
  for (CpuIsa isa : isas())
    for (int64_t count : {1, 7, 16, 17, 40}) {
      int64_t rows = 13, stride = count + 5;
      std::vector<float> source = randomFloats(rows * stride, random);
      for (float &x : source)
        x *= 9.0f;
      std::vector<const float *> pointers;
      std::vector<float> packed;
      for (int64_t r = 0; r < rows; ++r) {
        int64_t row = (r * 5) % rows; // out of order, as gathered rows are
        pointers.push_back(source.data() + row * stride + 2);
        packed.insert(packed.end(), pointers.back(), pointers.back() + count);
      }
      std::vector<float> want(packed.size()), got(packed.size());
      sigmoidArray(packed.data(), want.data(), packed.size(), isa);
      sigmoidRows(pointers.data(), got.data(), rows, count, isa);
      EXPECT_EQ(got, want) << cpuIsaName(isa) << " sigmoid, " << count;
      tanhArray(packed.data(), want.data(), packed.size(), isa);
      tanhRows(pointers.data(), got.data(), rows, count, isa);
      EXPECT_EQ(got, want) << cpuIsaName(isa) << " tanh, " << count;
    }
}

} // namespace
