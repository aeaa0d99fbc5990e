//===- RegionFusedGruTest.cpp - A GRU's gates as one op -------------------===//
//
// The region interpreter runs a GRU's element-wise step as one op
// (RegionFusionGru.cpp, GruGates.h). It must be found in the GRU example's
// cells (with its input projection hoisted, cellc's default, or in the
// step) and nowhere
// else, give the same bits as the ops one by one (CELLRUN_CPU_FUSED_GATES=
// off) on their tasks (ExampleTasks.h), and the fused loop itself must give
// the ops' bits on every instruction set, whatever the width, the parts'
// order and the Sub's direction.
//
//===----------------------------------------------------------------------===//
#include "ExampleTasks.h"

#include "backend/cpu/GruGates.h"
#include "backend/cpu/RegionInterpreter.h"
#include "backend/cpu/VectorMath.h"

#include <cstdlib>

namespace {
using namespace cellc::testing;

int fusedGruOf(const std::string &model) {
  return sumOverRegions(model, false, [](RegionInterpreter &interpreter) {
    return interpreter.fusedGruCount();
  });
}

TEST(RegionFusedGruTest, FoundInTheGruCellsOnly) {
  // The step form: one cell, its every plan a GRU step. The hoisted form
  // (cellc's default) also has its projection's cell, which is not.
  auto artifact = loadExample("gru_step");
  ASSERT_TRUE(artifact);
  int plans = 0;
  for (const cellpack::CellType *cell : artifact->cells())
    plans += static_cast<int>(cell->plans()->size());
  EXPECT_EQ(fusedGruOf("gru_step"), plans);
  auto hoisted = loadExample("gru");
  ASSERT_TRUE(hoisted);
  ASSERT_EQ(hoisted->cells().size(), 2u);
  int stepPlans = 0;
  for (const cellpack::CellType *cell : hoisted->cells())
    if (cell->name()->str() == "gru")
      stepPlans = static_cast<int>(cell->plans()->size());
  EXPECT_EQ(fusedGruOf("gru"), stepPlans);
  // An LSTM's step, minGRU's (no reset gate) and the others' are not a
  // GRU's.
  for (const char *model :
       {"lstm", "attention", "treelstm", "mingru", "lnlstm", "slstm"})
    EXPECT_EQ(fusedGruOf(model), 0) << model;
  setenv("CELLRUN_CPU_FUSED_GATES", "off", 1);
  EXPECT_EQ(fusedGruOf("gru"), 0);
  unsetenv("CELLRUN_CPU_FUSED_GATES");
}

class RegionFusedGruExampleTest
    : public ::testing::TestWithParam<const char *> {};

TEST_P(RegionFusedGruExampleTest, SameBitsAsTheOpsOneByOne) {
  EXPECT_GE(sameOutputsWithSwitchOff(GetParam(), "CELLRUN_CPU_FUSED_GATES"), 4);
}

INSTANTIATE_TEST_SUITE_P(Examples, RegionFusedGruExampleTest,
                         ::testing::Values("gru", "gru_step"));

/// The fused loop against the scalar functions, op by op, on every
/// instruction set this machine has: widths with and without a partial
/// vector, the parts in shuffled places within wider rows, h - n and n - h,
/// rows given in another order, results into a block or into rows.
TEST(GruGatesTest, EveryInstructionSetGivesTheOpsBits) {
  std::mt19937 random(11);
  std::uniform_real_distribution<float> wide(-12.0f, 12.0f);
  std::vector<CpuIsa> isas = isasUpToTheOneInUse();
  for (int64_t hidden : {1, 7, 8, 16, 17, 40, 64}) {
    for (bool hFirst : {true, false}) {
      const int64_t rows = 9, width = 3 * hidden + 2; // 2 floats unused
      const int64_t aOffsets[3] = {2 * hidden + 2, 0, hidden};
      const int64_t bOffsets[3] = {hidden + 1, 2 * hidden + 1, 0};
      std::vector<float> a(rows * width), b(rows * width), h(rows * hidden);
      for (float &x : a)
        x = wide(random);
      for (float &x : b)
        x = wide(random) / 3;
      for (float &x : h)
        x = wide(random) / 4;
      float nan;
      uint32_t bits = 0x7fc01234;
      std::memcpy(&nan, &bits, 4);
      a[aOffsets[2]] = nan; // row 0's first candidate
      std::vector<const float *> aRows, bRows, hRows;
      for (int64_t r = rows; r-- > 0;) {
        aRows.push_back(&a[r * width]);
        bRows.push_back(&b[r * width]);
        hRows.push_back(&h[r * hidden]);
      }
      std::vector<float> want(rows * hidden);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < hidden; ++k) {
          float reset = sigmoidScalar(aRows[r][aOffsets[0] + k] +
                                      bRows[r][bOffsets[0] + k]);
          float update = sigmoidScalar(aRows[r][aOffsets[1] + k] +
                                       bRows[r][bOffsets[1] + k]);
          float product = bRows[r][bOffsets[2] + k] * reset;
          float candidate = tanhScalar(aRows[r][aOffsets[2] + k] + product);
          float difference =
              hFirst ? hRows[r][k] - candidate : candidate - hRows[r][k];
          float scaled = difference * update;
          want[r * hidden + k] = scaled + candidate;
        }
      size_t nans = 0;
      for (float x : want)
        nans += std::isnan(x);
      ASSERT_GT(nans, 0u) << "the NaN reaches h'";
      for (CpuIsa isa : isas) {
        for (bool intoRows : {false, true}) {
          std::vector<float> out(rows * hidden + 5, -7.0f);
          std::vector<float *> outRows;
          for (int64_t r = 0; r < rows; ++r)
            outRows.push_back(&out[r * hidden]);
          GruGateRows block;
          block.a = aRows.data();
          block.b = bRows.data();
          block.h = hRows.data();
          block.out = intoRows ? nullptr : out.data();
          block.outRows = intoRows ? outRows.data() : nullptr;
          block.rows = rows;
          block.hidden = hidden;
          block.hFirst = hFirst;
          std::copy(aOffsets, aOffsets + 3, block.aOffsets);
          std::copy(bOffsets, bOffsets + 3, block.bOffsets);
          gruGateRows(block, isa);
          std::string where = std::string(cpuIsaName(isa)) + ", hidden " +
                              std::to_string(hidden) +
                              (hFirst ? ", h - n" : ", n - h") +
                              (intoRows ? ", into rows" : "");
          EXPECT_TRUE(sameFloats(out.data(), want)) << where;
          for (int64_t k = rows * hidden; k < rows * hidden + 5; ++k)
            EXPECT_EQ(out[k], -7.0f) << where << ": wrote past h'";
        }
      }
    }
  }
}

} // namespace
