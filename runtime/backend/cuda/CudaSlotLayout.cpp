//===- CudaSlotLayout.cpp - A task's bytes in its staging slot ------------===//
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
} // namespace

void SlotLayout::layOut(const std::vector<Executor::RowWrite> &writes,
                        const std::vector<Executor::RowRead> &reads,
                        const std::vector<PoolRef> &inputs,
                        const std::vector<PoolRef> &outputs, size_t indexBlocks,
                        uint32_t batch) {
  writeGroups_.clear();
  readGroups_.clear();
  inputCount_ = inputs.size();
  groupOfInput_.assign(inputs.size(), -1);
  groupOfOutput_.assign(outputs.size(), -1);
  for (const Executor::RowWrite &write : writes)
    ++writeGroups_[groupFor(writeGroups_, groupOfInput_, write.input,
                            inputs[write.input])]
          .count;
  for (const Executor::RowRead &read : reads)
    ++readGroups_[groupFor(readGroups_, groupOfOutput_, read.output,
                           outputs[read.output])]
          .count;
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
    uint32_t batch, const std::vector<Executor::RowWrite> &writes,
    const std::vector<Executor::RowRead> &reads, uint8_t *hostBack,
    std::vector<cpu::RowCopy> &deliveries) {
  std::memcpy(host, &ticket, sizeof ticket);
  auto *hostRows = reinterpret_cast<int32_t *>(host + kTicketBytes);
  for (size_t t = 0; t < rowIndices.size(); ++t)
    std::memcpy(hostRows + t * batch, rowIndices[t]->data(),
                rows * sizeof(int32_t));
  filled_.assign(writeGroups_.size(), 0);
  for (const Executor::RowWrite &write : writes) {
    uint32_t g = static_cast<uint32_t>(groupOfInput_[write.input]);
    const PoolGroup &group = writeGroups_[g];
    uint32_t k = filled_[g]++;
    reinterpret_cast<int32_t *>(host + group.indices)[k] =
        (*rowIndices[write.input])[write.row];
    std::memcpy(host + group.data + k * group.rowBytes, write.bytes,
                group.rowBytes);
  }
  filled_.assign(readGroups_.size(), 0);
  for (const Executor::RowRead &read : reads) {
    uint32_t g = static_cast<uint32_t>(groupOfOutput_[read.output]);
    const PoolGroup &group = readGroups_[g];
    uint32_t k = filled_[g]++;
    reinterpret_cast<int32_t *>(host + group.indices)[k] =
        (*rowIndices[inputCount_ + read.output])[read.row];
    deliveries.push_back({hostBack + group.data + k * group.rowBytes,
                          read.destination, group.rowBytes});
  }
}
