//===- CpuBackendTest.cpp - Every example cell on the CPU vs PyTorch -----===//
//
// The CPU backend (region interpreter for the kernels, OpenBLAS for the
// GEMMs) on every example cell and batch size, against PyTorch's outputs;
// see ExampleTasks.h for what each task checks.
//
//===----------------------------------------------------------------------===//
#include "ExampleTasks.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>

namespace {

class CpuBackendTest : public ::testing::TestWithParam<const char *> {};

TEST_P(CpuBackendTest, EveryCellAndBatchSizeMatchesPyTorch) {
  // Cases of 1, 3, 8 and 64 rows on every plan they fit.
  EXPECT_GE(cellc::testing::checkExampleAgainstPyTorch(GetParam()), 10);
}

TEST_P(CpuBackendTest, SameWithRowsSplitAmongThreeWorkers) {
  cellrun::cpu::ThreadPool pool(3);
  EXPECT_GE(cellc::testing::checkExampleAgainstPyTorch(GetParam(), {}, &pool),
            10);
}

TEST(ThreadPoolTest, EveryIndexRunsOnceWithTheChunksOfItsWorker) {
  cellrun::cpu::ThreadPool pool(4);
  EXPECT_EQ(pool.size(), 4u);
  for (int64_t count : {0, 1, 3, 4, 10, 1001}) {
    std::vector<int> hits(count, 0);
    std::vector<int> workerOf(count, -1);
    pool.parallelFor(count, [&](unsigned worker, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        ++hits[i];
        workerOf[i] = static_cast<int>(worker);
      }
    });
    for (int64_t i = 0; i < count; ++i) {
      EXPECT_EQ(hits[i], 1) << "count " << count << " index " << i;
      if (i > 0) {
        EXPECT_GE(workerOf[i], workerOf[i - 1]) << "chunks are contiguous";
      }
    }
  }
  cellrun::cpu::ThreadPool single(1);
  int calls = 0;
  single.parallelFor(5, [&](unsigned worker, int64_t begin, int64_t end) {
    EXPECT_EQ(worker, 0u);
    EXPECT_EQ(end - begin, 5);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPoolTest, WithAGrainEveryIndexRunsOnceInChunksOfThatSize) {
  cellrun::cpu::ThreadPool pool(3);
  for (int64_t grain : {1, 7, 16})
    for (int64_t count : {0, 1, 15, 16, 17, 1001}) {
      std::vector<std::atomic<int>> hits(count);
      std::atomic<int> calls{0}, wrongSize{0};
      pool.parallelFor(
          count,
          [&](unsigned, int64_t begin, int64_t end) {
            ++calls;
            // Every chunk starts at a multiple of the grain and is whole
            // except the last (a grain not below the count splits the
            // range as without one).
            if (grain < count &&
                (begin % grain != 0 || (end - begin != grain && end != count)))
              ++wrongSize;
            for (int64_t i = begin; i < end; ++i)
              ++hits[i];
          },
          grain);
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(hits[i].load(), 1) << "grain " << grain << " index " << i;
      EXPECT_EQ(wrongSize.load(), 0) << "grain " << grain;
      if (grain < count) {
        EXPECT_EQ(calls.load(), (count + grain - 1) / grain)
            << "grain " << grain << " count " << count;
      }
    }
}

TEST(ThreadPoolTest, CopyRowsCopiesEveryRowOnceAndNothingElse) {
  // Rows of 1-300 bytes to scattered places in one buffer (gaps between
  // them left alone), split among three workers and on the caller alone.
  std::mt19937 random(3);
  cellrun::cpu::ThreadPool pool(3);
  for (size_t minBytes : {size_t(0), size_t(1) << 30}) {
    std::vector<uint8_t> source(1000 * 300), target(1000 * 320, 0xEE);
    for (uint8_t &b : source)
      b = static_cast<uint8_t>(random());
    std::vector<cellrun::cpu::RowCopy> rows;
    std::vector<size_t> at(1000);
    for (size_t k = 0; k < 1000; ++k) {
      size_t bytes = 1 + random() % 300;
      at[k] = k * 320 + 7;
      rows.push_back({source.data() + k * 300, target.data() + at[k], bytes});
    }
    std::shuffle(rows.begin(), rows.end(), random);
    cellrun::cpu::copyRows(rows, &pool, minBytes);
    std::vector<uint8_t> want(target.size(), 0xEE);
    for (const cellrun::cpu::RowCopy &row : rows)
      std::memcpy(want.data() +
                      (static_cast<uint8_t *>(row.to) - target.data()),
                  row.from, row.bytes);
    EXPECT_TRUE(target == want) << "minBytes " << minBytes;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, CpuBackendTest,
                         ::testing::Values("lstm", "gru", "seq2seq", "treelstm",
                                           "stacked", "lnlstm", "attention",
                                           "bahdanau", "mingru", "mamba",
                                           "rwkv", "slstm", "gru_hoisted"));

} // namespace
