//===- SlotTable.h - Owned records found by a key in O(1) ------*- C++ -*-===//
//
// The requests a worker has admitted, found by key on every step of every
// request: a key is a slot and the slot's generation, so a lookup is an
// index and a compare (no hashing), a freed slot is reused, and the key of
// a record that has left finds nothing. Keys are never 0.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHED_SLOTTABLE_H
#define CELLRUN_SCHED_SLOTTABLE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace cellrun {

template <typename T> class SlotTable {
public:
  /// Takes `record`; returns its key.
  uint64_t insert(std::unique_ptr<T> record) {
    uint32_t slot;
    if (free_.empty()) {
      slot = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    } else {
      slot = free_.back();
      free_.pop_back();
    }
    Slot &at = slots_[slot];
    ++at.generation;
    at.record = std::move(record);
    ++size_;
    return (static_cast<uint64_t>(at.generation) << 32) | slot;
  }
  /// The record of `key`, or null when it has left.
  T *find(uint64_t key) const {
    uint64_t slot = key & 0xffffffffu;
    if (slot >= slots_.size())
      return nullptr;
    const Slot &at = slots_[slot];
    return at.generation == key >> 32 ? at.record.get() : nullptr;
  }
  /// Gives up the record of `key` (null when it has left).
  std::unique_ptr<T> erase(uint64_t key) {
    if (!find(key))
      return nullptr;
    uint32_t slot = static_cast<uint32_t>(key & 0xffffffffu);
    Slot &at = slots_[slot];
    ++at.generation; // the key finds nothing from now on
    free_.push_back(slot);
    --size_;
    return std::move(at.record);
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// Every key in the table (for the rare sweeps over all requests).
  std::vector<uint64_t> keys() const {
    std::vector<uint64_t> all;
    for (uint32_t slot = 0; slot < slots_.size(); ++slot)
      if (slots_[slot].record)
        all.push_back((static_cast<uint64_t>(slots_[slot].generation) << 32) |
                      slot);
    return all;
  }

private:
  struct Slot {
    uint32_t generation = 0; // odd while the slot holds a record
    std::unique_ptr<T> record;
  };
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  size_t size_ = 0;
};

} // namespace cellrun

#endif // CELLRUN_SCHED_SLOTTABLE_H
