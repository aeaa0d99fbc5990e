//===- PrefetchLines.h - Ask for every cache line of a record ---*- C++ -*-===//
//
// Records made on another thread (a request's entry, its result tensors) are
// out of this core's caches when the engine first touches them: asking for
// all their lines at once lets the misses overlap.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BASE_PREFETCHLINES_H
#define CELLRUN_BASE_PREFETCHLINES_H

#include <cstddef>
#include <cstdint>

namespace cellrun {

/// Prefetches every 64-byte line that holds part of [begin, begin + bytes).
inline void prefetchLines(const void *begin, size_t bytes) {
  uintptr_t end = reinterpret_cast<uintptr_t>(begin) + bytes;
  for (uintptr_t line = reinterpret_cast<uintptr_t>(begin) & ~uintptr_t(63);
       line < end; line += 64)
    __builtin_prefetch(reinterpret_cast<const void *>(line));
}

} // namespace cellrun

#endif // CELLRUN_BASE_PREFETCHLINES_H
