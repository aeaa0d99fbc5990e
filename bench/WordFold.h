//===- WordFold.h - Reading memory at its bandwidth, for the floors -*- C++
//-*-===//
//
// The XOR of a range of 64-bit words: the benchmarks' "one read of the
// weights" floor. 256-bit loads where the processor has AVX2 (a scalar loop
// built at -O2 is not vectorised and reads at a third of what L3 gives).
//
//===----------------------------------------------------------------------===//
#ifndef CELL_BENCH_WORDFOLD_H
#define CELL_BENCH_WORDFOLD_H

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace cellbench {

#if defined(__x86_64__)
__attribute__((target("avx2"))) inline uint64_t
foldWordsAvx2(const uint64_t *words, int64_t begin, int64_t end) {
  __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    acc0 = _mm256_xor_si256(
        acc0, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(words + i)));
    acc1 = _mm256_xor_si256(
        acc1,
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(words + i + 4)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i *>(lanes),
                     _mm256_xor_si256(acc0, acc1));
  uint64_t folded = lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3];
  for (; i < end; ++i)
    folded ^= words[i];
  return folded;
}
#endif

/// XOR of words [begin, end).
inline uint64_t foldWords(const uint64_t *words, int64_t begin, int64_t end) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2"))
    return foldWordsAvx2(words, begin, end);
#endif
  uint64_t folded = 0;
  for (int64_t i = begin; i < end; ++i)
    folded ^= words[i];
  return folded;
}

} // namespace cellbench

#endif // CELL_BENCH_WORDFOLD_H
