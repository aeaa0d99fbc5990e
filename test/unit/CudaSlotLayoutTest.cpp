//===- CudaSlotLayoutTest.cpp - A task's bytes in its staging slot -------===//
//
// The host side of the cuda backend's staging, on any machine: for tasks of
// random writes and reads over inputs and outputs that share pools, the
// slot holds the ticket, each input's and output's row indices in their
// batch-size blocks, per pool (in first-seen order) the written rows' pool
// indices and bytes and the read rows' pool indices, every block on 16
// bytes and none overlapping; each read row is delivered from its place in
// the read-back area to its destination. Checked against a reference built
// here from the same task, and with the layout reused from task to task.
// Writes and reads by the column lay out exactly as their rows given one by
// one (Executor::WriteColumn::appendTo, ReadColumn::appendTo). Reads into
// value memory the device writes in place are addressed and leave the rest
// as they were; rows shorter than SlotLayout::minAddressedRowBytes() stay
// staged.
//
//===----------------------------------------------------------------------===//
#include "backend/cuda/CudaSlotLayout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <vector>

using namespace cellrun;
using namespace cellrun::cuda;

namespace {

struct Task {
  std::vector<PoolRef> inputs, outputs;
  std::vector<std::vector<int32_t>> rowIndices; // inputs, then outputs
  std::vector<std::vector<uint8_t>> data;       // each write's bytes
  std::vector<Executor::RowWrite> writes;
  std::vector<Executor::RowRead> reads;
  std::vector<uint8_t> destinations; // where the reads go
};

/// A task of `rows` rows at batch `batch`: three inputs (two sharing a
/// pool) and three outputs (two sharing another), rows written and read
/// in a random order, some inputs and outputs left out.
Task randomTask(std::mt19937 &random, uint32_t rows, uint32_t batch,
                std::vector<uint8_t> &pools) {
  Task task;
  uint8_t *base = pools.data();
  task.inputs = {{base, 24}, {base + 1000, 8}, {base, 24}};
  task.outputs = {{base + 2000, 64}, {base + 3000, 12}, {base + 2000, 64}};
  for (size_t t = 0; t < 6; ++t) {
    std::vector<int32_t> indices(batch, -7);
    for (uint32_t r = 0; r < rows; ++r)
      indices[r] = static_cast<int32_t>(random() % 5000);
    task.rowIndices.push_back(indices);
  }
  task.destinations.resize(size_t(rows) * 3 * 64);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t input = 0; input < 3; ++input)
      if (random() % 3 != 0)
        task.writes.push_back({input, r, nullptr, random() % 2 == 0});
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t output = 0; output < 3; ++output)
      if (random() % 2 == 0)
        task.reads.push_back(
            {output, r,
             task.destinations.data() + (size_t(r) * 3 + output) * 64});
  std::shuffle(task.writes.begin(), task.writes.end(), random);
  std::shuffle(task.reads.begin(), task.reads.end(), random);
  task.data.resize(task.writes.size());
  for (size_t w = 0; w < task.writes.size(); ++w) {
    task.data[w].resize(task.inputs[task.writes[w].input].rowBytes);
    for (uint8_t &b : task.data[w])
      b = static_cast<uint8_t>(random());
    task.writes[w].bytes = task.data[w].data();
  }
  return task;
}

/// The task's row-index blocks as the backend hands them to the layout.
using RowIndices = std::vector<const std::vector<int32_t> *>;

/// Calls check(round, batch, rows, task, rowIndices, random) for 40 random
/// tasks drawn from `seed`, at batch sizes 1 to 128 in turn.
template <typename Check> void forRandomTasks(unsigned seed, Check &&check) {
  std::mt19937 random(seed);
  std::vector<uint8_t> pools(4000);
  for (uint32_t round = 0; round < 40; ++round) {
    uint32_t batch = 1u << (round % 8);
    uint32_t rows = 1 + random() % batch;
    Task task = randomTask(random, rows, batch, pools);
    RowIndices rowIndices;
    for (const auto &indices : task.rowIndices)
      rowIndices.push_back(&indices);
    check(round, batch, rows, task, rowIndices, random);
  }
}

