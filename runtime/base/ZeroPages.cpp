//===- ZeroPages.cpp - Zeroed memory backed only where it is written ------===//
#include "ZeroPages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

using namespace cellrun;

#if defined(__SANITIZE_ADDRESS__)
#define CELL_ZERO_PAGES_FROM_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CELL_ZERO_PAGES_FROM_HEAP 1
#endif
#endif

ZeroPages::ZeroPages(size_t bytes) : bytes_(std::max<size_t>(bytes, 1)) {
#ifdef CELL_ZERO_PAGES_FROM_HEAP
  // Page-aligned as a mapping is; zeroed by hand.
  constexpr size_t kPage = 4096;
  size_t rounded = (bytes_ + kPage - 1) / kPage * kPage;
  data_ = static_cast<uint8_t *>(std::aligned_alloc(kPage, rounded));
  if (data_)
    std::memset(data_, 0, bytes_);
#else
  void *memory = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory != MAP_FAILED)
    data_ = static_cast<uint8_t *>(memory);
#endif
  if (!data_)
    bytes_ = 0;
}

ZeroPages::~ZeroPages() { release(); }

ZeroPages::ZeroPages(ZeroPages &&other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

ZeroPages &ZeroPages::operator=(ZeroPages &&other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void ZeroPages::release() {
  if (!data_)
    return;
#ifdef CELL_ZERO_PAGES_FROM_HEAP
  std::free(data_);
#else
  munmap(data_, bytes_);
#endif
  data_ = nullptr;
  bytes_ = 0;
}
