//===- HostArenaTest.cpp - Value memory in registered host chunks --------===//
//
// The cuda backend's page-locked value memory without a GPU: HostArena with
// a registering function that records chunks (or refuses them), and the
// process-wide hook of cellrun/Request.h's value vectors once an arena is
// installed (this binary installs one; nothing else here allocates values).
//
//===----------------------------------------------------------------------===//
#include "base/HostArena.h"
#include "cellrun/Request.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

using namespace cellrun;

namespace {

constexpr size_t kChunk = size_t(1) << 20;

HostArena::Limits smallLimits(size_t maxBytes) {
  HostArena::Limits limits;
  limits.reserveBytes = 64 * kChunk;
  limits.chunkBytes = kChunk;
  limits.maxBytes = maxBytes;
  return limits;
}

TEST(HostArenaTest, BlocksAreAlignedDisjointRegisteredAndReused) {
  std::vector<std::pair<void *, size_t>> registered;
  auto arena = HostArena::create(smallLimits(16 * kChunk),
                                 [&](void *chunk, size_t bytes) {
                                   registered.push_back({chunk, bytes});
                                   return true;
                                 });
  ASSERT_TRUE(arena.ok()) << arena.status().toString();
  HostArena &memory = *arena.value();
  EXPECT_EQ(memory.usableBytes(), 0u) << "nothing made usable before use";
  EXPECT_EQ(memory.sizeClass(1), 0);
  EXPECT_EQ(memory.sizeClass(64), 0);
  EXPECT_EQ(memory.sizeClass(65), 1);
  EXPECT_EQ(memory.sizeClass(kChunk), 14);
  EXPECT_EQ(memory.sizeClass(kChunk + 1), -1);

  // Blocks of many sizes: on 64 bytes, owned, inside registered chunks,
  // and not overlapping (each filled with its own byte, checked after).
  std::vector<std::pair<uint8_t *, size_t>> blocks;
  for (size_t bytes : {1, 64, 100, 4096, 4000, 70000, 1 << 20, 3, 333333}) {
    auto *block = static_cast<uint8_t *>(memory.allocate(bytes));
    ASSERT_NE(block, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 64, 0u);
    EXPECT_TRUE(memory.owns(block));
    EXPECT_TRUE(memory.owns(block + bytes - 1));
    bool inChunk = false;
    for (auto [chunk, size] : registered)
      for (uint8_t *at : {block, block + bytes - 1})
        inChunk |= at >= static_cast<uint8_t *>(chunk) &&
                   at < static_cast<uint8_t *>(chunk) + size;
    EXPECT_TRUE(inChunk) << bytes;
    std::memset(block, static_cast<int>(blocks.size() + 1), bytes);
    blocks.push_back({block, bytes});
  }
  for (size_t b = 0; b < blocks.size(); ++b)
    for (size_t i = 0; i < blocks[b].second; ++i)
      ASSERT_EQ(blocks[b].first[i], b + 1) << "block " << b << " overwritten";
  EXPECT_EQ(memory.usableBytes(), registered.size() * kChunk);
  EXPECT_FALSE(memory.owns(&registered));

  // A freed block comes back for the next of its class, not another's.
  memory.free(blocks[3].first, blocks[3].second); // 4096
  EXPECT_EQ(memory.allocate(4000), blocks[3].first);
  void *other = memory.allocate(4096);
  EXPECT_NE(other, blocks[3].first);
  EXPECT_EQ(memory.allocate(kChunk + 1), nullptr) << "larger than a chunk";
}

TEST(HostArenaTest, StopsGrowingAtItsLimitOrARefusedChunk) {
  size_t calls = 0;
  auto capped = HostArena::create(smallLimits(2 * kChunk),
                                  [&](void *, size_t) { return ++calls > 0; });
  ASSERT_TRUE(capped.ok());
  void *first = capped.value()->allocate(kChunk);
  void *second = capped.value()->allocate(kChunk);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(capped.value()->allocate(64), nullptr) << "past maxBytes";
  EXPECT_EQ(calls, 2u);
  capped.value()->free(second, kChunk);
  EXPECT_EQ(capped.value()->allocate(kChunk), second) << "freed ones still";

  bool refuse = false;
  auto refusing = HostArena::create(smallLimits(16 * kChunk),
                                    [&](void *, size_t) { return !refuse; });
  ASSERT_TRUE(refusing.ok());
  ASSERT_NE(refusing.value()->allocate(kChunk), nullptr);
  refuse = true;
  EXPECT_EQ(refusing.value()->allocate(64), nullptr);
  refuse = false;
  EXPECT_EQ(refusing.value()->allocate(64), nullptr)
      << "a refused chunk stops the arena for good";
}

TEST(HostArenaTest, RefusesAChunkThatIsNotWholePages) {
  HostArena::Limits limits = smallLimits(kChunk);
  limits.chunkBytes = 1000;
  auto arena = HostArena::create(limits, {});
  ASSERT_FALSE(arena.ok());
  EXPECT_EQ(arena.status().code(), StatusCode::InvalidArgument);
}

TEST(ValueMemoryTest, ValuesComeFromTheInstalledMemoryOnceThereIsOne) {
  FloatValues before(1000, 1.5f); // from the heap
  auto arena = HostArena::create(smallLimits(4 * kChunk), {});
  ASSERT_TRUE(arena.ok());
  const HostArena *mine = arena.value().get();
  ValueMemory &installed = installValueMemory(std::move(arena).value());
  ASSERT_EQ(&installed, mine);
  EXPECT_EQ(installedValueMemory(), &installed);
  auto again = HostArena::create(smallLimits(kChunk), {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(&installValueMemory(std::move(again).value()), &installed)
      << "the first one stays";

  EXPECT_FALSE(installed.owns(before.data()));
  FloatValues after(1000, 2.5f);
  IntegerValues tokens(77, 9);
  EXPECT_TRUE(installed.owns(after.data()));
  EXPECT_TRUE(installed.owns(tokens.data()));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(after.data()) % 64, 0u);
  // Growing moves the values within the memory; freeing gives the block
  // back, and the next vector of that size takes it.
  const float *old = after.data();
  after.resize(5000, 3.5f);
  EXPECT_TRUE(installed.owns(after.data()));
  EXPECT_EQ(after[999], 2.5f);
  EXPECT_EQ(after[4999], 3.5f);
  FloatValues reused(1000);
  EXPECT_EQ(reused.data(), old);
  // One allocated before still frees to the heap; one too large for the
  // arena comes from the heap.
  before = FloatValues();
  FloatValues huge(kChunk); // 4 MiB: larger than a chunk
  EXPECT_FALSE(installed.owns(huge.data()));
}

} // namespace
