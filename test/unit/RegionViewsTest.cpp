//===- RegionViewsTest.cpp - Region values read where their rows lie -----===//
//
// The region interpreter reads some values in place instead of copying them
// into its block (Value::view: pool rows, gathered table rows, split
// parts). Views must be chosen where the example cells have them, and every
// example cell must give the same bits with them as with every value copied
// (CELLRUN_CPU_VIEWS=off), on the tasks of ExampleTasks.h; a gathered
// table row outside its table must fail the task.
//
//===----------------------------------------------------------------------===//
#include "ExampleTasks.h"

#include "backend/cpu/RegionInterpreter.h"

#include <cstdlib>

namespace {
using namespace cellc::testing;

/// Views over the region steps of the largest plan of `model`'s cells.
int viewsOf(const std::string &model) {
  return sumOverRegions(model, true, [](RegionInterpreter &interpreter) {
    return interpreter.viewCount();
  });
}

TEST(RegionViewsTest, TheLstmStepReadsItsGatesStateAndTableRowsInPlace) {
  // The LSTM's element-wise step: the token's row of the folded projection
  // table, the four gates split from the pre-activations and the cell state
  // c from its pool rows.
  EXPECT_GE(viewsOf("lstm"), 6);
  EXPECT_GE(viewsOf("gru"), 3); // its gates, split from the two GEMMs
  setenv("CELLRUN_CPU_VIEWS", "off", 1);
  EXPECT_EQ(viewsOf("lstm"), 0);
  unsetenv("CELLRUN_CPU_VIEWS");
}

class RegionViewsExampleTest : public ::testing::TestWithParam<const char *> {};

TEST(RegionViewsTest, AGatheredTableRowOutsideTheTableFailsTheTask) {
  // The LSTM's token picks a row of its table where it lies; a token the
  // request checks missed (none should) fails the task, nothing is read.
  auto artifact = loadExample("lstm");
  ASSERT_TRUE(artifact);
  const cellpack::CellType &cell = *artifact->cells().front();
  std::vector<RefCase> cases;
  std::string error;
  ASSERT_TRUE(referenceCasesFor(*artifact, cell, exampleFiles("lstm").dir,
                                cases, error))
      << error;
  const RefCase &reference = cases.front();
  const cellpack::BatchPlan &plan =
      *cell.plans()->Get(cell.plans()->size() - 1);
  std::mt19937 random(8);
  std::vector<Pool> inputs, outputs;
  ASSERT_TRUE(makeTaskPools(cell, reference, 2 * plan.batch_size(), random,
                            inputs, outputs));
  uint32_t token = 0;
  while (cell.inputs()->Get(token)->dtype() != cellpack::DType::I64)
    ++token;
  for (int64_t bad : {int64_t(1) << 40, int64_t(-123456)}) {
    std::vector<Pool> in = inputs, out = outputs;
    int64_t last = reference.batch - 1;
    std::memcpy(in[token].bytes.data() +
                    in[token].taskRows[last] * in[token].rowBytes,
                &bad, sizeof bad);
    auto runner = CpuTaskRunner::create(cell, plan, {}, nullptr);
    ASSERT_TRUE(runner.ok()) << runner.status().toString();
    std::vector<PoolView> inViews = poolViews(in), outViews = poolViews(out);
    Status status = runner.value()->run(reference.batch, inViews, outViews);
    EXPECT_EQ(status.code(), StatusCode::OutOfRange) << status.toString();
    EXPECT_NE(status.message().find("outside a table of"), std::string::npos)
        << status.message();
  }
}

TEST_P(RegionViewsExampleTest, SameBitsAsWithEveryValueCopied) {
  EXPECT_GE(sameOutputsWithSwitchOff(GetParam(), "CELLRUN_CPU_VIEWS"), 10);
}

INSTANTIATE_TEST_SUITE_P(Examples, RegionViewsExampleTest,
                         ::testing::Values("lstm", "gru", "seq2seq", "treelstm",
                                           "stacked", "lnlstm", "attention",
                                           "bahdanau", "mingru", "mamba",
                                           "rwkv", "slstm"));

} // namespace
