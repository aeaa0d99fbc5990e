//===- MaskedTails.h - A loop's last partial vector, masked -----*- C++ -*-===//
//
// The first n lanes of a vector (n below its width) loaded with the rest
// zero, and stored without touching the floats after them: the element-wise
// loops (ElementLoops.cpp, VectorMath.cpp) run their tail as one more
// vector, so each lane's bits are those of a whole vector's. x86-64 only;
// callers are built for AVX2 or AVX-512 F with target attributes.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_MASKEDTAILS_H
#define CELLRUN_BACKEND_CPU_MASKEDTAILS_H

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start some intrinsics from a self-initialised
// "undefined" vector and then warn about it (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>

namespace cellrun::cpu::detail {

__attribute__((target("avx2"))) inline __m256i firstLanesAvx2(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
__attribute__((target("avx2"))) inline __m256 loadTailAvx2(const float *from,
                                                           int64_t n) {
  return _mm256_maskload_ps(from, firstLanesAvx2(n));
}
__attribute__((target("avx2"))) inline void storeTailAvx2(float *to, int64_t n,
                                                          __m256 value) {
  _mm256_maskstore_ps(to, firstLanesAvx2(n), value);
}
__attribute__((target("avx512f"))) inline __m512
loadTailAvx512(const float *from, int64_t n) {
  return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), from);
}
__attribute__((target("avx512f"))) inline void
storeTailAvx512(float *to, int64_t n, __m512 value) {
  _mm512_mask_storeu_ps(to, static_cast<__mmask16>((1u << n) - 1), value);
}

} // namespace cellrun::cpu::detail

#endif
#endif // CELLRUN_BACKEND_CPU_MASKEDTAILS_H
