//===- RegionFusedGatesTest.cpp - An LSTM's gates as one op ---------------===//
//
// The region interpreter runs an LSTM's element-wise step as one op
// (RegionFusion.cpp, LstmGates.h). It must be found in the example cells
// that have it (and only there), give the same bits as the ops one by one
// (CELLRUN_CPU_FUSED_GATES=off) on every example's tasks (ExampleTasks.h),
// and the fused loop itself must give the same bits on every instruction
// set, whatever the width, the gates' order and whether the pre-activations
// are a sum, and write the rows given copy places there too (a request's
// results) and nowhere else.
//
//===----------------------------------------------------------------------===//
#include "ExampleTasks.h"

#include "backend/cpu/LstmGates.h"
#include "backend/cpu/RegionInterpreter.h"
#include "backend/cpu/VectorMath.h"

#include <cmath>
#include <cstdlib>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace {
using namespace cellc::testing;

/// Fused gates over the region steps of every plan of `model`'s cells.
int fusedGatesOf(const std::string &model) {
  return sumOverRegions(model, false, [](RegionInterpreter &interpreter) {
    return interpreter.fusedGateCount();
  });
}

size_t planCount(const std::string &model) {
  auto artifact = loadExample(model);
  size_t plans = 0;
  for (const cellpack::CellType *cell : artifact->cells())
    plans += cell->plans()->size();
  return plans;
}

TEST(RegionFusedGatesTest, FoundInTheLstmCellsOnly) {
  // One LSTM step in every plan of the LSTM; the attention model's encoder
  // and decoder are LSTMs too.
  EXPECT_EQ(fusedGatesOf("lstm"), static_cast<int>(planCount("lstm")));
  EXPECT_EQ(fusedGatesOf("attention"),
            static_cast<int>(planCount("attention")));
  EXPECT_GE(fusedGatesOf("seq2seq"), 1);
  EXPECT_GE(fusedGatesOf("stacked"), 1);
  EXPECT_GE(fusedGatesOf("bahdanau"), 1);
  // Other cells' element-wise steps are not an LSTM's (the LN-LSTM
  // normalises between the ops, the sLSTM exponentiates its gates).
  EXPECT_EQ(fusedGatesOf("gru"), 0);
  EXPECT_EQ(fusedGatesOf("treelstm"), 0);
  EXPECT_EQ(fusedGatesOf("mingru"), 0);
  EXPECT_EQ(fusedGatesOf("lnlstm"), 0);
  EXPECT_EQ(fusedGatesOf("slstm"), 0);
  setenv("CELLRUN_CPU_FUSED_GATES", "off", 1);
  EXPECT_EQ(fusedGatesOf("lstm"), 0);
  unsetenv("CELLRUN_CPU_FUSED_GATES");
}

class RegionFusedGatesExampleTest
    : public ::testing::TestWithParam<const char *> {};

TEST_P(RegionFusedGatesExampleTest, SameBitsAsTheOpsOneByOne) {
  EXPECT_GE(sameOutputsWithSwitchOff(GetParam(), "CELLRUN_CPU_FUSED_GATES"), 4);
}

INSTANTIATE_TEST_SUITE_P(Examples, RegionFusedGatesExampleTest,
                         ::testing::Values("lstm", "seq2seq", "stacked",
                                           "lnlstm", "attention", "bahdanau",
                                           "slstm"));

/// The first 64-byte aligned float of `floats` (at least 16 floats longer than
/// what is used from there), every float set to `fill`.
float *alignedFloats(std::vector<float> &floats, float fill) {
  std::fill(floats.begin(), floats.end(), fill);
  uintptr_t at = reinterpret_cast<uintptr_t>(floats.data());
  return floats.data() + ((64 - at % 64) % 64) / sizeof(float);
}

/// A block of `rows` rows whose pre-activations and cell states lie at
/// aRows and cRows, its results into `cell` and `out`.
LstmGateRows gateBlock(const std::vector<const float *> &aRows,
                       const std::vector<const float *> &cRows,
                       std::vector<float> &cell, std::vector<float> &out,
                       int64_t rows, int64_t hidden, const int64_t *offsets) {
  LstmGateRows block;
  block.a = aRows.data();
  block.c = cRows.data();
  block.cOut = cell.data();
  block.hOut = out.data();
  block.rows = rows;
  block.hidden = hidden;
  std::copy(offsets, offsets + 4, block.offsets);
  return block;
}

