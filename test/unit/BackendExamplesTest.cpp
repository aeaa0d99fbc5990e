//===- BackendExamplesTest.cpp - Example cells through the executor ------===//
//
// Every cell of every example at every supported batch size that the
// PyTorch reference cases fit (1, 3, 8, 64 rows, so also n < b), run
// through Executor on one backend: CELL_TEST_DEVICE "cpu" (runs everywhere)
// or "cuda" (skipped, with the probe's reason, when there is no CUDA
// device). Request data goes in and results come out with writeRow/readRow,
// the task's rows are scattered over larger pools, and every pool row the
// task must not touch is poisoned first and checked after. Tolerance:
// 1e-5 relative + 1e-6 absolute for fp32 GEMMs, 5e-3 for tf32/bf16/fp16.
//
//===----------------------------------------------------------------------===//
#include "ReferenceData.h"
#include "cellrun/Executor.h"

#include "../../runtime/backend/cpu/ElementIO.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace cellrun;

namespace {
/// The examples' build directory: $CELL_EXAMPLES_BUILD_DIR when set (the
/// GPU machine runs these binaries from another path), else the build's.
std::string examplesDir() {
  const char *override = std::getenv("CELL_EXAMPLES_BUILD_DIR");
  return override ? override : CELL_EXAMPLES_BUILD_DIR;
}
} // namespace
using namespace cellc::testing;

namespace {

constexpr uint8_t kPoison = 0xA7;
constexpr uint32_t kPoolRows = 8 * 64 + 5; // room for 8 tensors of a type

size_t rowBytesOf(const cellpack::TensorSpec &spec) {
  size_t bytes = cpu::elementSize(spec.dtype());
  if (spec.row_shape())
    for (int64_t dim : *spec.row_shape())
      bytes *= static_cast<size_t>(dim);
  return bytes;
}

class BackendExamplesTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    std::string device = CELL_TEST_DEVICE;
    if (device == "cuda") {
      auto probe = probeCudaDevice();
      if (!probe.ok())
        GTEST_SKIP() << "cuda backend not tested: " << probe.status().message();
      options_.device = DeviceKind::Cuda;
    }
  }

  /// Poisons every row of every pool the cell uses.
  void poisonPools(Executor &executor, const cellpack::CellType &cell) {
    for (bool isOutput : {false, true}) {
      const auto *specs = isOutput ? cell.outputs() : cell.inputs();
      for (uint32_t i = 0; i < specs->size(); ++i) {
        SlotPool &pool = executor.pool(cell, isOutput, i);
        std::vector<uint8_t> poison(pool.rowBytes(), kPoison);
        for (uint32_t row = 0; row < pool.capacity(); ++row)
          ASSERT_TRUE(executor.writeRow(pool, row, poison.data()).isOk());
      }
    }
  }

  void runCase(Executor &executor, const cellpack::CellType &cell,
               const cellpack::BatchPlan &plan, const RefCase &reference,
               float tolerance, std::mt19937 &random);

  ExecutorOptions options_;
};

