//===- ZeroPages.h - Zeroed memory backed only where it is written -*- C++
//-*-===//
//
// A block of memory that reads as zero from the start and is backed by the
// system only page by page as it is first written: anonymous pages of their
// own (mmap), so neither the time to zero it nor the memory of parts never
// used is paid up front. A zeroing new, or mimalloc 2.0.9's calloc, writes
// every byte: for the pools and workspaces sized for a model's largest batch
// that cost seconds and a gigabyte at start. Page-aligned. AddressSanitizer
// builds take the block from the heap instead (aligned, zeroed at once), so
// that reads past its end are still caught.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BASE_ZEROPAGES_H
#define CELLRUN_BASE_ZEROPAGES_H

#include <cstddef>
#include <cstdint>

namespace cellrun {

class ZeroPages {
public:
  ZeroPages() = default;
  /// `bytes` of zeroed memory (at least one byte is mapped); valid() is
  /// false when the system refuses it.
  explicit ZeroPages(size_t bytes);
  ~ZeroPages();
  ZeroPages(ZeroPages &&other) noexcept;
  ZeroPages &operator=(ZeroPages &&other) noexcept;
  ZeroPages(const ZeroPages &) = delete;
  ZeroPages &operator=(const ZeroPages &) = delete;

  bool valid() const { return data_ != nullptr; }
  uint8_t *data() const { return data_; }
  size_t size() const { return bytes_; }

private:
  void release();
  uint8_t *data_ = nullptr;
  size_t bytes_ = 0;
};

} // namespace cellrun

#endif // CELLRUN_BASE_ZEROPAGES_H
