//===- StepCopiesTest.cpp - Results written by the steps that make them ---===//
//
// A task's rows that go to the requests' results are written there by the
// kernel step that makes them, as it stores them (PoolView::copyTo: the
// fused LSTM gates' loop, otherwise the region interpreter after each block)
// instead of being copied from the pools after the task. On every example
// cell and plan, each copy must hold its pool row's bytes, rows without a
// place must be left alone, and the outputs must be the same as without
// copies, on one thread and with the rows split among three workers; the
// LSTM's outputs must be among those copied.
//
//===----------------------------------------------------------------------===//
#include "ExampleTasks.h"

#include "backend/cpu/ThreadPool.h"

namespace {
using namespace cellc::testing;

constexpr uint8_t kUntouched = 0x5a;

/// Runs `reference` on `plan` twice from the same pools, the second time
/// with copy places for some rows of every output the runner copies;
/// returns how many rows were copied.
int checkCopies(const cellpack::CellType &cell, const cellpack::BatchPlan &plan,
                const RefCase &reference, uint32_t seed,
                const std::string &where, ThreadPool *pool) {
  std::mt19937 random(seed);
  int64_t rows = reference.batch, poolRows = 2 * plan.batch_size() + 5;
  std::vector<Pool> inputs, outputs;
  if (!makeTaskPools(cell, reference, poolRows, random, inputs, outputs)) {
    ADD_FAILURE() << where << ": no pools";
    return 0;
  }
  auto created = CpuTaskRunner::create(cell, plan, {}, pool);
  EXPECT_TRUE(created.ok()) << where << ": " << created.status().toString();
  if (!created.ok())
    return 0;
  CpuTaskRunner &runner = *created.value();
  std::vector<Pool> plainOutputs = outputs;
  {
    std::vector<PoolView> in = poolViews(inputs), out = poolViews(plainOutputs);
    Status status = runner.run(rows, in, out);
    EXPECT_TRUE(status.isOk()) << where << ": " << status.toString();
  }
  // Places for rows the draw picks (about two in three), one buffer a row.
  std::vector<std::vector<std::vector<uint8_t>>> places(outputs.size());
  std::vector<std::vector<void *>> copyTo(outputs.size());
  std::bernoulli_distribution picked(0.66);
  for (size_t o = 0; o < outputs.size(); ++o) {
    size_t bytes = runner.copyBytes(static_cast<uint32_t>(o));
    if (!bytes)
      continue;
    EXPECT_EQ(bytes, outputs[o].rowBytes) << where << ": output " << o;
    places[o].assign(rows, std::vector<uint8_t>(bytes, kUntouched));
    copyTo[o].assign(rows, nullptr);
    for (int64_t r = 0; r < rows; ++r)
      if (picked(random))
        copyTo[o][r] = places[o][r].data();
  }
  std::vector<PoolView> in = poolViews(inputs), out = poolViews(outputs);
  for (size_t o = 0; o < outputs.size(); ++o)
    out[o].copyTo = copyTo[o].empty() ? nullptr : copyTo[o].data();
  Status status = runner.run(rows, in, out);
  EXPECT_TRUE(status.isOk()) << where << ": " << status.toString();
  int copied = 0;
  for (size_t o = 0; o < outputs.size(); ++o) {
    EXPECT_TRUE(outputs[o].bytes == plainOutputs[o].bytes)
        << where << ": output " << o << "'s pool differs with copies";
    for (int64_t r = 0; r < static_cast<int64_t>(places[o].size()); ++r) {
      const std::vector<uint8_t> &place = places[o][r];
      if (!copyTo[o][r]) {
        EXPECT_TRUE(std::all_of(place.begin(), place.end(),
                                [](uint8_t b) { return b == kUntouched; }))
            << where << ": output " << o << " row " << r
            << " had no place but was copied";
        continue;
      }
      const uint8_t *row = outputs[o].bytes.data() +
                           outputs[o].taskRows[r] * outputs[o].rowBytes;
      EXPECT_TRUE(std::equal(place.begin(), place.end(), row))
          << where << ": output " << o << " row " << r
          << "'s copy differs from its pool row";
      ++copied;
    }
  }
  return copied;
}

class StepCopiesTest : public ::testing::TestWithParam<const char *> {};

/// checkCopies on every reference case and plan of `model`; the tasks.
int checkModel(const std::string &model, ThreadPool *pool) {
  int copied = 0;
  int tasks = forEachCaseAndPlan(model, [&](const cellpack::CellType &cell,
                                            const cellpack::BatchPlan &plan,
                                            const RefCase &reference, int index,
                                            const std::string &where) {
    copied += checkCopies(cell, plan, reference, 300 + index, where, pool);
  });
  std::printf("%s: %d tasks, %d rows copied by their steps\n", model.c_str(),
              tasks, copied);
  if (model == "lstm" || model == "gru") {
    EXPECT_GT(copied, 0) << "the recurrent cells' outputs are copied";
  }
  return tasks;
}

TEST_P(StepCopiesTest, CopiesHoldThePoolRowsAndNothingElseIsWritten) {
  EXPECT_GT(checkModel(GetParam(), nullptr), 0);
}

TEST_P(StepCopiesTest, SameWithRowsSplitAmongThreeWorkers) {
  ThreadPool pool(3);
  EXPECT_GT(checkModel(GetParam(), &pool), 0);
}

TEST(StepCopiesTest, TheLstmStepCopiesBothOfItsOutputs) {
  auto artifact = loadExample("lstm");
  ASSERT_TRUE(artifact);
  const cellpack::CellType &cell = *artifact->cells().front();
  for (const cellpack::BatchPlan *plan : *cell.plans()) {
    auto runner = CpuTaskRunner::create(cell, *plan, {}, nullptr);
    ASSERT_TRUE(runner.ok()) << runner.status().toString();
    for (uint32_t o = 0; o < cell.outputs()->size(); ++o)
      EXPECT_EQ(runner.value()->copyBytes(o),
                rowElements(*cell.outputs()->Get(o)) *
                    elementSize(cell.outputs()->Get(o)->dtype()))
          << "batch size " << plan->batch_size() << ", output " << o;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, StepCopiesTest,
                         ::testing::Values("lstm", "gru", "seq2seq", "treelstm",
                                           "stacked", "lnlstm", "attention",
                                           "bahdanau", "mingru", "mamba",
                                           "rwkv", "slstm", "gru_step"));

} // namespace
