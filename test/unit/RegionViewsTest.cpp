//===- RegionViewsTest.cpp - Region values read where their rows lie -----===//
//
// The region interpreter reads some values in place instead of copying them
// into its block (Value::view: pool rows, gathered table rows, split
// parts). Views must be chosen where the example cells have them, and every
// example cell must give the same bits with them as with every value copied
// (CELLRUN_CPU_VIEWS=off), on the tasks of ExampleTasks.h.
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

TEST_P(RegionViewsExampleTest, SameBitsAsWithEveryValueCopied) {
  EXPECT_GE(sameOutputsWithSwitchOff(GetParam(), "CELLRUN_CPU_VIEWS"), 10);
}

INSTANTIATE_TEST_SUITE_P(Examples, RegionViewsExampleTest,
                         ::testing::Values("lstm", "gru", "seq2seq", "treelstm",
                                           "stacked", "lnlstm", "attention",
                                           "bahdanau", "mingru", "mamba",
                                           "rwkv", "slstm"));

} // namespace
