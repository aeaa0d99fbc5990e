//===- HostArena.h - Value memory in registered host chunks ----*- C++ -*-===//
//
// A ValueMemory carved from one reserved range of host addresses, made
// usable a chunk at a time: each new chunk is given to `registerChunk`
// before any of it is handed out (the cuda backend page-locks and maps it,
// so that kernels write results where they lie). Blocks come in size
// classes of 64 bytes times a power of two up to a chunk; a freed block
// goes on its class's list and is handed out again as it is (values are
// never zeroed). Blocks are not merged: the arena suits a server whose
// requests come in a few sizes. Past `maxBytes` of chunks, or once a chunk
// cannot be registered, it hands out only what was freed, and the heap
// serves the rest (detail::allocateValues).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BASE_HOSTARENA_H
#define CELLRUN_BASE_HOSTARENA_H

#include "base/ValueMemory.h"
#include "cellrun/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace cellrun {

class HostArena final : public ValueMemory {
public:
  /// Makes a new chunk usable; false: it cannot be (the arena stops
  /// growing).
  using RegisterChunk = std::function<bool(void *chunk, size_t bytes)>;
  struct Limits {
    size_t reserveBytes = size_t(64) << 30; // addresses only
    size_t chunkBytes = size_t(64) << 20;   // a multiple of the page size
    size_t maxBytes = size_t(8) << 30;      // of chunks made usable
  };
  /// Reserves the addresses (no memory yet).
  static Result<std::unique_ptr<HostArena>> create(const Limits &limits,
                                                   RegisterChunk registerChunk);
  ~HostArena() override;

  void *allocate(size_t bytes) noexcept override;
  bool owns(const void *values) const noexcept override {
    auto at = reinterpret_cast<uintptr_t>(values);
    return at >= begin_ && at < begin_ + limits_.reserveBytes;
  }
  void free(void *values, size_t bytes) noexcept override;

  /// Bytes of chunks made usable so far.
  size_t usableBytes() const;
  /// The size class of a block of `bytes` (its size: 64 << class), or -1
  /// when larger than a chunk.
  int sizeClass(size_t bytes) const noexcept;

private:
  HostArena(const Limits &limits, RegisterChunk registerChunk)
      : limits_(limits), registerChunk_(std::move(registerChunk)) {}
  /// Makes chunks usable until `end` (false: no more can be).
  bool growTo(uintptr_t end);

  Limits limits_;
  RegisterChunk registerChunk_;
  uintptr_t begin_ = 0;
  mutable std::mutex mutex_;
  uintptr_t next_ = 0;             // the first address never handed out
  uintptr_t usable_ = 0;           // the end of the chunks made usable
  bool stopped_ = false;           // a chunk could not be made usable
  std::vector<void *> freeBlocks_; // per class, a list through the blocks
};

} // namespace cellrun

#endif // CELLRUN_BASE_HOSTARENA_H
