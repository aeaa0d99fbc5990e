//===- GemmKernelBf16.cpp - The AVX512_BF16 GEMM kernel ------------------===//
//
// rows x (panels x 16) of D per call over pairs of k: one VDPBF16PS per
// (row, panel) and pair adds a[k+1] * b[k+1] and then a[k] * b[k] to the
// fp32 accumulator, 32 bf16 products an instruction. The same shapes as
// the fp32 AVX-512 kernel (6 rows by 4 panels, few rows by 6-8 panels).
// Built with a target attribute; only called where the processor has
// AVX512_BF16 (PackedGemmBf16.h).
//
//===----------------------------------------------------------------------===//
#include "BlockDispatch.h"
#include "PackedGemmBf16.h"

#if defined(__x86_64__)
#include <immintrin.h>

using namespace cellrun::cpu;
using namespace cellrun::cpu::detail;

namespace {
/// acc plus the products of the bf16 pairs of `a` and `b` (VDPBF16PS).
/// clang 16 crashes selecting the intrinsic's bf16 vectors (any -O above
/// 0): there it is the instruction itself.
__attribute__((target("avx512f,avx512bf16"), always_inline)) inline __m512
addPairProducts(__m512 acc, __m512i a, __m512i b) {
#if defined(__clang__) && __clang_major__ < 17
  asm("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
#else
  return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b);
#endif
}

#define CELL_ROW_PANELS(X, i)                                                  \
  X(i, 0) X(i, 1) X(i, 2) X(i, 3) X(i, 4) X(i, 5) X(i, 6) X(i, 7)
#define CELL_PAIRS(X)                                                          \
  CELL_ROW_PANELS(X, 0)                                                        \
  CELL_ROW_PANELS(X, 1)                                                        \
  CELL_ROW_PANELS(X, 2)                                                        \
  CELL_ROW_PANELS(X, 3) CELL_ROW_PANELS(X, 4) CELL_ROW_PANELS(X, 5)
#define CELL_PANELS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

template <int Rows, int Panels>
__attribute__((target("avx512f,avx512bf16"))) void
bf16Block(int64_t pairs, const uint32_t *a, const uint32_t *b,
          int64_t panelStride, float *c, int64_t ldc, bool first) {
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
  for (int64_t p = 0; p < pairs; ++p) {
#define CELL_LOAD(q)                                                           \
  __m512i weights##q = _mm512_setzero_si512();                                 \
  if constexpr (q < Panels) {                                                  \
    const uint32_t *panel##q = b + q * panelStride + p * kPanelColumns;        \
    _mm_prefetch(                                                              \
        reinterpret_cast<const char *>(panel##q + 24 * kPanelColumns),         \
        _MM_HINT_T0);                                                          \
    weights##q = _mm512_load_si512(panel##q);                                  \
  }
    CELL_PANELS(CELL_LOAD)
#undef CELL_LOAD
#define CELL_STEP(i, q)                                                        \
  if constexpr (i < Rows && q < Panels)                                        \
    acc##i##q = addPairProducts(                                               \
        acc##i##q, _mm512_set1_epi32(static_cast<int>(a[p * Rows + i])),       \
        weights##q);
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

template <int Rows, int Panels> struct Bf16Block {
  static void run(int64_t pairs, const uint32_t *a, const uint32_t *b,
                  int64_t panelStride, float *c, int64_t ldc, bool first) {
    bf16Block<Rows, Panels>(pairs, a, b, panelStride, c, ldc, first);
  }
};

void bf16Kernel(int rows, int panels, int64_t pairs, const uint32_t *a,
                const uint32_t *b, int64_t panelStride, float *c, int64_t ldc,
                bool first) {
  dispatchBlock<Bf16Block>(rows, panels, pairs, a, b, panelStride, c, ldc,
                           first);
}
} // namespace

Bf16Kernel cellrun::cpu::detail::bf16KernelAvx512() { return bf16Kernel; }
#else
cellrun::cpu::detail::Bf16Kernel cellrun::cpu::detail::bf16KernelAvx512() {
  return nullptr;
}
#endif
