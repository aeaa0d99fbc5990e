//===- CudaSlotLayout.cpp - A task's bytes in its staging slot ------------===//
//
// Counts a task's single and column rows by pool (layOut), then writes them
// into the slot in the same order (fill): see CudaSlotLayout.h.
//
//===----------------------------------------------------------------------===//
#include "CudaSlotLayout.h"

#include <algorithm>
#include <cstring>

using namespace cellrun;
using namespace cellrun::cuda;

namespace {
/// The group of `pool` among `groups` (a new one at the end when none is),
/// recorded for the input or output `index` in `groupOf`.
uint32_t groupFor(std::vector<PoolGroup> &groups, std::vector<int32_t> &groupOf,
                  uint32_t index, const PoolRef &pool) {
  if (groupOf[index] >= 0)
    return static_cast<uint32_t>(groupOf[index]);
  auto found = std::find_if(groups.begin(), groups.end(), [&](auto &group) {
    return group.pool == pool.pool;
  });
  if (found == groups.end()) {
    groups.push_back({pool.pool, pool.rowBytes, 0, 0, 0});
    found = groups.end() - 1;
  }
  groupOf[index] = static_cast<int32_t>(found - groups.begin());
  return static_cast<uint32_t>(groupOf[index]);
}

/// `*list`, or an empty list when `list` is null.
template <typename T> const std::vector<T> &orNone(const std::vector<T> *list) {
  static const std::vector<T> kNone;
  return list ? *list : kNone;
}
} // namespace

void SlotLayout::layOut(const RowMoves &moves,
                        const std::vector<PoolRef> &inputs,
                        const std::vector<PoolRef> &outputs, size_t indexBlocks,
                        uint32_t batch) {
  writeGroups_.clear();
  readGroups_.clear();
  inputCount_ = inputs.size();
  groupOfInput_.assign(inputs.size(), -1);
  groupOfOutput_.assign(outputs.size(), -1);
  for (const Executor::RowWrite &write : orNone(moves.writes))
    ++writeGroups_[groupFor(writeGroups_, groupOfInput_, write.input,
                            inputs[write.input])]
          .count;
  for (const Executor::WriteColumn &column : orNone(moves.writeColumns))
    if (!column.bytes.empty())
      writeGroups_[groupFor(writeGroups_, groupOfInput_, column.input,
                            inputs[column.input])]
          .count += static_cast<uint32_t>(column.bytes.size());
  for (const Executor::RowRead &read : orNone(moves.reads))
    ++readGroups_[groupFor(readGroups_, groupOfOutput_, read.output,
                           outputs[read.output])]
          .count;
  for (const Executor::ReadColumn &column : orNone(moves.readColumns)) {
    uint32_t taken = 0;
    for (void *to : column.to)
      taken += to != nullptr;
    if (taken > 0)
      readGroups_[groupFor(readGroups_, groupOfOutput_, column.output,
                           outputs[column.output])]
          .count += taken;
  }
  size_t at = align16(kTicketBytes + indexBlocks * batch * sizeof(int32_t));
  for (PoolGroup &group : writeGroups_) {
    group.indices = at;
    at = align16(at + group.count * sizeof(int32_t));
    group.data = at;
    at = align16(at + group.count * group.rowBytes);
  }
  size_t back = 0;
  for (PoolGroup &group : readGroups_) {
    group.indices = at;
    at = align16(at + group.count * sizeof(int32_t));
    group.data = back;
    back = align16(back + group.count * group.rowBytes);
  }
  bytes_ = at;
  backBytes_ = back;
}

void SlotLayout::fill(
    uint8_t *host, uint64_t ticket,
    const std::vector<const std::vector<int32_t> *> &rowIndices, uint32_t rows,
    uint32_t batch, const RowMoves &moves, uint8_t *hostBack,
    std::vector<cpu::RowCopy> &deliveries) {
  std::memcpy(host, &ticket, sizeof ticket);
  auto *hostRows = reinterpret_cast<int32_t *>(host + kTicketBytes);
  for (size_t t = 0; t < rowIndices.size(); ++t)
    std::memcpy(hostRows + t * batch, rowIndices[t]->data(),
                rows * sizeof(int32_t));
  filled_.assign(writeGroups_.size(), 0);
  auto writeRow = [&](uint32_t input, uint32_t row, const void *bytes) {
    uint32_t g = static_cast<uint32_t>(groupOfInput_[input]);
    const PoolGroup &group = writeGroups_[g];
    uint32_t k = filled_[g]++;
    reinterpret_cast<int32_t *>(host + group.indices)[k] =
        (*rowIndices[input])[row];
    std::memcpy(host + group.data + k * group.rowBytes, bytes, group.rowBytes);
  };
  for (const Executor::RowWrite &single : orNone(moves.writes))
    writeRow(single.input, single.row, single.bytes);
  for (const Executor::WriteColumn &column : orNone(moves.writeColumns))
    for (uint32_t r = 0; r < column.bytes.size(); ++r)
      writeRow(column.input, r, column.bytes[r]);
  filled_.assign(readGroups_.size(), 0);
  auto readRow = [&](uint32_t output, uint32_t row, void *destination) {
    uint32_t g = static_cast<uint32_t>(groupOfOutput_[output]);
    const PoolGroup &group = readGroups_[g];
    uint32_t k = filled_[g]++;
    reinterpret_cast<int32_t *>(host + group.indices)[k] =
        (*rowIndices[inputCount_ + output])[row];
    deliveries.push_back({hostBack + group.data + k * group.rowBytes,
                          destination, group.rowBytes});
  };
  for (const Executor::RowRead &single : orNone(moves.reads))
    readRow(single.output, single.row, single.destination);
  for (const Executor::ReadColumn &column : orNone(moves.readColumns))
    for (uint32_t r = 0; r < column.to.size(); ++r)
      if (column.to[r])
        readRow(column.output, r, column.to[r]);
}