TEST(CudaSlotLayoutTest, EveryRowWhereTheSlotSaysAndNothingOverlaps) {
  SlotLayout layout; // reused by every task, as the backend does
  forRandomTasks(17, [&](uint32_t round, uint32_t batch, uint32_t rows,
                         Task &task, const RowIndices &rowIndices,
                         std::mt19937 &random) {
    RowMoves moves{&task.writes, &task.reads};
    layout.layOut(moves, task.inputs, task.outputs, rowIndices.size(), batch);
    std::vector<uint8_t> host(layout.bytes() + 64, 0xEE);
    std::vector<uint8_t> back(layout.backBytes() + 64);
    std::vector<cpu::RowCopy> deliveries;
    uint64_t ticket = 1000 + round;
    layout.fill(host.data(), ticket, rowIndices, rows, batch, moves,
                back.data(), deliveries);

    // The ticket and the row-index blocks.
    uint64_t stored = 0;
    std::memcpy(&stored, host.data(), sizeof stored);
    EXPECT_EQ(stored, ticket);
    for (size_t t = 0; t < rowIndices.size(); ++t)
      for (uint32_t r = 0; r < rows; ++r) {
        int32_t index = 0;
        std::memcpy(&index, host.data() + kTicketBytes + (t * batch + r) * 4,
                    4);
        ASSERT_EQ(index, task.rowIndices[t][r]) << "block " << t;
      }

    // The reference: rows grouped by pool in first-seen order.
    auto check = [&](const std::vector<PoolGroup> &groups,
                     const std::vector<PoolRef> &refs, auto &&rowsOf,
                     bool isWrite) {
      std::vector<const void *> order;
      std::map<const void *, std::vector<size_t>> byPool; // row numbers
      rowsOf([&](size_t k, uint32_t which) {
        const void *pool = refs[which].pool;
        if (!byPool.count(pool))
          order.push_back(pool);
        byPool[pool].push_back(k);
      });
      ASSERT_EQ(groups.size(), order.size());
      for (size_t g = 0; g < groups.size(); ++g) {
        const PoolGroup &group = groups[g];
        ASSERT_EQ(group.pool, order[g]);
        const std::vector<size_t> &members = byPool[order[g]];
        ASSERT_EQ(group.count, members.size());
        ASSERT_EQ(group.rowBytes,
                  isWrite ? refs[task.writes[members[0]].input].rowBytes
                          : refs[task.reads[members[0]].output].rowBytes);
        EXPECT_EQ(group.indices % 16, 0u);
        EXPECT_EQ(group.data % 16, 0u);
        for (size_t k = 0; k < members.size(); ++k) {
          int32_t index = 0;
          std::memcpy(&index, host.data() + group.indices + k * 4, 4);
          size_t m = members[k];
          if (isWrite) {
            const Executor::RowWrite &write = task.writes[m];
            ASSERT_EQ(index, task.rowIndices[write.input][write.row]);
            ASSERT_EQ(0,
                      std::memcmp(host.data() + group.data + k * group.rowBytes,
                                  write.bytes, group.rowBytes));
          } else {
            const Executor::RowRead &read = task.reads[m];
            ASSERT_EQ(index, task.rowIndices[3 + read.output][read.row]);
          }
        }
      }
    };
    check(
        layout.writeGroups(), task.inputs,
        [&](auto &&visit) {
          for (size_t w = 0; w < task.writes.size(); ++w)
            visit(w, task.writes[w].input);
        },
        true);
    check(
        layout.readGroups(), task.outputs,
        [&](auto &&visit) {
          for (size_t r = 0; r < task.reads.size(); ++r)
            visit(r, task.reads[r].output);
        },
        false);

    // Blocks of the slot do not overlap, and end where the layout says.
    std::vector<std::pair<size_t, size_t>> blocks = {
        {0, kTicketBytes + rowIndices.size() * batch * 4}};
    for (const PoolGroup &group : layout.writeGroups()) {
      blocks.push_back({group.indices, group.indices + group.count * 4});
      blocks.push_back({group.data, group.data + group.count * group.rowBytes});
    }
    for (const PoolGroup &group : layout.readGroups())
      blocks.push_back({group.indices, group.indices + group.count * 4});
    std::sort(blocks.begin(), blocks.end());
    for (size_t b = 1; b < blocks.size(); ++b)
      ASSERT_LE(blocks[b - 1].second, blocks[b].first);
    EXPECT_LE(blocks.back().second, layout.bytes());
    EXPECT_TRUE(std::all_of(host.begin() + layout.bytes(), host.end(),
                            [](uint8_t b) { return b == 0xEE; }))
        << "written past the laid-out bytes";

    // Nor do the read groups' blocks of the read-back area.
    std::vector<std::pair<size_t, size_t>> backBlocks;
    for (const PoolGroup &group : layout.readGroups()) {
      EXPECT_EQ(group.data % 16, 0u);
      backBlocks.push_back(
          {group.data, group.data + group.count * group.rowBytes});
    }
    std::sort(backBlocks.begin(), backBlocks.end());
    for (size_t b = 1; b < backBlocks.size(); ++b)
      ASSERT_LE(backBlocks[b - 1].second, backBlocks[b].first);
    if (!backBlocks.empty()) {
      EXPECT_LE(backBlocks.back().second, layout.backBytes());
    }

    // Each read delivered from its group's place in the read-back area.
    ASSERT_EQ(deliveries.size(), task.reads.size());
    std::map<const void *, uint32_t> seen; // rows so far, per pool
    for (size_t r = 0; r < task.reads.size(); ++r) {
      const Executor::RowRead &read = task.reads[r];
      const void *pool = task.outputs[read.output].pool;
      auto group =
          std::find_if(layout.readGroups().begin(), layout.readGroups().end(),
                       [&](const PoolGroup &g) { return g.pool == pool; });
      ASSERT_NE(group, layout.readGroups().end());
      uint32_t k = seen[pool]++;
      EXPECT_EQ(deliveries[r].from,
                back.data() + group->data + k * group->rowBytes);
      EXPECT_EQ(deliveries[r].to, read.destination);
      EXPECT_EQ(deliveries[r].bytes, task.outputs[read.output].rowBytes);
      EXPECT_LE(group->data + (k + 1) * group->rowBytes, layout.backBytes());
    }
  });
}

