//===- SlotPool.cpp - Rows of state for the requests in flight -----------===//
#include "exec/SlotPool.h"

#include <cstdint>
#include <string>

using namespace cellrun;

SlotPool::SlotPool(size_t rowBytes, uint32_t capacity)
    : rowBytes_(rowBytes), capacity_(capacity),
      // Zero, and backed only as rows are written (ZeroPages.h): a pool
      // sized for a model's largest batch costs neither time at start nor
      // memory for rows never used (a hidden-1024 attention model's pools
      // are 900 MB).
      storage_(capacity && rowBytes > SIZE_MAX / capacity
                   ? ZeroPages()
                   : ZeroPages(rowBytes * capacity)),
      taken_(capacity, 0) {
  if (!storage_.valid()) { // no rows to give (allocated() says so)
    capacity_ = 0;
    return;
  }
  base_ = hostBase_ = storage_.data();
  free_.reserve(capacity);
  for (uint32_t row = capacity; row-- > 0;)
    free_.push_back(row); // row 0 is handed out first
}

SlotPool::SlotPool(size_t rowBytes, uint32_t capacity, void *memory,
                   void *hostMemory)
    : rowBytes_(rowBytes), capacity_(capacity),
      base_(static_cast<uint8_t *>(memory)),
      hostBase_(static_cast<uint8_t *>(hostMemory)), taken_(capacity, 0) {
  free_.reserve(capacity);
  for (uint32_t row = capacity; row-- > 0;)
    free_.push_back(row);
}

Result<uint32_t> SlotPool::acquire() {
  if (failAcquire_)
    if (Status fault = failAcquire_(); !fault.isOk())
      return fault;
  if (free_.empty())
    return Status(StatusCode::ResourceExhausted,
                  "all " + std::to_string(capacity_) + " rows of " +
                      std::to_string(rowBytes_) + " bytes are in use");
  uint32_t row = free_.back();
  free_.pop_back();
  taken_[row] = 1;
  return row;
}

Status SlotPool::release(uint32_t row) {
  if (row >= capacity_ || !taken_[row])
    return Status(StatusCode::InvalidArgument,
                  "row " + std::to_string(row) + " is not in use");
  taken_[row] = 0;
  free_.push_back(row);
  return Status::ok();
}
