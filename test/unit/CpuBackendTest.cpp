//===- CpuBackendTest.cpp - Every example cell on the CPU vs PyTorch -----===//
//
// The CPU backend (region interpreter for the kernels, OpenBLAS for the
// GEMMs) on every example cell and batch size, against PyTorch's outputs;
// see ExampleTasks.h for what each task checks.
//
//===----------------------------------------------------------------------===//
#include "ExampleTasks.h"
#include "backend/cpu/CpuIsa.h"
#include "backend/cpu/PackedGemmBf16.h"
#include "backend/cpu/PackedWeights.h"
#include "backend/cpu/StreamingCopy.h"
#include "backend/cpu/ThreadPool.h"
#include "cellrun/Request.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <random>
#include <string>

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

TEST(ThreadPoolTest, WithAGrainEveryIndexRunsOnceInGuidedChunksOfWholeGrains) {
  cellrun::cpu::ThreadPool pool(3);
  for (int64_t grain : {1, 7, 16})
    for (int64_t count : {0, 1, 15, 16, 17, 1001, 20000}) {
      std::vector<std::atomic<int>> hits(count);
      std::mutex mutex;
      std::map<int64_t, int64_t> chunks; // begin -> end
      pool.parallelFor(
          count,
          [&](unsigned, int64_t begin, int64_t end) {
            {
              std::lock_guard<std::mutex> lock(mutex);
              chunks[begin] = end;
            }
            for (int64_t i = begin; i < end; ++i)
              ++hits[i];
          },
          grain);
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(hits[i].load(), 1) << "grain " << grain << " index " << i;
      if (grain >= count) // split as without a grain
        continue;
      // Chunks are whole grains (the last may end at count), never grow
      // (a take is a share of what is left), and end with one grain.
      int64_t previous = count;
      for (auto [begin, end] : chunks) {
        int64_t size = end - begin;
        EXPECT_EQ(begin % grain, 0) << "grain " << grain << " count " << count;
        EXPECT_TRUE(size % grain == 0 || end == count)
            << "grain " << grain << " chunk " << begin << ".." << end;
        EXPECT_LE(size, previous) << "grain " << grain << " count " << count;
        previous = size;
      }
      EXPECT_LE(chunks.rbegin()->second - chunks.rbegin()->first, grain);
      // Large ranges take far fewer chunks than one per grain.
      if (count >= 1000 * grain) {
        EXPECT_LT(chunks.size() * 4, size_t(count / grain))
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

// Rows of whole 64-byte lines to line-aligned places, a megabyte and more
// in all, go with streaming stores (StreamingCopy.h), the others as
// before: every byte lands, the
// gaps between rows keep theirs, split among workers or not.
TEST(ThreadPoolTest, CopyRowsOfWholeLinesStreamEveryByteAndNothingElse) {
  std::mt19937 random(5);
  cellrun::cpu::ThreadPool pool(2);
  constexpr size_t kStride = 4096 + 128;
  for (size_t minBytes : {size_t(0), size_t(1) << 30}) {
    std::vector<uint8_t> source(400 * 4096);
    for (uint8_t &b : source)
      b = static_cast<uint8_t>(random());
    auto *target = static_cast<uint8_t *>(
        ::operator new(400 * kStride, std::align_val_t(64)));
    std::memset(target, 0xEE, 400 * kStride);
    std::vector<uint8_t> want(target, target + 400 * kStride);
    std::vector<cellrun::cpu::RowCopy> rows;
    size_t streamed = 0;
    for (size_t k = 0; k < 400; ++k) {
      // Whole lines of 64 to 4096 bytes, mostly aligned; some a line and
      // a bit, some starting mid-line (copied as memcpy does).
      size_t bytes = 64 * (32 + random() % 33) + (k % 7 == 0 ? 8 : 0);
      size_t at = k * kStride + (k % 5 == 0 ? 16 : 0);
      streamed += at % 64 == 0 && bytes % 64 == 0;
      rows.push_back({source.data() + k * 4096, target + at, bytes});
      std::memcpy(want.data() + at, source.data() + k * 4096, bytes);
    }
    // The streaming path is what is tested: enough bytes to stream.
    ASSERT_GT(streamed, 250u);
    size_t total = 0;
    for (const cellrun::cpu::RowCopy &row : rows)
      total += row.bytes;
    ASSERT_GE(total, cellrun::cpu::kStreamingMinBytes);
    std::shuffle(rows.begin(), rows.end(), random);
    cellrun::cpu::copyRows(rows, &pool, minBytes);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), target))
        << "minBytes " << minBytes;
    ::operator delete(target, std::align_val_t(64));
  }
}

