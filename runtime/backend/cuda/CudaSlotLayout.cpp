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
                        uint32_t batch, const ValueMemory *addressable) {
  writeGroups_.clear();
  readGroups_.clear();
  addressedGroups_.clear();
  addressable_ = addressable;
  inputCount_ = inputs.size();
  groupOfInput_.assign(inputs.size(), -1);
  groupOfOutput_.assign(outputs.size(), -1);
  addressedGroupOfOutput_.assign(outputs.size(), -1);
  outputRowBytes_.resize(outputs.size());
  for (size_t o = 0; o < outputs.size(); ++o)
    outputRowBytes_[o] = outputs[o].rowBytes;
  // A read row: counted in its pool's addressed group or read group.
  auto countRead = [&](uint32_t output, const void *destination,
                       uint32_t rows) {
    const PoolRef &pool = outputs[output];
    if (addressed(destination, pool.rowBytes))
      addressedGroups_[groupFor(addressedGroups_, addressedGroupOfOutput_,
                                output, pool)]
          .count += rows;
    else
      readGroups_[groupFor(readGroups_, groupOfOutput_, output, pool)].count +=
          rows;
  };
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
    countRead(read.output, read.destination, 1);
  for (const Executor::ReadColumn &column : orNone(moves.readColumns)) {
    if (addressable_) { // row by row: some may be, others not
      for (void *to : column.to)
        if (to)
          countRead(column.output, to, 1);
      continue;
    }
    uint32_t taken = 0;
    for (void *to : column.to)
      taken += to != nullptr;
    if (taken > 0)
      countRead(column.output, nullptr, taken);
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
  for (PoolGroup &group : addressedGroups_) {
    group.indices = at;
    at = align16(at + group.count * sizeof(int32_t));
    group.data = at;
    at = align16(at + group.count * sizeof(uint64_t));
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
  filled_.assign(readGroups_.size() + addressedGroups_.size(), 0);
  size_t addressedFilled = readGroups_.size(); // their counts after the rest
  auto readRow = [&](uint32_t output, uint32_t row, void *destination) {
    if (addressed(destination, outputRowBytes_[output])) {
      uint32_t g = static_cast<uint32_t>(addressedGroupOfOutput_[output]);
      const PoolGroup &group = addressedGroups_[g];
      uint32_t k = filled_[addressedFilled + g]++;
      reinterpret_cast<int32_t *>(host + group.indices)[k] =
          (*rowIndices[inputCount_ + output])[row];
      uint64_t address = reinterpret_cast<uintptr_t>(destination);
      std::memcpy(host + group.data + k * sizeof(uint64_t), &address,
                  sizeof address);
      return;
    }
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
