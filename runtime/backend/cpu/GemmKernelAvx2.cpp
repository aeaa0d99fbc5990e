//===- GemmKernelAvx2.cpp - The AVX2+FMA GEMM micro-kernel ---------------===//
//
// rows x 16 of D per call (rows 1..6: 12 accumulators at most), and for one
// to three rows several panels per call; one fused multiply-add per element
// and k, in k order. Built for AVX2 with a target
// attribute; only called where the processor has it (CpuIsa.h).
//
//===----------------------------------------------------------------------===//
#include "PackedGemm.h"

#if defined(__x86_64__)
#include <immintrin.h>

/// How far ahead (in rows of 16 floats) a weight stream is prefetched.
#define PREFETCH_K 16

using namespace cellrun::cpu;

namespace {
// One named accumulator pair per row (GCC keeps an array of vectors on the
// stack inside the loop; named variables stay in registers).
#define CELL_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

template <int Rows>
__attribute__((target("avx2,fma"))) void avx2Tile(int64_t depth, const float *a,
                                                  const float *b, float *c,
                                                  int64_t ldc, bool first) {
#define CELL_DECLARE(i)                                                        \
  __m256 low##i = _mm256_setzero_ps(), high##i = _mm256_setzero_ps();          \
  if constexpr (i < Rows)                                                      \
    if (!first) {                                                              \
      low##i = _mm256_loadu_ps(c + i * ldc);                                   \
      high##i = _mm256_loadu_ps(c + i * ldc + 8);                              \
    }
  CELL_ROWS(CELL_DECLARE)
#undef CELL_DECLARE
#pragma GCC unroll 4
  for (int64_t k = 0; k < depth; ++k) {
    if constexpr (Rows <= 5)
      _mm_prefetch(
          reinterpret_cast<const char *>(b + (k + PREFETCH_K) * kPanelColumns),
          _MM_HINT_T0);
    __m256 bLow = _mm256_load_ps(b + k * kPanelColumns);
    __m256 bHigh = _mm256_load_ps(b + k * kPanelColumns + 8);
#define CELL_STEP(i)                                                           \
  if constexpr (i < Rows) {                                                    \
    __m256 scale = _mm256_broadcast_ss(a + k * Rows + i);                      \
    low##i = _mm256_fmadd_ps(scale, bLow, low##i);                             \
    high##i = _mm256_fmadd_ps(scale, bHigh, high##i);                          \
  }
    CELL_ROWS(CELL_STEP)
#undef CELL_STEP
  }
#define CELL_STORE(i)                                                          \
  if constexpr (i < Rows) {                                                    \
    _mm256_storeu_ps(c + i * ldc, low##i);                                     \
    _mm256_storeu_ps(c + i * ldc + 8, high##i);                                \
  }
  CELL_ROWS(CELL_STORE)
#undef CELL_STORE
}
#undef CELL_ROWS

// Rows x (Panels x 16) of D per call for 1-3 rows: more independent
// accumulators and weight streams than one panel gives (a single row's two
// accumulators leave the loop waiting on the multiply-add latency). Each
// element is still one multiply-add per k in k order.
#define CELL_PAIRS(X)                                                          \
  X(0, 0)                                                                      \
  X(0, 1)                                                                      \
  X(0, 2)                                                                      \
  X(0, 3) X(1, 0) X(1, 1) X(1, 2) X(1, 3) X(2, 0) X(2, 1) X(2, 2) X(2, 3)
#define CELL_PANELS(X) X(0) X(1) X(2) X(3)
#define CELL_ROWS3(X) X(0) X(1) X(2)

template <int Rows, int Panels>
__attribute__((target("avx2,fma"))) void
avx2Wide(int64_t depth, const float *a, const float *b, int64_t panelStride,
         float *c, int64_t ldc, bool first) {
#define CELL_DECLARE(i, q)                                                     \
  __m256 low##i##q = _mm256_setzero_ps(), high##i##q = _mm256_setzero_ps();    \
  if constexpr (i < Rows && q < Panels)                                        \
    if (!first) {                                                              \
      low##i##q = _mm256_loadu_ps(c + i * ldc + q * kPanelColumns);            \
      high##i##q = _mm256_loadu_ps(c + i * ldc + q * kPanelColumns + 8);       \
    }
  CELL_PAIRS(CELL_DECLARE)
#undef CELL_DECLARE
#pragma GCC unroll 2
  for (int64_t k = 0; k < depth; ++k) {
    // The rows' scales first, then each weight vector loaded right before
    // the multiply-adds that read it: one weight register live at a time
    // (12 accumulators, the scales and it fit AVX2's 16 registers; with
    // every panel's vectors loaded first, 3 rows x 2 panels and 2 x 3
    // spilled an accumulator to the stack inside this loop).
#define CELL_SCALE(i)                                                          \
  __m256 scale##i = _mm256_setzero_ps();                                       \
  if constexpr (i < Rows)                                                      \
    scale##i = _mm256_broadcast_ss(a + k * Rows + i);
    CELL_ROWS3(CELL_SCALE)
#undef CELL_SCALE
#define CELL_HALF(q, half, offset)                                             \
  if constexpr (q < Panels) {                                                  \
    __m256 weight =                                                            \
        _mm256_load_ps(b + q * panelStride + k * kPanelColumns + offset);      \
    if constexpr (Rows > 0)                                                    \
      half##0##q = _mm256_fmadd_ps(scale0, weight, half##0##q);                \
    if constexpr (Rows > 1)                                                    \
      half##1##q = _mm256_fmadd_ps(scale1, weight, half##1##q);                \
    if constexpr (Rows > 2)                                                    \
      half##2##q = _mm256_fmadd_ps(scale2, weight, half##2##q);                \
  }
#define CELL_PANEL(q)                                                          \
  if constexpr (q < Panels) {                                                  \
    _mm_prefetch(reinterpret_cast<const char *>(                               \
                     b + q * panelStride + (k + PREFETCH_K) * kPanelColumns),  \
                 _MM_HINT_T0);                                                 \
    CELL_HALF(q, low, 0)                                                       \
    CELL_HALF(q, high, 8)                                                      \
  }
    CELL_PANELS(CELL_PANEL)
#undef CELL_PANEL
#undef CELL_HALF
  }
#define CELL_STORE(i, q)                                                       \
  if constexpr (i < Rows && q < Panels) {                                      \
    _mm256_storeu_ps(c + i * ldc + q * kPanelColumns, low##i##q);              \
    _mm256_storeu_ps(c + i * ldc + q * kPanelColumns + 8, high##i##q);         \
  }
  CELL_PAIRS(CELL_STORE)
#undef CELL_STORE
}
#undef CELL_PAIRS
#undef CELL_PANELS
#undef CELL_ROWS3

void avx2Kernel(int rows, int64_t depth, const float *a, const float *b,
                float *c, int64_t ldc, bool first);

int panelsPerCallAvx2(int rows) {
  return rows == 1 ? 4 : rows == 2 ? 3 : rows == 3 ? 2 : 1;
}

void avx2BlockKernel(int rows, int panels, int64_t depth, const float *a,
                     const float *b, int64_t panelStride, float *c, int64_t ldc,
                     bool first) {
  if (rows <= 3 && panels == panelsPerCallAvx2(rows)) {
    if (rows == 1)
      return avx2Wide<1, 4>(depth, a, b, panelStride, c, ldc, first);
    if (rows == 2)
      return avx2Wide<2, 3>(depth, a, b, panelStride, c, ldc, first);
    return avx2Wide<3, 2>(depth, a, b, panelStride, c, ldc, first);
  }
  // Other shapes one panel at a time (the same bits either way).
  for (int q = 0; q < panels; ++q)
    avx2Kernel(rows, depth, a, b + q * panelStride, c + q * kPanelColumns, ldc,
               first);
}

void avx2Kernel(int rows, int64_t depth, const float *a, const float *b,
                float *c, int64_t ldc, bool first) {
  switch (rows) {
  case 1:
    return avx2Tile<1>(depth, a, b, c, ldc, first);
  case 2:
    return avx2Tile<2>(depth, a, b, c, ldc, first);
  case 3:
    return avx2Tile<3>(depth, a, b, c, ldc, first);
  case 4:
    return avx2Tile<4>(depth, a, b, c, ldc, first);
  case 5:
    return avx2Tile<5>(depth, a, b, c, ldc, first);
  default:
    return avx2Tile<6>(depth, a, b, c, ldc, first);
  }
}
} // namespace

cellrun::cpu::detail::GemmKernels cellrun::cpu::detail::gemmKernelsAvx2() {
  return {avx2Kernel, avx2BlockKernel, panelsPerCallAvx2};
}
#else
cellrun::cpu::detail::GemmKernels cellrun::cpu::detail::gemmKernelsAvx2() {
  return gemmKernelsGeneric();
}
#endif