/// The fused loop against the scalar functions, op by op, on every
/// instruction set this machine has: widths with and without a partial
/// vector, gates in a shuffled order within a wider row, with and without
/// the sum, inputs spanning sigmoid's and tanh's ranges (and NaNs and
/// infinities).
TEST(LstmGatesTest, EveryInstructionSetGivesTheOpsBits) {
  std::mt19937 random(5);
  std::uniform_real_distribution<float> wide(-12.0f, 12.0f);
  std::vector<CpuIsa> isas = isasUpToTheOneInUse();
  for (int64_t hidden : {1, 7, 8, 16, 17, 40, 64}) {
    for (bool summed : {false, true}) {
      const int64_t rows = 9, width = 4 * hidden + 3; // 3 floats unused
      const int64_t offsets[4] = {2 * hidden + 3, 0, 3 * hidden + 3, hidden};
      std::vector<float> a(rows * width), b(rows * width), c(rows * hidden);
      for (float &x : a)
        x = wide(random);
      for (float &x : b)
        x = wide(random) / 4;
      for (float &x : c)
        x = wide(random) / 3;
      // NaNs meeting in f * c (row 0's first element) stay NaNs.
      float nanA, nanB;
      uint32_t bitsA = 0x7fc01234, bitsB = 0xffc05678;
      std::memcpy(&nanA, &bitsA, 4);
      std::memcpy(&nanB, &bitsB, 4);
      a[offsets[1]] = nanA;
      c[0] = nanB;
      // Infinities, which make no NaN (row 1), and a NaN in a row's last
      // element only (row 2): vectors checked for NaNs as a whole take the
      // activations without their NaN blends, the others the blends.
      a[width + offsets[0]] = INFINITY;
      a[width + offsets[2] + hidden / 2] = -INFINITY;
      a[width + offsets[3] + hidden - 1] = -INFINITY;
      c[hidden + hidden / 2] = INFINITY;
      c[hidden + hidden - 1] = -INFINITY;
      a[width + offsets[1] + hidden / 2] = -INFINITY; // f tiny, c infinite
      c[2 * hidden + hidden - 1] = nanA;
      std::vector<const float *> aRows, bRows, cRows;
      for (int64_t r = rows; r-- > 0;) { // rows in another order
        aRows.push_back(&a[r * width]);
        bRows.push_back(&b[r * width]);
        cRows.push_back(&c[r * hidden]);
      }
      // The ops one by one, as the interpreter runs them.
      std::vector<float> wantCell(rows * hidden), wantHidden(rows * hidden);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < hidden; ++k) {
          float gate[4];
          for (int g = 0; g < 4; ++g) {
            int64_t at = offsets[g] + k;
            gate[g] = summed ? aRows[r][at] + bRows[r][at] : aRows[r][at];
          }
          float forget = sigmoidScalar(gate[1]);
          float input = sigmoidScalar(gate[0]);
          float candidate = tanhScalar(gate[2]);
          float output = sigmoidScalar(gate[3]);
          float kept = forget * cRows[r][k];
          float added = input * candidate;
          float cell = kept + added;
          float squashed = tanhScalar(cell);
          wantCell[r * hidden + k] = cell;
          wantHidden[r * hidden + k] = output * squashed;
        }
      for (CpuIsa isa : isas) {
        std::vector<float> cell(rows * hidden + 5, -7.0f),
            out(rows * hidden + 5, -7.0f);
        // Copies of some rows elsewhere (a request's results): c' of odd
        // rows, h' of rows not divisible by 3; the others none. Each row's
        // copy starts a cache line (written by non-temporal stores where
        // the row is whole lines) but row 3's and row 7's, 4 floats on;
        // `stride` floats a row, the floats between left alone.
        const int64_t stride = hidden + 32;
        auto at = [&](int64_t r) { return r * stride + (r % 4 == 3 ? 4 : 0); };
        std::vector<float> cellCopyFloats(rows * stride + 32),
            outCopyFloats(rows * stride + 32);
        float *cellCopy = alignedFloats(cellCopyFloats, -9.0f);
        float *outCopy = alignedFloats(outCopyFloats, -9.0f);
        std::vector<float *> cellCopyRows, outCopyRows;
        for (int64_t r = 0; r < rows; ++r) {
          cellCopyRows.push_back(r % 2 ? cellCopy + at(r) : nullptr);
          outCopyRows.push_back(r % 3 ? outCopy + at(r) : nullptr);
        }
        LstmGateRows block =
            gateBlock(aRows, cRows, cell, out, rows, hidden, offsets);
        block.b = summed ? bRows.data() : nullptr;
        block.cCopyRows = cellCopyRows.data();
        block.hCopyRows = outCopyRows.data();
        lstmGateRows(block, isa);
        std::string where = std::string(cpuIsaName(isa)) + ", hidden " +
                            std::to_string(hidden) + (summed ? ", summed" : "");
        EXPECT_TRUE(sameFloats(cell.data(), wantCell)) << where << ": c'";
        EXPECT_TRUE(sameFloats(out.data(), wantHidden)) << where << ": h'";
        for (int64_t k = rows * hidden; k < rows * hidden + 5; ++k) {
          EXPECT_EQ(cell[k], -7.0f) << where << ": wrote past c'";
          EXPECT_EQ(out[k], -7.0f) << where << ": wrote past h'";
        }
        std::vector<float> wantCellCopies(rows * stride + 8, -9.0f),
            wantOutCopies(rows * stride + 8, -9.0f);
        for (int64_t r = 0; r < rows; ++r) {
          if (r % 2)
            std::copy(&cell[r * hidden], &cell[(r + 1) * hidden],
                      wantCellCopies.begin() + at(r));
          if (r % 3)
            std::copy(&out[r * hidden], &out[(r + 1) * hidden],
                      wantOutCopies.begin() + at(r));
        }
        EXPECT_TRUE(sameFloats(cellCopy, wantCellCopies))
            << where << ": the copies of c' (or the floats around them)";
        EXPECT_TRUE(sameFloats(outCopy, wantOutCopies))
            << where << ": the copies of h' (or the floats around them)";
      }
    }
  }
}