void BackendExamplesTest::runCase(Executor &executor,
                                  const cellpack::CellType &cell,
                                  const cellpack::BatchPlan &plan,
                                  const RefCase &reference, float tolerance,
                                  std::mt19937 &random) {
  std::string where = cell.name()->str() + " at batch size " +
                      std::to_string(plan.batch_size()) + " with " +
                      std::to_string(reference.batch) + " rows";
  uint32_t rows = reference.batch;
  poisonPools(executor, cell);
  // Distinct scattered rows per tensor; tensors sharing a pool get disjoint
  // rows because every tensor draws from one shuffled order per pool.
  std::map<SlotPool *, std::vector<int32_t>> orders;
  auto takeRows = [&](SlotPool &pool) {
    auto &order = orders[&pool];
    if (order.empty()) {
      order.resize(pool.capacity());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), random);
    }
    if (order.size() < rows + 5) {
      ADD_FAILURE() << where << ": the test's pools are too small";
      return std::vector<int32_t>(rows, 0);
    }
    std::vector<int32_t> taken(order.end() - rows, order.end());
    order.resize(order.size() - rows);
    return taken;
  };
  std::vector<std::vector<int32_t>> inputRows, outputRows;
  for (uint32_t i = 0; i < cell.inputs()->size(); ++i) {
    const cellpack::TensorSpec &spec = *cell.inputs()->Get(i);
    SlotPool &pool = executor.pool(cell, false, i);
    inputRows.push_back(takeRows(pool));
    const RefTensor *tensor = reference.find(spec.name()->str(), false);
    ASSERT_NE(tensor, nullptr) << "no reference input " << spec.name()->str();
    ASSERT_EQ(tensor->data.size(), pool.rowBytes() * rows);
    for (uint32_t r = 0; r < rows; ++r)
      ASSERT_TRUE(executor
                      .writeRow(pool, inputRows[i][r],
                                tensor->data.data() + r * pool.rowBytes())
                      .isOk());
  }
  for (uint32_t j = 0; j < cell.outputs()->size(); ++j)
    outputRows.push_back(takeRows(executor.pool(cell, true, j)));

  auto ticket =
      executor.submitWithPlan(cell, plan, rows, inputRows, outputRows);
  ASSERT_TRUE(ticket.ok()) << where << ": " << ticket.status().toString();
  Status done = executor.wait(ticket.value());
  ASSERT_TRUE(done.isOk()) << where << ": " << done.toString();

  // Inputs unchanged; outputs match PyTorch; every other row still poison.
  for (uint32_t i = 0; i < cell.inputs()->size(); ++i) {
    SlotPool &pool = executor.pool(cell, false, i);
    const RefTensor *tensor =
        reference.find(cell.inputs()->Get(i)->name()->str(), false);
    std::vector<uint8_t> row(pool.rowBytes());
    for (uint32_t r = 0; r < rows; ++r) {
      ASSERT_TRUE(executor.readRow(pool, inputRows[i][r], row.data()).isOk());
      EXPECT_TRUE(std::equal(row.begin(), row.end(),
                             tensor->data.begin() + r * pool.rowBytes()))
          << where << ": input " << i << " row " << r << " changed";
    }
  }
  for (uint32_t j = 0; j < cell.outputs()->size(); ++j) {
    const cellpack::TensorSpec &spec = *cell.outputs()->Get(j);
    SlotPool &pool = executor.pool(cell, true, j);
    const RefTensor *want = reference.find(spec.name()->str(), true);
    ASSERT_NE(want, nullptr) << "no reference output " << spec.name()->str();
    size_t perRow = rowBytesOf(spec) / cpu::elementSize(spec.dtype());
    std::vector<uint8_t> row(pool.rowBytes());
    int mismatches = 0;
    for (uint32_t r = 0; r < rows && mismatches < 5; ++r) {
      ASSERT_TRUE(executor.readRow(pool, outputRows[j][r], row.data()).isOk());
      for (size_t e = 0; e < perRow && mismatches < 5; ++e) {
        size_t wantAt = r * perRow + e;
        if (want->dtype == 0) {
          float got = cpu::loadFloat(row.data(), spec.dtype(), e);
          float expected = want->f32()[wantAt];
          if (!(std::fabs(got - expected) <=
                tolerance * std::fabs(expected) + tolerance / 10)) {
            ++mismatches;
            ADD_FAILURE() << where << ": " << spec.name()->str() << "[" << r
                          << "][" << e << "] = " << got << ", PyTorch "
                          << expected;
          }
        } else if (cpu::loadInt(row.data(), spec.dtype(), e) !=
                   want->i64()[wantAt]) {
          ++mismatches;
          ADD_FAILURE() << where << ": " << spec.name()->str() << "[" << r
                        << "] differs from PyTorch's " << want->i64()[wantAt];
        }
      }
    }
  }
  for (auto &[pool, unused] : orders) {
    std::vector<uint8_t> row(pool->rowBytes());
    for (int32_t index : unused) {
      ASSERT_TRUE(executor.readRow(*pool, index, row.data()).isOk());
      EXPECT_TRUE(std::all_of(row.begin(), row.end(),
                              [](uint8_t b) { return b == kPoison; }))
          << where << ": pool row " << index << " is not the task's but "
          << "was written";
    }
  }
}

TEST_P(BackendExamplesTest, EveryCellAndBatchSizeMatchesPyTorch) {
  std::string model = GetParam();
  std::string dir = examplesDir() + "/" + model;
  auto loaded = loadArtifact(dir + "/model.cellpack");
  ASSERT_TRUE(loaded.ok()) << loaded.status().toString();
  std::shared_ptr<const LoadedArtifact> artifact = std::move(loaded).value();
  auto created = Executor::create(artifact, kPoolRows, options_);
  ASSERT_TRUE(created.ok()) << created.status().toString();
  Executor &executor = *created.value();
  float tolerance = artifact->model().precision() == cellpack::Precision::FP32
                        ? 1e-5f
                        : 5e-3f;
  std::printf("%s on %s\n", model.c_str(), executor.describe().c_str());
  std::mt19937 random(4321);
  int tasks = 0;
  for (const cellpack::CellType *cell : artifact->cells()) {
    std::vector<RefCase> cases;
    std::string error;
    ASSERT_TRUE(readReference(dir + "/h64/" + cell->name()->str() + ".ref",
                              cases, error))
        << error;
    for (const RefCase &reference : cases)
      for (const cellpack::BatchPlan *plan : *cell->plans())
        if (plan->batch_size() >= reference.batch) {
          runCase(executor, *cell, *plan, reference, tolerance, random);
          ++tasks;
          if (HasFatalFailure())
            return;
        }
  }
  std::printf("%s: %d tasks checked against PyTorch\n", model.c_str(), tasks);
  EXPECT_GE(tasks, 10);
}

INSTANTIATE_TEST_SUITE_P(Examples, BackendExamplesTest,
                         ::testing::Values("lstm", "gru", "seq2seq",
                                           "treelstm"));

} // namespace
