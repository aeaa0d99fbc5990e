//===- GemmKernelAvx512.cpp - The AVX-512 GEMM block kernel --------------===//
//
// rows x (panels x 16) of D per call: a panel's 16 columns are one 512-bit
// register, so 6 rows by 4 panels keep 24 accumulators in the 32 registers
// and each k costs 4 weight loads and 6 broadcasts for 24 multiply-adds;
// one to three rows take 6 to 8 panels at once so that enough independent
// weight streams are in flight. Every element of D is one fused
// multiply-add per k in k order, as in the AVX2 kernel: the two give the
// same bits. Built with a target attribute; only called where the
// processor has AVX-512 F (CpuIsa.h).
//
//===----------------------------------------------------------------------===//
#include "BlockDispatch.h"

#if defined(__x86_64__)
#include <immintrin.h>

using namespace cellrun::cpu;
using namespace cellrun::cpu::detail;

/// How far ahead (in rows of 16 floats, one cache line each) a weight
/// stream is prefetched.
#define PREFETCH_K 24

namespace {
// One named accumulator per (row, panel) (GCC keeps an array of vectors on
// the stack inside the loop; named variables stay in registers).
#define CELL_ROW_PANELS(X, i)                                                  \
  X(i, 0) X(i, 1) X(i, 2) X(i, 3) X(i, 4) X(i, 5) X(i, 6) X(i, 7)
#define CELL_PAIRS(X)                                                          \
  CELL_ROW_PANELS(X, 0)                                                        \
  CELL_ROW_PANELS(X, 1)                                                        \
  CELL_ROW_PANELS(X, 2)                                                        \
  CELL_ROW_PANELS(X, 3) CELL_ROW_PANELS(X, 4) CELL_ROW_PANELS(X, 5)
#define CELL_PANELS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

template <int Rows, int Panels>
__attribute__((target("avx512f"))) void
avx512Block(int64_t depth, const float *a, const float *b, int64_t panelStride,
            float *c, int64_t ldc, bool first) {
  static_assert(Rows * Panels + Panels < 32,
                "more accumulators than registers");
#define CELL_DECLARE(i, q)                                                     \
  __m512 acc##i##q = _mm512_setzero_ps();                                      \
  if constexpr (i < Rows && q < Panels)                                        \
    if (!first)                                                                \
      acc##i##q = _mm512_loadu_ps(c + i * ldc + q * kPanelColumns);
  CELL_PAIRS(CELL_DECLARE)
#undef CELL_DECLARE
#pragma GCC unroll 2
  for (int64_t k = 0; k < depth; ++k) {
#define CELL_LOAD(q)                                                           \
  __m512 weights##q = _mm512_setzero_ps();                                     \
  if constexpr (q < Panels) {                                                  \
    const float *panel##q = b + q * panelStride + k * kPanelColumns;           \
    _mm_prefetch(                                                              \
        reinterpret_cast<const char *>(panel##q + PREFETCH_K * kPanelColumns), \
        _MM_HINT_T0);                                                          \
    weights##q = _mm512_load_ps(panel##q);                                     \
  }
    CELL_PANELS(CELL_LOAD)
#undef CELL_LOAD
#define CELL_STEP(i, q)                                                        \
  if constexpr (i < Rows && q < Panels)                                        \
    acc##i##q = _mm512_fmadd_ps(_mm512_set1_ps(a[k * Rows + i]), weights##q,   \
                                acc##i##q);
    CELL_PAIRS(CELL_STEP)
#undef CELL_STEP
  }
#define CELL_STORE(i, q)                                                       \
  if constexpr (i < Rows && q < Panels)                                        \
    _mm512_storeu_ps(c + i * ldc + q * kPanelColumns, acc##i##q);
  CELL_PAIRS(CELL_STORE)
#undef CELL_STORE
}
#undef CELL_PAIRS
#undef CELL_ROW_PANELS
#undef CELL_PANELS

template <int Rows, int Panels> struct Avx512Block {
  static void run(int64_t depth, const float *a, const float *b,
                  int64_t panelStride, float *c, int64_t ldc, bool first) {
    avx512Block<Rows, Panels>(depth, a, b, panelStride, c, ldc, first);
  }
};

void avx512BlockKernel(int rows, int panels, int64_t depth, const float *a,
                       const float *b, int64_t panelStride, float *c,
                       int64_t ldc, bool first) {
  dispatchBlock<Avx512Block>(rows, panels, depth, a, b, panelStride, c, ldc,
                             first);
}

void avx512MicroKernel(int rows, int64_t depth, const float *a, const float *b,
                       float *c, int64_t ldc, bool first) {
  avx512BlockKernel(rows, 1, depth, a, b, 0, c, ldc, first);
}

int panelsPerCallAvx512(int rows) { return rows <= 2 ? 8 : rows == 3 ? 6 : 4; }

/// For 16 k of six rows (one register each), the 96 packed floats are six
/// registers: lane l of register j is row (16j + l) % 6 at k (16j + l) / 6.
/// Each register is made of three two-row permutes (rows 0-1, 2-3, 4-5)
/// blended by which row each lane takes.
struct SixRowTranspose {
  int32_t index[6][3][16];
  uint16_t fromMiddle[6], fromLast[6];
  constexpr SixRowTranspose() : index(), fromMiddle(), fromLast() {
    for (int j = 0; j < 6; ++j)
      for (int lane = 0; lane < 16; ++lane) {
        int t = 16 * j + lane, row = t % 6, k = t / 6;
        index[j][row / 2][lane] = (row % 2) * 16 + k;
        if (row / 2 == 1)
          fromMiddle[j] |= uint16_t(1u << lane);
        if (row / 2 == 2)
          fromLast[j] |= uint16_t(1u << lane);
      }
  }
};
constexpr SixRowTranspose kSixRows;

__attribute__((target("avx512f"))) void
avx512PackSix(const float *const *rows, int64_t depth, float *packed) {
  int64_t k = 0;
  for (; k + 16 <= depth; k += 16) {
    __m512 row[6];
    for (int i = 0; i < 6; ++i)
      row[i] = _mm512_loadu_ps(rows[i] + k);
    float *target = packed + k * 6;
    for (int j = 0; j < 6; ++j) {
      __m512 pairs[3];
      for (int p = 0; p < 3; ++p)
        pairs[p] = _mm512_permutex2var_ps(
            row[2 * p], _mm512_loadu_si512(kSixRows.index[j][p]),
            row[2 * p + 1]);
      __m512 out =
          _mm512_mask_blend_ps(kSixRows.fromMiddle[j], pairs[0], pairs[1]);
      out = _mm512_mask_blend_ps(kSixRows.fromLast[j], out, pairs[2]);
      _mm512_storeu_ps(target + 16 * j, out);
    }
  }
  for (; k < depth; ++k)
    for (int i = 0; i < 6; ++i)
      packed[k * 6 + i] = rows[i][k];
}
} // namespace

GemmKernels cellrun::cpu::detail::gemmKernelsAvx512() {
  return {avx512MicroKernel, avx512BlockKernel, panelsPerCallAvx512,
          avx512PackSix};
}
#else
cellrun::cpu::detail::GemmKernels cellrun::cpu::detail::gemmKernelsAvx512() {
  return gemmKernelsGeneric();
}
#endif
