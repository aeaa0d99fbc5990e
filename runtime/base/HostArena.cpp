//===- HostArena.cpp - Value memory in registered host chunks -------------===//
#include "base/HostArena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

using namespace cellrun;

namespace {
constexpr size_t kSmallestBlock = 64;
} // namespace

Result<std::unique_ptr<HostArena>>
HostArena::create(const Limits &limits, RegisterChunk registerChunk) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (limits.chunkBytes < kSmallestBlock || limits.chunkBytes % page != 0 ||
      limits.reserveBytes < limits.chunkBytes ||
      limits.reserveBytes % limits.chunkBytes != 0)
    return Status(StatusCode::InvalidArgument,
                  "host arena: the chunk must be a multiple of the page size "
                  "and divide the reserved bytes");
  std::unique_ptr<HostArena> arena(
      new HostArena(limits, std::move(registerChunk)));
  void *range = mmap(nullptr, limits.reserveBytes, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (range == MAP_FAILED)
    return Status(StatusCode::ResourceExhausted,
                  std::string("host arena: cannot reserve addresses: ") +
                      std::strerror(errno));
  arena->begin_ = reinterpret_cast<uintptr_t>(range);
  arena->next_ = arena->usable_ = arena->begin_;
  int classes = 0;
  while ((kSmallestBlock << classes) < limits.chunkBytes)
    ++classes;
  arena->freeBlocks_.assign(static_cast<size_t>(classes) + 1, nullptr);
  return arena;
}

HostArena::~HostArena() {
  // Only ever destroyed when never installed (tests, or a second arena):
  // nothing it handed out is still in use.
  if (begin_)
    munmap(reinterpret_cast<void *>(begin_), limits_.reserveBytes);
}

int HostArena::sizeClass(size_t bytes) const noexcept {
  if (bytes > limits_.chunkBytes)
    return -1;
  int k = 0;
  while ((kSmallestBlock << k) < bytes)
    ++k;
  return k;
}

bool HostArena::growTo(uintptr_t end) {
  while (usable_ < end) {
    if (stopped_ ||
        usable_ + limits_.chunkBytes > begin_ + limits_.reserveBytes ||
        usable_ - begin_ + limits_.chunkBytes > limits_.maxBytes)
      return false;
    void *chunk = reinterpret_cast<void *>(usable_);
    if (mprotect(chunk, limits_.chunkBytes, PROT_READ | PROT_WRITE) != 0) {
      stopped_ = true;
      return false;
    }
    if (registerChunk_ && !registerChunk_(chunk, limits_.chunkBytes)) {
      mprotect(chunk, limits_.chunkBytes, PROT_NONE);
      stopped_ = true;
      return false;
    }
    usable_ += limits_.chunkBytes;
  }
  return true;
}

void *HostArena::allocate(size_t bytes) noexcept {
  int k = sizeClass(bytes);
  if (k < 0)
    return nullptr;
  size_t size = kSmallestBlock << k;
  std::lock_guard<std::mutex> lock(mutex_);
  if (void *block = freeBlocks_[static_cast<size_t>(k)]) {
    std::memcpy(&freeBlocks_[static_cast<size_t>(k)], block, sizeof(void *));
    return block;
  }
  // Every size is a multiple of 64 bytes, so every block starts on a
  // 64-byte line. A block may span two chunks: both are usable.
  uintptr_t at = next_;
  if (at + size > usable_ && !growTo(at + size))
    return nullptr;
  next_ = at + size;
  return reinterpret_cast<void *>(at);
}

void HostArena::free(void *values, size_t bytes) noexcept {
  int k = sizeClass(bytes);
  if (k < 0 || !values)
    return; // never handed out by this arena
  std::lock_guard<std::mutex> lock(mutex_);
  std::memcpy(values, &freeBlocks_[static_cast<size_t>(k)], sizeof(void *));
  freeBlocks_[static_cast<size_t>(k)] = values;
}

size_t HostArena::usableBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return usable_ - begin_;
}
