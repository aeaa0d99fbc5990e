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

/// Views are chosen while it lives, every value copied with `off`.
struct ViewsSetting {
  explicit ViewsSetting(bool off) {
    if (off)
      setenv("CELLRUN_CPU_VIEWS", "off", 1);
    else
      unsetenv("CELLRUN_CPU_VIEWS");
  }
  ~ViewsSetting() { unsetenv("CELLRUN_CPU_VIEWS"); }
};

std::shared_ptr<const LoadedArtifact> example(const std::string &model) {
  auto artifact = loadArtifact(std::string(CELL_EXAMPLES_BUILD_DIR) + "/" +
                               model + "/model.cellpack");
  EXPECT_TRUE(artifact.ok()) << artifact.status().toString();
  return artifact.ok() ? artifact.value() : nullptr;
}

/// Views over the region steps of the largest plan of `model`'s cells.
int viewsOf(const std::string &model) {
  auto artifact = example(model);
  if (!artifact)
    return -1;
  int views = 0;
  for (const cellpack::CellType *cell : artifact->cells()) {
    const cellpack::BatchPlan *plan =
        cell->plans()->Get(cell->plans()->size() - 1);
    for (const cellpack::TaskStep *step : *plan->steps()) {
      const cellpack::KernelStep *kernel = step->step_as_KernelStep();
      if (!kernel || !kernel->region())
        continue;
      RegionOptions options;
      options.maxRows = plan->batch_size();
      auto interpreter = RegionInterpreter::create(*kernel, options);
      EXPECT_TRUE(interpreter.ok()) << interpreter.status().toString();
      if (interpreter.ok())
        views += interpreter.value()->viewCount();
    }
  }
  return views;
}

TEST(RegionViewsTest, TheLstmStepReadsItsGatesStateAndTableRowsInPlace) {
  // The LSTM's element-wise step: the token's row of the folded projection
  // table, the four gates split from the pre-activations and the cell state
  // c from its pool rows.
  EXPECT_GE(viewsOf("lstm"), 6);
  EXPECT_GE(viewsOf("gru"), 3); // its gates, split from the two GEMMs
  ViewsSetting off(true);
  EXPECT_EQ(viewsOf("lstm"), 0);
}

/// Output pools of one task of `cell` at `plan` on `reference`'s inputs.
std::vector<std::vector<uint8_t>> runTask(const cellpack::CellType &cell,
                                          const cellpack::BatchPlan &plan,
                                          const RefCase &reference,
                                          uint32_t seed) {
  std::mt19937 random(seed);
  int64_t rows = reference.batch, poolRows = 2 * plan.batch_size() + 5;
  std::vector<Pool> inputs, outputs;
  if (!makeTaskPools(cell, reference, poolRows, random, inputs, outputs))
    return {};
  auto runner = CpuTaskRunner::create(cell, plan, {}, nullptr);
  EXPECT_TRUE(runner.ok()) << runner.status().toString();
  if (!runner.ok())
    return {};
  std::vector<PoolView> inViews, outViews;
  for (Pool &pool : inputs)
    inViews.push_back({pool.bytes.data(), pool.taskRows.data()});
  for (Pool &pool : outputs)
    outViews.push_back({pool.bytes.data(), pool.taskRows.data()});
  Status status = runner.value()->run(rows, inViews, outViews);
  EXPECT_TRUE(status.isOk()) << status.toString();
  std::vector<std::vector<uint8_t>> result;
  for (Pool &pool : outputs)
    result.push_back(std::move(pool.bytes));
  return result;
}

class RegionViewsExampleTest : public ::testing::TestWithParam<const char *> {};

TEST_P(RegionViewsExampleTest, SameBitsAsWithEveryValueCopied) {
  std::string model = GetParam();
  auto artifact = example(model);
  ASSERT_NE(artifact, nullptr);
  std::string dir = std::string(CELL_EXAMPLES_BUILD_DIR) + "/" + model;
  int tasks = 0;
  for (const cellpack::CellType *cell : artifact->cells()) {
    std::vector<RefCase> cases;
    std::string error;
    ASSERT_TRUE(referenceCasesFor(*artifact, *cell, dir, cases, error))
        << error;
    for (const RefCase &reference : cases)
      for (const cellpack::BatchPlan *plan : *cell->plans()) {
        if (plan->batch_size() < reference.batch)
          continue;
        uint32_t seed = 77 + tasks++;
        auto viewed = runTask(*cell, *plan, reference, seed);
        std::vector<std::vector<uint8_t>> copied;
        {
          ViewsSetting off(true);
          copied = runTask(*cell, *plan, reference, seed);
        }
        ASSERT_FALSE(viewed.empty());
        EXPECT_TRUE(viewed == copied)
            << model << ": cell " << cell->name()->str() << ", batch size "
            << plan->batch_size() << ", " << reference.batch
            << " rows: the outputs differ with views";
      }
  }
  EXPECT_GE(tasks, 10);
}

INSTANTIATE_TEST_SUITE_P(Examples, RegionViewsExampleTest,
                         ::testing::Values("lstm", "gru", "seq2seq", "treelstm",
                                           "stacked", "lnlstm", "attention",
                                           "bahdanau", "mingru", "mamba",
                                           "rwkv", "slstm"));

} // namespace
