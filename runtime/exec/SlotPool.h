//===- SlotPool.h - Rows of state for the requests in flight ---*- C++ -*-===//
//
// A pool of equally sized rows in one block of memory. Every tensor a
// request's cell-graph node produces or consumes lives in one row; batched
// tasks read and write rows through row-index vectors, so regrouping a batch
// never copies state. acquire and release are O(1) and never allocate.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SLOTPOOL_H
#define CELLRUN_SLOTPOOL_H

#include "base/ZeroPages.h"
#include "cellrun/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace cellrun {

class SlotPool {
public:
  /// `capacity` rows of `rowBytes` bytes each (zeroed), in host memory aligned
  /// to a page (each row starts 16-byte aligned when rowBytes is a multiple
  /// of 16, which the vectorised kernels rely on). Memory is backed as rows
  /// are first written. When it cannot be had, the pool has no rows and
  /// allocated() is false.
  SlotPool(size_t rowBytes, uint32_t capacity);
  /// The same over memory owned elsewhere (device memory of the CUDA
  /// backend): `memory` is the address tasks use, `hostMemory` the host's
  /// view of it when the host can access it directly, else null.
  SlotPool(size_t rowBytes, uint32_t capacity, void *memory, void *hostMemory);

  /// A free row, or ResourceExhausted when every row is taken (or the
  /// failure `failAcquire`, when set, returns: fault injection in tests).
  Result<uint32_t> acquire();
  void setAcquireFault(std::function<Status()> failAcquire) {
    failAcquire_ = std::move(failAcquire);
  }
  /// Returns `row` to the pool. Releasing a row twice, or one that is not
  /// taken, is InvalidArgument and changes nothing.
  Status release(uint32_t row);

  /// The same without a Status, for the engine's per-step path: take()
  /// is a free row, or -1 when there is none or a fault hook is set (then
  /// acquire() says which); put() ignores a row that is not taken.
  int32_t take() {
    if (free_.empty() || failAcquire_)
      return -1;
    uint32_t row = free_.back();
    free_.pop_back();
    taken_[row] = 1;
    return static_cast<int32_t>(row);
  }
  void put(uint32_t row) {
    if (row < capacity_ && taken_[row]) {
      taken_[row] = 0;
      free_.push_back(row);
    }
  }

  /// The address tasks use (device memory on the CUDA backend).
  void *data() { return base_; }
  const void *data() const { return base_; }
  /// The host's address of the rows, or null when only the device sees them.
  void *hostData() { return hostBase_; }
  const void *hostData() const { return hostBase_; }
  /// Row `row` at the address tasks use.
  void *row(uint32_t row) {
    return base_ + static_cast<size_t>(row) * rowBytes_;
  }
  /// False when the host memory of the first constructor could not be had.
  bool allocated() const { return base_ != nullptr; }
  size_t rowBytes() const { return rowBytes_; }
  uint32_t capacity() const { return capacity_; }
  uint32_t available() const { return static_cast<uint32_t>(free_.size()); }

private:
  size_t rowBytes_;
  uint32_t capacity_;
  ZeroPages storage_; // the first constructor's rows

  uint8_t *base_ = nullptr;
  uint8_t *hostBase_ = nullptr;
  std::vector<uint32_t> free_; // stack of free rows
  std::vector<uint8_t> taken_; // per row: 1 while acquired
  std::function<Status()> failAcquire_;
};

} // namespace cellrun

#endif // CELLRUN_SLOTPOOL_H