TEST(CudaSlotLayoutTest, ColumnsLayOutAsTheirRowsOneByOne) {
  // A task with some single writes and reads and columns of others (as the
  // engine's chain batch gives them: a column per input, reads with gaps):
  // the same slot bytes, read-back layout and deliveries as the columns
  // expanded into single ones.
  SlotLayout byColumns, byRows; // both reused from task to task
  forRandomTasks(29, [&](uint32_t round, uint32_t batch, uint32_t rows,
                         Task &task, const RowIndices &rowIndices,
                         std::mt19937 &random) {
    // One input and one output by the column (at random: inputs 0 and 2
    // share a pool, as do outputs 0 and 2, so column rows and single ones
    // share groups), their single ones dropped.
    uint32_t columnInput = random() % 3, columnOutput = random() % 3;
    size_t columnBytes = task.inputs[columnInput].rowBytes;
    std::vector<std::vector<uint8_t>> columnData(rows);
    Executor::WriteColumn writeColumn;
    writeColumn.input = columnInput;
    for (uint32_t r = 0; r < rows; ++r) {
      columnData[r].resize(columnBytes);
      for (uint8_t &b : columnData[r])
        b = static_cast<uint8_t>(random());
      writeColumn.bytes.push_back(columnData[r].data());
    }
    Executor::ReadColumn readColumn;
    readColumn.output = columnOutput;
    std::vector<uint8_t> columnDestinations(size_t(rows) * 64);
    for (uint32_t r = 0; r < rows; ++r)
      readColumn.to.push_back(random() % 3 == 0
                                  ? nullptr
                                  : columnDestinations.data() + size_t(r) * 64);
    task.writes.erase(std::remove_if(task.writes.begin(), task.writes.end(),
                                     [&](const Executor::RowWrite &w) {
                                       return w.input == columnInput;
                                     }),
                      task.writes.end());
    task.reads.erase(std::remove_if(task.reads.begin(), task.reads.end(),
                                    [&](const Executor::RowRead &r) {
                                      return r.output == columnOutput;
                                    }),
                     task.reads.end());
    std::vector<Executor::WriteColumn> writeColumns = {writeColumn};
    std::vector<Executor::ReadColumn> readColumns = {readColumn};
    std::vector<Executor::RowWrite> singleWrites = task.writes;
    std::vector<Executor::RowRead> singleReads = task.reads;
    writeColumn.appendTo(singleWrites);
    readColumn.appendTo(singleReads);

    auto laidOut = [&](SlotLayout &layout, const RowMoves &moves,
                       std::vector<uint8_t> &host, std::vector<uint8_t> &back,
                       std::vector<cpu::RowCopy> &deliveries) {
      layout.layOut(moves, task.inputs, task.outputs, rowIndices.size(), batch);
      host.assign(layout.bytes(), 0xEE);
      back.resize(layout.backBytes() + 16);
      layout.fill(host.data(), 7 + round, rowIndices, rows, batch, moves,
                  back.data(), deliveries);
    };
    std::vector<uint8_t> hostColumns, backColumns, hostRows, backRows;
    std::vector<cpu::RowCopy> deliveriesColumns, deliveriesRows;
    laidOut(byColumns, {&task.writes, &task.reads, &writeColumns, &readColumns},
            hostColumns, backColumns, deliveriesColumns);
    laidOut(byRows, {&singleWrites, &singleReads}, hostRows, backRows,
            deliveriesRows);

    ASSERT_EQ(byColumns.bytes(), byRows.bytes());
    ASSERT_EQ(byColumns.backBytes(), byRows.backBytes());
    EXPECT_EQ(hostColumns, hostRows) << "round " << round;
    auto sameGroups = [](const std::vector<PoolGroup> &a,
                         const std::vector<PoolGroup> &b) {
      ASSERT_EQ(a.size(), b.size());
      for (size_t g = 0; g < a.size(); ++g) {
        EXPECT_EQ(a[g].pool, b[g].pool);
        EXPECT_EQ(a[g].count, b[g].count);
        EXPECT_EQ(a[g].indices, b[g].indices);
        EXPECT_EQ(a[g].data, b[g].data);
      }
    };
    sameGroups(byColumns.writeGroups(), byRows.writeGroups());
    sameGroups(byColumns.readGroups(), byRows.readGroups());
    ASSERT_EQ(deliveriesColumns.size(), deliveriesRows.size());
    for (size_t d = 0; d < deliveriesRows.size(); ++d) {
      EXPECT_EQ(static_cast<const uint8_t *>(deliveriesColumns[d].from) -
                    backColumns.data(),
                static_cast<const uint8_t *>(deliveriesRows[d].from) -
                    backRows.data());
      EXPECT_EQ(deliveriesColumns[d].to, deliveriesRows[d].to);
      EXPECT_EQ(deliveriesColumns[d].bytes, deliveriesRows[d].bytes);
    }
  });
}

