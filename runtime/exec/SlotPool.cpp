//===- SlotPool.cpp - Rows of state for the requests in flight -----------===//
#include "exec/SlotPool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <string>

using namespace cellrun;

#if defined(__SANITIZE_ADDRESS__)
#define CELL_POOLS_FROM_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CELL_POOLS_FROM_MALLOC 1
#endif
#endif

SlotPool::SlotPool(size_t rowBytes, uint32_t capacity)
    : rowBytes_(rowBytes), capacity_(capacity), taken_(capacity, 0) {
  // Pages of its own from the system, not a zeroing allocation: they read
  // as zero and are backed only once a row in them is written, so a pool
  // costs neither time at start nor memory for rows never used (a hidden-
  // 1024 attention model's pools are 900 MB; allocators zero such blocks
  // by writing them, mimalloc's calloc included). Page-aligned.
  size_t bytes = std::max<size_t>(rowBytes * capacity, 1);
#ifdef CELL_POOLS_FROM_MALLOC
  // AddressSanitizer sees past the ends of an allocation, not of a mapping.
  void *memory = std::calloc(bytes, 1);
  size_t mapped = 0; // freed, not unmapped
  if (!memory)
    memory = MAP_FAILED;
#else
  void *memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  size_t mapped = bytes;
#endif
  if (memory == MAP_FAILED) { // no rows to give (allocated() says so)
    capacity_ = 0;
    return;
  }
  storage_ = std::unique_ptr<uint8_t, UnmapMemory>(
      static_cast<uint8_t *>(memory), UnmapMemory(mapped));
  base_ = hostBase_ = storage_.get();
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

void SlotPool::UnmapMemory::operator()(uint8_t *memory) const {
  if (bytes == 0)
    std::free(memory);
  else
    munmap(memory, bytes);
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
