//===- RowColumnsTest.cpp - A task's writes and reads by the column -------===//
//
// Executor::WriteColumn and ReadColumn (the engine's chain batch binds its
// tasks with them) on the backend this binary is built for: the same task
// with its request data and results given row by row and given by the
// column lands the same bytes in the same places, on the cpu backend's
// every way of reading results (the steps writing them, copies after the
// task when it also places rows, copies shared among threads, deliveries at
// wait) and, on cuda, through its staging slot (CudaSlotLayout.h, which lays
// out a column's rows as their single ones); request data by the column for
// the token and for the h state (this
// model's steps read both where they lie; a column they could not is copied
// into the pool as single writes are, CpuBackend's copyInputRow). Columns
// that do not fit the task are refused.
//
//===----------------------------------------------------------------------===//
#include "exec/Executor.h"

#include "CudaProbe.h"
#include "LstmExecutor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

using namespace cellrun;

namespace {

/// The cpu backend's ways of reading a task's rows back (cuda: its own).
enum class Reads { BySteps, WithPlaces, Shared, AtWait };

class RowColumnsTest : public ::testing::TestWithParam<Reads> {
protected:
  void SetUp() override {
    ExecutorOptions options;
    if (std::string(CELL_TEST_DEVICE) == "cuda") {
      if (GetParam() != Reads::BySteps)
        GTEST_SKIP() << "the cpu backend's ways of reading rows";
      auto probe = probeCudaDevice();
      CELL_SKIP_WITHOUT_CUDA(probe, "cuda backend");
      options.device = DeviceKind::Cuda;
    }
    options.threads = 2;
    options.readsAtWait = GetParam() == Reads::AtWait;
    if (GetParam() == Reads::Shared)
      options.sharedCopyBytes = 1; // every task's copies shared
    cellc::testing::makeLstmExecutor(options, executor_, cell_);
    if (HasFatalFailure())
      return;
    SlotPool &states = executor_->pool(*cell_, false, 1);
    states_ = &states;
    rowFloats_ = states.rowBytes() / sizeof(float);
    // Random states in the input rows, and h rows the task writes from the
    // host (never zeros).
    std::mt19937 random(7);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    hostH_.resize(3 * rowFloats_);
    for (float &x : hostH_)
      x = value(random);
    for (int32_t row : {1, 2, 3, 4, 5, 6}) {
      std::vector<float> state(rowFloats_);
      for (float &x : state)
        x = value(random);
      ASSERT_TRUE(executor_->writeRow(states, row, state.data()).isOk());
    }
  }

  /// Three rows: tokens from rows 0-2 of their pool (overwritten by the
  /// task's writes), h from 1-3, c from 4-6; h to 7-9, c to 10-12.
  Status run(Executor::TaskIO io) {
    if (GetParam() == Reads::WithPlaces) { // zeros into a row no one reads
      Executor::RowPlace zeros;
      zeros.to = states_;
      zeros.toRow = 14;
      zeros.bytes = static_cast<uint32_t>(states_->rowBytes());
      io.places.push_back(zeros);
    }
    auto ticket =
        executor_->submit(*cell_, 3, {{0, 1, 2}, {1, 2, 3}, {4, 5, 6}},
                          {{7, 8, 9}, {10, 11, 12}}, nullptr, io);
    if (!ticket.ok())
      return ticket.status();
    return executor_->wait(ticket.value());
  }

  const float *hostH(uint32_t row) const {
    return hostH_.data() + row * rowFloats_;
  }