/// Value memory the device would write in place: one host range.
class RangeMemory final : public ValueMemory {
public:
  RangeMemory(const uint8_t *begin, size_t bytes)
      : begin_(begin), end_(begin + bytes) {}
  void *allocate(size_t) noexcept override { return nullptr; }
  bool owns(const void *values) const noexcept override {
    auto *at = static_cast<const uint8_t *>(values);
    return at >= begin_ && at < end_;
  }
  void free(void *, size_t) noexcept override {}

private:
  const uint8_t *begin_, *end_;
};

TEST(CudaSlotLayoutTest, AddressedReadsLeaveTheStagedOnesAsTheyWere) {
  // Reads (single and by the column) whose destinations lie in value memory
  // the device writes, on their copy unit (16 bytes for rows of 64, 4 for
  // rows of 12), go into addressed groups: pool index and destination, per
  // pool in first-seen order, after everything else in the slot. The rest
  // lay out, fill and deliver exactly as a task that reads only them.
  SlotLayout withAddresses, staged;         // both reused from task to task
  withAddresses.setMinAddressedRowBytes(0); // these rows are all short
  forRandomTasks(41, [&](uint32_t round, uint32_t batch, uint32_t rows,
                         Task &task, const RowIndices &rowIndices,
                         std::mt19937 &random) {
    alignas(64) static uint8_t pinned[128 * 3 * 128 + 64];
    RangeMemory memory(pinned, sizeof pinned);
    // Half the single reads to pinned places, some of them 4 bytes off.
    auto pinnedPlace = [&](uint32_t row, uint32_t output) {
      return pinned + (size_t(row) * 3 + output) * 128 +
             (random() % 3 == 0 ? 4 : 0);
    };
    for (Executor::RowRead &read : task.reads)
      if (random() % 2 == 0)
        read.destination = pinnedPlace(read.row, read.output);
    // A column of output 1's reads (its single ones dropped): none, pinned
    // or not.
    task.reads.erase(std::remove_if(task.reads.begin(), task.reads.end(),
                                    [](const Executor::RowRead &read) {
                                      return read.output == 1;
                                    }),
                     task.reads.end());
    std::vector<uint8_t> elsewhere(size_t(rows) * 16);
    Executor::ReadColumn column;
    column.output = 1;
    for (uint32_t r = 0; r < rows; ++r) {
      uint32_t pick = random() % 3;
      column.to.push_back(pick == 0   ? nullptr
                          : pick == 1 ? pinnedPlace(r, 1)
                                      : elsewhere.data() + size_t(r) * 16);
    }
    std::vector<Executor::ReadColumn> columns = {column};

    auto isAddressed = [&](uint32_t output, const void *to) {
      size_t unit = task.outputs[output].rowBytes % 16 == 0 ? 16 : 4;
      return to && memory.owns(to) &&
             reinterpret_cast<uintptr_t>(to) % unit == 0;
    };
    // The staged reads alone, and the addressed ones in their order.
    std::vector<Executor::RowRead> stagedReads, addressedReads;
    for (const Executor::RowRead &read : task.reads)
      (isAddressed(read.output, read.destination) ? addressedReads
                                                  : stagedReads)
          .push_back(read);
    std::vector<Executor::ReadColumn> stagedColumns = columns;
    for (uint32_t r = 0; r < rows; ++r)
      if (isAddressed(1, column.to[r])) {
        stagedColumns[0].to[r] = nullptr;
        addressedReads.push_back({1, r, column.to[r]});
      }

    std::vector<uint8_t> host, back, stagedHost, stagedBack;
    std::vector<cpu::RowCopy> deliveries, stagedDeliveries;
    RowMoves moves{&task.writes, &task.reads, nullptr, &columns};
    withAddresses.layOut(moves, task.inputs, task.outputs, rowIndices.size(),
                         batch, &memory);
    host.assign(withAddresses.bytes() + 64, 0xEE);
    back.resize(withAddresses.backBytes() + 16);
    withAddresses.fill(host.data(), 3 + round, rowIndices, rows, batch, moves,
                       back.data(), deliveries);
    RowMoves stagedMoves{&task.writes, &stagedReads, nullptr, &stagedColumns};
    staged.layOut(stagedMoves, task.inputs, task.outputs, rowIndices.size(),
                  batch);
    stagedHost.assign(staged.bytes(), 0xEE);
    stagedBack.resize(staged.backBytes() + 16);
    staged.fill(stagedHost.data(), 3 + round, rowIndices, rows, batch,
                stagedMoves, stagedBack.data(), stagedDeliveries);

    // The staged part: the same bytes, groups and deliveries.
    ASSERT_EQ(withAddresses.backBytes(), staged.backBytes());
    ASSERT_GE(withAddresses.bytes(), staged.bytes());
    EXPECT_TRUE(std::equal(stagedHost.begin(), stagedHost.end(), host.begin()))
        << "round " << round;
    ASSERT_EQ(withAddresses.readGroups().size(), staged.readGroups().size());
    for (size_t g = 0; g < staged.readGroups().size(); ++g) {
      EXPECT_EQ(withAddresses.readGroups()[g].pool,
                staged.readGroups()[g].pool);
      EXPECT_EQ(withAddresses.readGroups()[g].count,
                staged.readGroups()[g].count);
      EXPECT_EQ(withAddresses.readGroups()[g].data,
                staged.readGroups()[g].data);
    }
    ASSERT_EQ(deliveries.size(), stagedDeliveries.size());
    for (size_t d = 0; d < deliveries.size(); ++d) {
      EXPECT_EQ(static_cast<const uint8_t *>(deliveries[d].from) - back.data(),
                static_cast<const uint8_t *>(stagedDeliveries[d].from) -
                    stagedBack.data());
      EXPECT_EQ(deliveries[d].to, stagedDeliveries[d].to);
    }

    // The addressed part: per pool in first-seen order, after the rest.
    std::vector<const void *> order;
    std::map<const void *, std::vector<size_t>> byPool;
    for (size_t a = 0; a < addressedReads.size(); ++a) {
      const void *pool = task.outputs[addressedReads[a].output].pool;
      if (!byPool.count(pool))
        order.push_back(pool);
      byPool[pool].push_back(a);
    }
    const std::vector<PoolGroup> &groups = withAddresses.addressedGroups();
    ASSERT_EQ(groups.size(), order.size()) << "round " << round;
    size_t end = staged.bytes();
    for (size_t g = 0; g < groups.size(); ++g) {
      const PoolGroup &group = groups[g];
      ASSERT_EQ(group.pool, order[g]);
      const std::vector<size_t> &members = byPool[order[g]];
      ASSERT_EQ(group.count, members.size());
      EXPECT_GE(group.indices, end);
      EXPECT_EQ(group.indices % 16, 0u);
      EXPECT_EQ(group.data % 16, 0u);
      EXPECT_GE(group.data, group.indices + group.count * 4);
      end = group.data + group.count * 8;
      for (size_t k = 0; k < members.size(); ++k) {
        const Executor::RowRead &read = addressedReads[members[k]];
        int32_t index = 0;
        uint64_t address = 0;
        std::memcpy(&index, host.data() + group.indices + k * 4, 4);
        std::memcpy(&address, host.data() + group.data + k * 8, 8);
        ASSERT_EQ(index, task.rowIndices[3 + read.output][read.row]);
        ASSERT_EQ(address, reinterpret_cast<uintptr_t>(read.destination));
      }
    }
    EXPECT_LE(end, withAddresses.bytes());
    EXPECT_TRUE(std::all_of(host.begin() + withAddresses.bytes(), host.end(),
                            [](uint8_t b) { return b == 0xEE; }))
        << "written past the laid-out bytes";
  });
}

