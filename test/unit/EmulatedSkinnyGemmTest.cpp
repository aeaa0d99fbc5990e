//===- EmulatedSkinnyGemmTest.cpp - The small-batch GEMM kernel on the CPU ===//
//
// The skinny GEMM kernels (SkinnyGemmKernel.h), as every cell's CUDA code
// carries them, each that takes the rows run through its emulation launcher
// against a double-precision GEMM and against each other (the variants add
// in the same order, so their bits must agree; those that gather A also
// with A's rows read where they lie in a larger pool, and for a task of
// fewer rows than the plan, whose padding row's index is never read):
// row counts 1..16, column tiles cut short, k not a multiple of a slice, one
// slice and several (the last-block reduction), slices longer than the
// 512 values of k the kernel stages in shared memory at a time, a bias vector,
// a full C and neither, and a second launch on the same counters (which the
// last block of each tile must have reset).
//
//===----------------------------------------------------------------------===//
#include "SkinnyGemmKernel.h"

#include "RandomFloats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <random>
#include <string>
#include <vector>

namespace {

using Launch = void (*)(void **args, unsigned grid, unsigned block);

struct Case {
  int m, n, k, splits;
  bool bias, fullC;
};

std::string caseName(const Case &c) {
  return "m" + std::to_string(c.m) + "_n" + std::to_string(c.n) + "_k" +
         std::to_string(c.k) + "_splits" + std::to_string(c.splits) +
         (c.bias ? "_bias" : "") + (c.fullC ? "_c" : "");
}
/// What gtest (and ctest's test list) prints for the parameter.
void PrintTo(const Case &c, std::ostream *os) { *os << caseName(c); }

class EmulatedSkinnyGemmTest : public ::testing::TestWithParam<Case> {};

TEST_P(EmulatedSkinnyGemmTest, MatchesADoubleGemm) {
  const Case &shape = GetParam();
  ASSERT_TRUE(cellpack::skinnyGemmFits(shape.m, shape.n, shape.k));
  std::string path =
      std::string(CELL_EMULATED_KERNELS_DIR) + "/libemulated-lstm.so";
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  std::mt19937 random(shape.m * 1000 + shape.n + shape.k + shape.splits);
  auto filled = [&](size_t count) {
    return cellc::testing::randomFloats(random, count);
  };
  int m = shape.m, n = shape.n, k = shape.k;
  std::vector<float> a = filled(size_t(m) * k), b = filled(size_t(k) * n);
  std::vector<float> biasValues = filled(n), cValues = filled(size_t(m) * n);
  float alpha = 0.75f, beta = 1.5f;
  cellpack::SkinnyGemmLaunch geometry =
      cellpack::skinnyGemmLaunch(n, k, shape.splits);
  ASSERT_EQ(geometry.kPerSplit % cellpack::kSkinnyGemmSliceRows, 0);
  ASSERT_GE(static_cast<long long>(geometry.kPerSplit) * geometry.splits, k);
  ASSERT_LT(static_cast<long long>(geometry.kPerSplit) * (geometry.splits - 1),
            k);
  std::vector<float> partial(size_t(geometry.splits) * m * n, NAN);
  std::vector<unsigned> counters(geometry.tiles, 0u);

  std::vector<double> expected(size_t(m) * n);
  for (int r = 0; r < m; ++r)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int kk = 0; kk < k; ++kk)
        sum += double(a[size_t(r) * k + kk]) * b[size_t(kk) * n + j];
      double value = alpha * sum;
      if (shape.bias)
        value += beta * biasValues[j];
      if (shape.fullC)
        value += beta * cValues[size_t(r) * n + j];
      expected[size_t(r) * n + j] = value;
    }

  // A's rows scattered over a pool of 2m + 3 rows (row r at poolRows[r]),
  // for the variants that read them where they lie.
  std::vector<int> poolRows(m);
  std::vector<float> pool(size_t(2 * m + 3) * k, NAN);
  for (int r = 0; r < m; ++r) {
    poolRows[r] = 2 * (m - 1 - r) + 1;
    std::memcpy(pool.data() + size_t(poolRows[r]) * k, a.data() + size_t(r) * k,
                size_t(k) * sizeof(float));
  }

  std::vector<float> firstResult; // the first variant's D
  int variantsRun = 0;
  for (const cellpack::SkinnyGemmVariant &variant :
       cellpack::kSkinnyGemmVariants) {
    if (variant.maxRows < shape.m)
      continue;
    SCOPED_TRACE(variant.name);
    auto gemm = reinterpret_cast<Launch>(
        dlsym(library, (std::string(variant.name) + "__emulate").c_str()));
    ASSERT_NE(gemm, nullptr);
    for (int launchIndex = 0; launchIndex < 2; ++launchIndex) {
      // A gathering variant's second launch reads A's rows in the pool.
      bool gathered = variant.gathersA && launchIndex == 1;
      std::vector<float> d(size_t(m) * n, NAN);
      const float *aPointer = gathered ? pool.data() : a.data();
      const int *aRowsPointer = gathered ? poolRows.data() : nullptr;
      const float *bPointer = b.data();
      const float *biasPointer = shape.bias ? biasValues.data() : nullptr;
      const float *cPointer = shape.fullC ? cValues.data() : nullptr;
      float *dPointer = d.data(), *partialPointer = partial.data();
      unsigned *counterPointer = counters.data();
      int splits = geometry.splits, kPerSplit = geometry.kPerSplit;
      void *dense[] = {
          &aPointer,       &bPointer,       &biasPointer, &cPointer, &dPointer,
          &partialPointer, &counterPointer, &m,           &n,        &k,
          &splits,         &kPerSplit,      &alpha,       &beta};
      void *withRows[] = {
          &aPointer, &aRowsPointer,   &bPointer,       &biasPointer, &cPointer,
          &dPointer, &partialPointer, &counterPointer, &m,           &n,
          &k,        &splits,         &kPerSplit,      &alpha,       &beta};
      gemm(variant.gathersA ? withRows : dense, geometry.grid(),
           cellpack::kSkinnyGemmBlockSize);
      for (int r = 0; r < m; ++r)
        for (int j = 0; j < n; ++j) {
          double want = expected[size_t(r) * n + j];
          ASSERT_NEAR(d[size_t(r) * n + j], want, 1e-4 * (1 + std::fabs(want)))
              << "launch " << launchIndex << " row " << r << " column " << j;
        }
      for (int tile = 0; tile < geometry.tiles; ++tile)
        ASSERT_EQ(counters[tile], 0u) << "tile " << tile << " not reset";
      if (launchIndex == 0 && firstResult.empty())
        firstResult = d;
      else
        ASSERT_EQ(
            std::memcmp(d.data(), firstResult.data(), d.size() * sizeof(float)),
            0)
            << "launch " << launchIndex << (gathered ? " (gathered A)" : "")
            << " differs from the first variant's";
    }
    if (variant.gathersA && m > 1) {
      // A task of m - 1 rows: A's rows 1..m-1 from the pool, and for the
      // plan's padding row an index far outside it, which must not be read
      // (on the CPU it would fault), nor that row of D written.
      std::vector<int> shifted(poolRows.begin() + 1, poolRows.end());
      shifted.push_back(1 << 30);
      std::vector<float> d(size_t(m) * n, NAN);
      const float *aPointer = pool.data(), *bPointer = b.data();
      const int *aRowsPointer = shifted.data();
      const float *biasPointer = shape.bias ? biasValues.data() : nullptr;
      const float *cPointer = shape.fullC ? cValues.data() : nullptr;
      float *dPointer = d.data(), *partialPointer = partial.data();
      unsigned *counterPointer = counters.data();
      int rows = m - 1, splits = geometry.splits,
          kPerSplit = geometry.kPerSplit;
      void *args[] = {
          &aPointer, &aRowsPointer,   &bPointer,       &biasPointer, &cPointer,
          &dPointer, &partialPointer, &counterPointer, &rows,        &n,
          &k,        &splits,         &kPerSplit,      &alpha,       &beta};
      gemm(args, geometry.grid(), cellpack::kSkinnyGemmBlockSize);
      for (int r = 0; r < rows; ++r)
        for (int j = 0; j < n; ++j) {
          // Row r of D: A's row r + 1, C's row r.
          double want = expected[size_t(r + 1) * n + j];
          if (shape.fullC)
            want += beta * (double(cValues[size_t(r) * n + j]) -
                            cValues[size_t(r + 1) * n + j]);
          ASSERT_NEAR(d[size_t(r) * n + j], want, 1e-4 * (1 + std::fabs(want)))
              << "a task of " << rows << " rows, row " << r << " column " << j;
        }
      for (int j = 0; j < n; ++j)
        ASSERT_TRUE(std::isnan(d[size_t(rows) * n + j]))
            << "the padding row was written at column " << j;
      for (int tile = 0; tile < geometry.tiles; ++tile)
        ASSERT_EQ(counters[tile], 0u) << "tile " << tile << " not reset";
    }
    ++variantsRun;
  }
  EXPECT_GE(variantsRun, shape.m <= 4 ? 4 : shape.m <= 8 ? 3 : 2);
  dlclose(library);
}

INSTANTIATE_TEST_SUITE_P(Shapes, EmulatedSkinnyGemmTest,
                         ::testing::Values(Case{1, 260, 72, 1, true, false},
                                           Case{1, 260, 72, 3, true, false},
                                           Case{3, 128, 64, 4, false, false},
                                           Case{7, 132, 100, 2, false, true},
                                           Case{16, 384, 48, 3, true, false},
                                           Case{16, 36, 200, 5, true, true},
                                           Case{2, 132, 1100, 1, true, false},
                                           Case{4, 256, 1100, 2, false, false},
                                           Case{8, 260, 300, 2, true, false},
                                           Case{5, 128, 520, 1, false, true},
                                           Case{16, 132, 1060, 1, true, true},
                                           Case{12, 260, 1100, 2, false, false},
                                           Case{8, 260, 1100, 1, false, false}),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return caseName(info.param);
                         });

} // namespace