// Result storage starts on a 64-byte line, so a chain's emitted rows of
// whole lines are streamed into it.
TEST(ThreadPoolTest, ResultValuesStartOnALine) {
  for (size_t count : {1, 3, 16, 1000, 100000}) {
    cellrun::FloatValues floats(count);
    cellrun::IntegerValues integers(count);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(floats.data()) % 64, 0u) << count;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(integers.data()) % 64, 0u) << count;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, CpuBackendTest,
                         ::testing::Values("lstm", "gru", "seq2seq", "treelstm",
                                           "stacked", "lnlstm", "attention",
                                           "bahdanau", "mingru", "mamba",
                                           "rwkv", "slstm", "gru_step"));

} // namespace

// Every worker's backend over one artifact packs its weights once: the
// cache is shared while someone holds it, and made anew for another
// artifact or once the last holder is gone.
TEST(PackedWeightCacheTest, OneCacheAnArtifactWhileItIsHeld) {
  std::vector<float> weights(64 * 48);
  std::mt19937 random(3);
  std::uniform_real_distribution<float> value(-1, 1);
  for (float &w : weights)
    w = value(random);
  int artifactA = 0, artifactB = 0; // their addresses name them
  auto first = cellrun::cpu::PackedWeightCache::forArtifact(&artifactA);
  auto second = cellrun::cpu::PackedWeightCache::forArtifact(&artifactA);
  auto other = cellrun::cpu::PackedWeightCache::forArtifact(&artifactB);
  ASSERT_TRUE(first && other);
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other);
  // Packed through one holder, found through the other: the same matrix.
  const cellrun::cpu::PackedMatrix &packed =
      first->get(weights.data(), 64, 48, false);
  EXPECT_EQ(&second->get(weights.data(), 64, 48, false), &packed);
  EXPECT_EQ(second->bytes(), packed.bytes());
  EXPECT_EQ(other->bytes(), 0u);
  EXPECT_EQ(packed.panel(0)[1], weights[1]); // row 0, column 1
  // Gone with its last holder: the next one starts empty.
  first.reset();
  second.reset();
  auto again = cellrun::cpu::PackedWeightCache::forArtifact(&artifactA);
  EXPECT_EQ(again->bytes(), 0u);
}

// The suites run again with CELLRUN_CPU_ISA set (the isa.* tests of
// test/CMakeLists.txt) test the kernels asked for: the variable is read and
// held to, never above what the processor has.
TEST(CpuIsaTest, TheVersionAskedForIsTheOneInUse) {
  using cellrun::cpu::CpuIsa;
  CpuIsa best = cellrun::cpu::cpuHasAvx512() ? CpuIsa::Avx512
                : cellrun::cpu::cpuHasAvx2() ? CpuIsa::Avx2
                                             : CpuIsa::Generic;
  CpuIsa inUse = cellrun::cpu::detectCpuIsa();
  const char *asked = std::getenv("CELLRUN_CPU_ISA");
  std::string name = asked ? asked : "";
  // bf16 products keep to it too: no AVX-512 BF16 or AMX below AVX-512.
  if (inUse != CpuIsa::Avx512) {
    EXPECT_STREQ(cellrun::cpu::bf16KernelsName(), "portable");
  }
  if (name == "generic") {
    EXPECT_EQ(inUse, CpuIsa::Generic);
  } else if (name == "avx2") {
    if (best < CpuIsa::Avx2)
      GTEST_SKIP() << "this processor has no AVX2 and FMA";
    EXPECT_EQ(inUse, CpuIsa::Avx2);
  } else {
    EXPECT_EQ(inUse, best) << "CELLRUN_CPU_ISA=" << name;
  }
}