#if defined(__x86_64__)
/// With subnormal results flushed to zero and subnormal inputs read as
/// zero (a caller's MXCSR, e.g. a program built with -ffast-math), a forget
/// gate far below zero is 0, not tiny, and 0 * inf is NaN: c' and h' of an
/// infinite cell state are NaN on every instruction set, as the ops give
/// them (no way around a NaN check skips that).
TEST(LstmGatesTest, FlushedToZeroAnInfiniteCellGivesNaN) {
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040); // flush to zero, denormals are zero
  for (int64_t hidden : {8, 16, 24, 64}) {
    const int64_t rows = 3;
    std::vector<float> a(rows * 4 * hidden, 0.5f), c(rows * hidden, 0.25f);
    const int64_t offsets[4] = {0, hidden, 2 * hidden, 3 * hidden};
    for (int64_t r = 0; r < rows; ++r) {
      a[r * 4 * hidden + offsets[1] + 1] = -100.0f; // f flushed to 0
      c[r * hidden + 1] = INFINITY;
    }
    std::vector<const float *> aRows, cRows;
    for (int64_t r = 0; r < rows; ++r) {
      aRows.push_back(&a[r * 4 * hidden]);
      cRows.push_back(&c[r * hidden]);
    }
    for (CpuIsa isa : isasUpToTheOneInUse()) {
      std::vector<float> cell(rows * hidden), out(rows * hidden);
      lstmGateRows(gateBlock(aRows, cRows, cell, out, rows, hidden, offsets),
                   isa);
      for (int64_t r = 0; r < rows; ++r) {
        std::string where = std::string(cpuIsaName(isa)) + ", hidden " +
                            std::to_string(hidden) + ", row " +
                            std::to_string(r);
        EXPECT_TRUE(std::isnan(cell[r * hidden + 1])) << where;
        EXPECT_TRUE(std::isnan(out[r * hidden + 1])) << where;
        EXPECT_FALSE(std::isnan(out[r * hidden])) << where;
      }
    }
  }
  _mm_setcsr(saved);
}
#endif

} // namespace
