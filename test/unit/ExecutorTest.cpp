//===- ExecutorTest.cpp - Slot pools and the executor --------------------===//
//
// SlotPool: O(1) acquire/release, exhaustion and misuse are errors. The
// executor: state of several requests in rows of shared pools (h and c of the
// LSTM share one pool, being of one row type), a task of 3 rows runs at
// batch size 4 and matches PyTorch, bad row vectors are rejected.
//
//===----------------------------------------------------------------------===//
#include "exec/Executor.h"
#include "ReferenceData.h"

#include "artifact/ElementIO.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

using namespace cellrun;

namespace {

TEST(SlotPoolTest, RowsAreHandedOutOnceUntilReleased) {
  SlotPool pool(/*rowBytes=*/256, /*capacity=*/4);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pool.data()) % 64, 0u);
  std::set<uint32_t> rows;
  for (int i = 0; i < 4; ++i) {
    auto row = pool.acquire();
    ASSERT_TRUE(row.ok());
    EXPECT_LT(row.value(), 4u);
    rows.insert(row.value());
  }
  EXPECT_EQ(rows.size(), 4u);
  EXPECT_EQ(pool.available(), 0u);
  auto full = pool.acquire();
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::ResourceExhausted);
  EXPECT_NE(full.status().message().find("all 4 rows of 256 bytes"),
            std::string::npos);
  ASSERT_TRUE(pool.release(2).isOk());
  EXPECT_EQ(pool.available(), 1u);
  EXPECT_EQ(pool.acquire().value(), 2u);
  ASSERT_TRUE(pool.release(2).isOk());
  EXPECT_EQ(pool.release(2).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(pool.release(9).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(pool.available(), 1u);
  EXPECT_EQ(static_cast<uint8_t *>(pool.row(3)) -
                static_cast<uint8_t *>(pool.data()),
            3 * 256);
}

class ExecutorTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string dir = std::string(CELL_EXAMPLES_BUILD_DIR) + "/lstm";
    auto artifact = loadArtifact(dir + "/model.cellpack");
    ASSERT_TRUE(artifact.ok()) << artifact.status().toString();
    auto created = Executor::create(artifact.value(), 64, /*threads=*/2);
    ASSERT_TRUE(created.ok()) << created.status().toString();
    executor = std::move(created).value();
    cell = executor->artifact().cell("lstm").value();
    std::string error;
    ASSERT_TRUE(
        cellc::testing::readReference(dir + "/h64/lstm.ref", cases, error))
        << error;
  }

  std::unique_ptr<Executor> executor;
  const cellpack::CellType *cell = nullptr;
  std::vector<cellc::testing::RefCase> cases;
};

TEST_F(ExecutorTest, TaskOfThreeRowsRunsAtBatchFourAndMatchesPyTorch) {
  const cellc::testing::RefCase *reference = nullptr;
  for (const auto &candidate : cases)
    if (candidate.batch == 3)
      reference = &candidate;
  ASSERT_NE(reference, nullptr);
  // h and c have the same row type: one pool holds both.
  EXPECT_EQ(&executor->pool(*cell, false, 1), &executor->pool(*cell, false, 2));
  EXPECT_EQ(&executor->pool(*cell, false, 1), &executor->pool(*cell, true, 0));

  std::vector<std::vector<int32_t>> inputRows(3), outputRows(2);
  for (uint32_t i = 0; i < 3; ++i) {
    SlotPool &pool = executor->pool(*cell, false, i);
    const auto *tensor =
        reference->find(cell->inputs()->Get(i)->name()->str(), false);
    ASSERT_NE(tensor, nullptr);
    for (int r = 0; r < 3; ++r) {
      int32_t row = static_cast<int32_t>(pool.acquire().value());
      inputRows[i].push_back(row);
      std::memcpy(pool.row(row), tensor->data.data() + r * pool.rowBytes(),
                  pool.rowBytes());
    }
  }
  for (uint32_t j = 0; j < 2; ++j)
    for (int r = 0; r < 3; ++r)
      outputRows[j].push_back(static_cast<int32_t>(
          executor->pool(*cell, true, j).acquire().value()));

  auto batch = executor->run(*cell, 3, inputRows, outputRows);
  ASSERT_TRUE(batch.ok()) << batch.status().toString();
  EXPECT_EQ(batch.value(), 4u);
  for (uint32_t j = 0; j < 2; ++j) {
    SlotPool &pool = executor->pool(*cell, true, j);
    const auto *want =
        reference->find(cell->outputs()->Get(j)->name()->str(), true);
    ASSERT_NE(want, nullptr);
    for (int r = 0; r < 3; ++r)
      for (int e = 0; e < 64; ++e) {
        float got =
            cpu::loadFloat(pool.row(outputRows[j][r]), cellpack::DType::F32, e);
        float expected = want->f32()[r * 64 + e];
        EXPECT_NEAR(got, expected, 1e-5f * std::fabs(expected) + 1e-6f)
            << "output " << j << " row " << r << " element " << e;
      }
  }
}

TEST_F(ExecutorTest, BadRowVectorsAreRejected) {
  // Valid data in the rows used: token 7, states of small values.
  SlotPool &tokens = executor->pool(*cell, false, 0);
  SlotPool &states = executor->pool(*cell, false, 1);
  for (int row = 0; row < 2; ++row) {
    int64_t token = 7;
    std::memcpy(tokens.row(row), &token, sizeof token);
    std::vector<float> state(64, 0.25f);
    std::memcpy(states.row(row), state.data(), states.rowBytes());
  }
  std::vector<std::vector<int32_t>> inputs(3, {0, 1}), outputs(2, {2, 3});
  auto ok = executor->run(*cell, 2, inputs, outputs);
  EXPECT_TRUE(ok.ok()) << ok.status().toString();

  auto shortRows = executor->run(*cell, 3, inputs, outputs);
  ASSERT_FALSE(shortRows.ok());
  EXPECT_EQ(shortRows.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(shortRows.status().message().find("input 'token' has 2 rows for "
                                              "a 3-row task"),
            std::string::npos)
      << shortRows.status().message();

  std::vector<std::vector<int32_t>> outside(3, {0, 64});
  auto beyond = executor->run(*cell, 2, outside, outputs);
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.status().code(), StatusCode::OutOfRange);

  std::vector<std::vector<int32_t>> missing(2, {0, 1});
  EXPECT_EQ(executor->run(*cell, 2, missing, outputs).status().code(),
            StatusCode::InvalidArgument);

  std::vector<int32_t> many(65);
  for (int i = 0; i < 65; ++i)
    many[i] = i % 64;
  auto tooMany = executor->run(*cell, 65, {many, many, many}, {many, many});
  ASSERT_FALSE(tooMany.ok());
  EXPECT_EQ(tooMany.status().code(), StatusCode::OutOfRange);
}

} // namespace