  std::unique_ptr<Executor> executor_;
  const cellpack::CellType *cell_ = nullptr;
  SlotPool *states_ = nullptr;
  size_t rowFloats_ = 0;
  std::vector<float> hostH_;
  const int64_t tokens_[3] = {7, 11, 13};
};

TEST_P(RowColumnsTest, ColumnsLandWhereSingleWritesAndReadsDo) {
  // Row by row: h of rows 0 and 2, c of row 1.
  std::vector<float> hSingle(3 * rowFloats_, -7.0f), cSingle(rowFloats_, -7.0f);
  Executor::TaskIO single;
  for (uint32_t r = 0; r < 3; ++r) {
    single.writes.push_back({0, r, &tokens_[r], true});
    single.writes.push_back({1, r, hostH(r), true});
  }
  single.reads.push_back({0, 0, hSingle.data()});
  single.reads.push_back({0, 2, hSingle.data() + 2 * rowFloats_});
  single.reads.push_back({1, 1, cSingle.data()});
  ASSERT_TRUE(run(single).isOk());

  std::vector<float> hColumn(3 * rowFloats_, -9.0f), cColumn(rowFloats_, -9.0f);
  Executor::TaskIO columns;
  columns.writeColumns.push_back({0, {&tokens_[0], &tokens_[1], &tokens_[2]}});
  columns.writeColumns.push_back({1, {hostH(0), hostH(1), hostH(2)}});
  columns.readColumns.push_back(
      {0, {hColumn.data(), nullptr, hColumn.data() + 2 * rowFloats_}});
  columns.readColumns.push_back({1, {nullptr, cColumn.data(), nullptr}});
  ASSERT_TRUE(run(columns).isOk());

  // Computed (not the fill), and the same bits both ways.
  EXPECT_NE(hSingle[0], -7.0f);
  EXPECT_NE(cSingle[0], -7.0f);
  for (size_t k = 0; k < rowFloats_; ++k) {
    ASSERT_EQ(hColumn[k], hSingle[k]) << "h of row 0, element " << k;
    ASSERT_EQ(hColumn[2 * rowFloats_ + k], hSingle[2 * rowFloats_ + k])
        << "h of row 2, element " << k;
    ASSERT_EQ(cColumn[k], cSingle[k]) << "c of row 1, element " << k;
  }
  // Row 1's h was read by neither.
  for (size_t k = 0; k < rowFloats_; ++k) {
    ASSERT_EQ(hSingle[rowFloats_ + k], -7.0f);
    ASSERT_EQ(hColumn[rowFloats_ + k], -9.0f);
  }
  // The rows differ from one another (different tokens and states).
  EXPECT_NE(std::memcmp(hColumn.data(), hColumn.data() + 2 * rowFloats_,
                        rowFloats_ * sizeof(float)),
            0);
}

TEST_P(RowColumnsTest, ColumnsThatDoNotFitTheTaskAreRefused) {
  std::vector<float> h(rowFloats_);
  Executor::TaskIO missing; // a row without its bytes
  missing.writeColumns.push_back({0, {&tokens_[0], nullptr, &tokens_[2]}});
  Status status = run(missing);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_NE(status.message().find("the writes of input 0"), std::string::npos)
      << status.message();

  Executor::TaskIO short_; // two places for three rows
  short_.readColumns.push_back({0, {h.data(), nullptr}});
  status = run(short_);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_NE(status.message().find("the reads of output 0"), std::string::npos)
      << status.message();

  Executor::TaskIO noSuchOutput;
  noSuchOutput.readColumns.push_back({5, {h.data(), nullptr, nullptr}});
  EXPECT_EQ(run(noSuchOutput).code(), StatusCode::InvalidArgument);

  Executor::TaskIO noSuchInput;
  noSuchInput.writeColumns.push_back(
      {7, {&tokens_[0], &tokens_[1], &tokens_[2]}});
  EXPECT_EQ(run(noSuchInput).code(), StatusCode::InvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Reads, RowColumnsTest,
                         ::testing::Values(Reads::BySteps, Reads::WithPlaces,
                                           Reads::Shared, Reads::AtWait),
                         [](const ::testing::TestParamInfo<Reads> &info) {
                           switch (info.param) {
                           case Reads::BySteps:
                             return "BySteps";
                           case Reads::WithPlaces:
                             return "WithPlaces";
                           case Reads::Shared:
                             return "Shared";
                           case Reads::AtWait:
                             return "AtWait";
                           }
                           return "Unknown";
                         });

} // namespace
