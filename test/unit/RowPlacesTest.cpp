//===- RowPlacesTest.cpp - Rows placed inside other rows by a task --------===//
//
// Executor::RowPlace on the backend this binary is built for (cpu or cuda,
// like the backend examples' test): after the task's kernels, a zeroed row,
// rows copied into parts of a larger row (grouped ones, and one whose offset
// is not a multiple of its size), and a row the task itself computed; and
// places that do not fit are refused. The seq2seq memories are filled this
// way (EngineWorker::placeInMemories).
//
//===----------------------------------------------------------------------===//
#include "exec/Executor.h"

#include "CudaProbe.h"
#include "LstmExecutor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace cellrun;

namespace {

class RowPlacesTest : public ::testing::Test {
protected:
  void SetUp() override {
    ExecutorOptions options;
    if (std::string(CELL_TEST_DEVICE) == "cuda") {
      auto probe = probeCudaDevice();
      CELL_SKIP_WITHOUT_CUDA(probe, "cuda backend");
      options.device = DeviceKind::Cuda;
    }
    cellc::testing::makeLstmExecutor(options, executor_, cell_);
    if (HasFatalFailure())
      return;
  }

  /// One task of the LSTM (token row 0, states rows 4 and 5, outputs rows
  /// 6 and 7) with `places`.
  Status runTask(const std::vector<Executor::RowPlace> &places) {
    Executor::TaskIO io;
    io.places = places;
    auto ticket =
        executor_->submit(*cell_, 1, {{0}, {4}, {5}}, {{6}, {7}}, nullptr, io);
    if (!ticket.ok())
      return ticket.status();
    return executor_->wait(ticket.value());
  }

  std::unique_ptr<Executor> executor_;
  const cellpack::CellType *cell_ = nullptr;
};

TEST_F(RowPlacesTest, ZerosAndCopiesLandAfterTheKernels) {
  SlotPool &tokens = executor_->pool(*cell_, false, 0);
  SlotPool &states = executor_->pool(*cell_, false, 1);
  ASSERT_EQ(tokens.rowBytes(), 8u);
  ASSERT_EQ(states.rowBytes(), 256u);
  const int64_t values[4] = {7, 11, 13, 17};
  for (int32_t row = 0; row < 4; ++row)
    ASSERT_TRUE(executor_->writeRow(tokens, row, &values[row]).isOk());
  std::vector<float> small(64, 0.25f);
  std::vector<uint8_t> pattern(256, 0xAB);
  ASSERT_TRUE(executor_->writeRow(states, 4, small.data()).isOk());
  ASSERT_TRUE(executor_->writeRow(states, 5, small.data()).isOk());
  // Row 6, the task's h, too: the place must copy what the task wrote.
  for (int32_t row : {6, 8, 9, 10})
    ASSERT_TRUE(executor_->writeRow(states, row, pattern.data()).isOk());

  std::vector<Executor::RowPlace> places;
  // Listed before the zeros: zeros still run first.
  places.push_back({&tokens, 0, &states, 8, 16, 8});
  places.push_back({&tokens, 1, &states, 8, 24, 8});
  places.push_back({nullptr, 0, &states, 8, 0, 256});
  places.push_back({&tokens, 2, &states, 9, 0, 8});
  places.push_back({&tokens, 3, &states, 9, 36, 8});   // not a multiple of 8
  places.push_back({&states, 6, &states, 10, 0, 256}); // this task's h
  Status status = runTask(places);
  ASSERT_TRUE(status.isOk()) << status.toString();

  std::vector<uint8_t> row8(256), row9(256), row10(256), h(256);
  ASSERT_TRUE(executor_->readRow(states, 8, row8.data()).isOk());
  ASSERT_TRUE(executor_->readRow(states, 9, row9.data()).isOk());
  ASSERT_TRUE(executor_->readRow(states, 10, row10.data()).isOk());
  ASSERT_TRUE(executor_->readRow(states, 6, h.data()).isOk());
  std::vector<uint8_t> want8(256, 0), want9 = pattern;
  std::memcpy(want8.data() + 16, &values[0], 8);
  std::memcpy(want8.data() + 24, &values[1], 8);
  std::memcpy(want9.data() + 0, &values[2], 8);
  std::memcpy(want9.data() + 36, &values[3], 8);
  EXPECT_EQ(row8, want8);
  EXPECT_EQ(row9, want9);
  // The task's own output, computed before the place copied it.
  EXPECT_EQ(row10, h);
  EXPECT_NE(h, pattern);
  float first;
  std::memcpy(&first, h.data(), sizeof first);
  EXPECT_NE(first, 0.0f);
}

TEST_F(RowPlacesTest, PlacesThatDoNotFitAreRefused) {
  SlotPool &tokens = executor_->pool(*cell_, false, 0);
  SlotPool &states = executor_->pool(*cell_, false, 1);
  SlotPool foreign(256, 4);
  const std::vector<std::pair<Executor::RowPlace, const char *>> bad = {
      {{&tokens, 0, &states, 8, 252, 8}, "past the target row's end"},
      {{&tokens, 0, &states, 8, 0, 4}, "part of the source row"},
      {{&tokens, 0, &states, 16, 0, 8}, "a target row outside its pool"},
      {{&tokens, -1, &states, 8, 0, 8}, "a source row outside its pool"},
      {{nullptr, 0, &foreign, 0, 0, 8}, "another executor's pool"},
      {{nullptr, 0, &states, 8, 0, 0}, "no bytes"},
  };
  for (const auto &[place, why] : bad) {
    Status status = runTask({place});
    EXPECT_EQ(status.code(), StatusCode::InvalidArgument) << why;
    EXPECT_NE(status.message().find("row place"), std::string::npos)
        << why << ": " << status.message();
  }
}

} // namespace