TEST(CudaSlotLayoutTest, ShortRowsStayStagedEvenIntoAddressableMemory) {
  // By default a read row is addressed only from
  // SlotLayout::kMinAddressedRowBytes on: 64-byte rows into the same
  // addressable memory go through the read-back area as before.
  alignas(64) static uint8_t pinned[8 * 1024];
  RangeMemory memory(pinned, sizeof pinned);
  std::vector<uint8_t> pools(4096);
  std::vector<PoolRef> inputs;
  std::vector<PoolRef> outputs = {{pools.data(), 64},
                                  {pools.data() + 2048, 256}};
  constexpr uint32_t kRows = 5, kBatch = 8;
  std::vector<std::vector<int32_t>> indices = {{3, 1, 4, 1, 5, 9, 2, 6},
                                               {2, 7, 1, 8, 2, 8, 1, 8}};
  RowIndices rowIndices = {&indices[0], &indices[1]};
  std::vector<Executor::ReadColumn> columns(2);
  for (uint32_t o = 0; o < 2; ++o) {
    columns[o].output = o;
    for (uint32_t r = 0; r < kRows; ++r)
      columns[o].to.push_back(pinned + o * 4096 + r * 256);
  }
  RowMoves moves{nullptr, nullptr, nullptr, &columns};
  SlotLayout layout;
  ASSERT_EQ(layout.minAddressedRowBytes(), SlotLayout::kMinAddressedRowBytes);
  layout.layOut(moves, inputs, outputs, rowIndices.size(), kBatch, &memory);
  ASSERT_EQ(layout.readGroups().size(), 1u);
  EXPECT_EQ(layout.readGroups()[0].pool, pools.data());
  EXPECT_EQ(layout.readGroups()[0].count, kRows);
  ASSERT_EQ(layout.addressedGroups().size(), 1u);
  EXPECT_EQ(layout.addressedGroups()[0].pool, pools.data() + 2048);
  EXPECT_EQ(layout.addressedGroups()[0].count, kRows);
  std::vector<uint8_t> host(layout.bytes()), back(layout.backBytes());
  std::vector<cpu::RowCopy> deliveries;
  layout.fill(host.data(), 1, rowIndices, kRows, kBatch, moves, back.data(),
              deliveries);
  ASSERT_EQ(deliveries.size(), kRows);
  for (uint32_t r = 0; r < kRows; ++r)
    EXPECT_EQ(deliveries[r].to, pinned + r * 256);

  // Lowered to 0, the short rows are addressed too.
  layout.setMinAddressedRowBytes(0);
  layout.layOut(moves, inputs, outputs, rowIndices.size(), kBatch, &memory);
  EXPECT_TRUE(layout.readGroups().empty());
  EXPECT_EQ(layout.addressedGroups().size(), 2u);
}

} // namespace
