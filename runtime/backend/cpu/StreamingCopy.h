//===- StreamingCopy.h - Row copies into memory read much later -*- C++ -*-===//
//
// A task's emitted rows go into the requests' results, which nothing reads
// until the request ends (and then once). An ordinary store first reads a
// line it writes into the cache (a read for ownership), so when the lines
// are not in the cache a copy into the results costs about twice its bytes
// in memory traffic, on the engine's thread. Whole 64-byte lines then go
// with non-temporal stores, which write a line without reading it: on the
// 2-core VM a 4 KB row into cold memory took 480 ns instead of 780-930.
// When the rows are few the lines are often still in the cache (a finished
// request's results freed and taken again), where streaming them out is
// slower: on that VM (2 MB of L2 a core), `host_bench --gpu-path` of the
// hidden-1024 LSTM streamed tasks of 128 rows of 4 KB in 780-810 ns a
// row-step against 710-730, those of 256 rows in 760-820 against 950-1010,
// so only copies of at least kStreamingMinBytes in all stream. The stores
// are weakly ordered: the copying thread calls streamFence() before another
// thread may read what it wrote (before the task's ticket is returned or a
// worker reports its chunk). CELLRUN_CPU_STREAMING=off copies with memcpy
// always (for comparison).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_STREAMINGCOPY_H
#define CELLRUN_BACKEND_CPU_STREAMINGCOPY_H

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace cellrun::cpu {

/// Copies of this many bytes in all (one task's rows) stream.
constexpr size_t kStreamingMinBytes = 512 * 1024;

/// False when CELLRUN_CPU_STREAMING=off (read once).
bool streamingStores();

/// Whether copies of `totalBytes` in all should stream.
inline bool streamsCopiesOf(size_t totalBytes) {
  return totalBytes >= kStreamingMinBytes && streamingStores();
}

/// Copies `bytes` from `from` to `to`; with `stream`, when `to` is 64-byte
/// aligned and `bytes` a multiple of 64, with non-temporal stores (SSE2:
/// every x86-64 processor), else as memcpy does.
inline void copyRow(void *to, const void *from, size_t bytes, bool stream) {
#if defined(__x86_64__)
  if (stream && (reinterpret_cast<uintptr_t>(to) & 63) == 0 &&
      bytes % 64 == 0) {
    auto *target = static_cast<__m128i *>(to);
    const auto *source = static_cast<const __m128i *>(from);
    for (size_t k = 0; k < bytes / 16; k += 4) {
      __m128i a = _mm_loadu_si128(source + k);
      __m128i b = _mm_loadu_si128(source + k + 1);
      __m128i c = _mm_loadu_si128(source + k + 2);
      __m128i d = _mm_loadu_si128(source + k + 3);
      _mm_stream_si128(target + k, a);
      _mm_stream_si128(target + k + 1, b);
      _mm_stream_si128(target + k + 2, c);
      _mm_stream_si128(target + k + 3, d);
    }
    return;
  }
#endif
  std::memcpy(to, from, bytes);
}

/// Orders the copying thread's non-temporal stores before its later stores
/// (the release that hands the rows to another thread).
inline void streamFence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_STREAMINGCOPY_H
