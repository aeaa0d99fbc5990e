//===- LstmGateGemm.cpp - An LSTM step's GEMM inside its gates' loop ------===//
//
// For a narrow LSTM (the pre-activations' rows at most kMaxGateGemmColumns
// floats) the GEMM step before the gates costs more in its own pass than in
// its arithmetic: A packed, D written out, a bias pass, D read back. Here
// the block is done a part of kPartRows rows at a time: the part's GEMM rows
// into a small buffer that stays in the first-level cache (on AVX-512 and
// AVX2 the accumulators in registers, A's rows read where they lie, the
// packed weights in place; elsewhere packedGemmGathered), then the gates
// over it (LstmGates.cpp). Every element is what PackedGemm computes on the
// same instruction set (one fused multiply-add per k in k order from zero,
// then alpha and beta * bias as scaleRowsAddBias applies them), so the bits
// are the GEMM step's and the gates' as before.
//
//===----------------------------------------------------------------------===//
#include "LstmGates.h"
#include "PackedGemm.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using namespace cellrun::cpu;

namespace {
/// Rows of a part: their GEMM rows (at most 16 x 128 floats, 8 KB) stay in
/// the first-level cache between the GEMM and the gates.
constexpr int64_t kPartRows = 16;
/// The gates' loop asks for rows ahead (detail::kLstmRowsAhead): a part's
/// `a` pointers run on that far past its rows, into the same buffer.
constexpr int64_t kRingSlack = detail::kLstmRowsAhead;

#if defined(__x86_64__)
/// Rows x (Panels x 16) of the GEMM, the accumulators in registers: per k,
/// Panels weight vectors and one broadcast of each row's A, as the block
/// kernels of PackedGemm do, then the epilogue, stored to out (row stride
/// ldo).
template <int Panels, int Rows>
__attribute__((target("avx512f"))) void
gemmRowsAvx512(const float *const *rows, int64_t depth, const PackedMatrix &w,
               const GateGemm &gemm, float *out, int64_t ldo) {
  const float *weights = w.panel(0);
  const int64_t stride = w.panelStride();
  __m512 acc[Rows][Panels];
#pragma GCC unroll 8
  for (int i = 0; i < Rows; ++i)
#pragma GCC unroll 8
    for (int p = 0; p < Panels; ++p)
      acc[i][p] = _mm512_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    __m512 panel[Panels];
#pragma GCC unroll 8
    for (int p = 0; p < Panels; ++p) {
      panel[p] = _mm512_load_ps(weights + p * stride + k * kPanelColumns);
      // In a register for all the rows: the compiler would otherwise load
      // it again as each row's multiply-add operand (2 loads a cycle bound
      // the loop then, not the multiply-adds).
      __asm__("" : "+v"(panel[p]));
    }
#pragma GCC unroll 8
    for (int i = 0; i < Rows; ++i) {
      __m512 a = _mm512_set1_ps(rows[i][k]);
#pragma GCC unroll 8
      for (int p = 0; p < Panels; ++p)
        acc[i][p] = _mm512_fmadd_ps(a, panel[p], acc[i][p]);
    }
  }
  // scaleRowsAddBias: alpha * d without a bias; d + beta * bias with alpha
  // 1; alpha * d + beta * bias otherwise (nothing for alpha 1 and no bias).
  const __m512 alpha = _mm512_set1_ps(gemm.alpha);
  const __m512 beta = _mm512_set1_ps(gemm.beta);
#pragma GCC unroll 8
  for (int p = 0; p < Panels; ++p) {
    __m512 scaledBias =
        gemm.bias ? _mm512_mul_ps(beta, _mm512_loadu_ps(gemm.bias + p * 16))
                  : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < Rows; ++i) {
      __m512 d = acc[i][p];
      if (gemm.alpha != 1.0f)
        d = _mm512_mul_ps(alpha, d);
      if (gemm.bias)
        d = _mm512_add_ps(d, scaledBias);
      _mm512_store_ps(out + i * ldo + p * kPanelColumns, d);
    }
  }
}

/// gemmRowsAvx512 over `count` rows: as many at a time as the registers
/// hold (Rows x Panels accumulators and Panels weights), the rest one by
/// one.
template <int Panels>
__attribute__((target("avx512f"))) void
gemmPartAvx512(const float *const *rows, int64_t count, int64_t depth,
               const PackedMatrix &w, const GateGemm &gemm, float *out,
               int64_t ldo) {
  constexpr int kRows = Panels <= 2 ? 6 : Panels <= 4 ? 4 : 2;
  int64_t r = 0;
  for (; r + kRows <= count; r += kRows)
    gemmRowsAvx512<Panels, kRows>(rows + r, depth, w, gemm, out + r * ldo, ldo);
  for (; r < count; ++r)
    gemmRowsAvx512<Panels, 1>(rows + r, depth, w, gemm, out + r * ldo, ldo);
}

/// Rows x 16 of the GEMM on AVX2 (one panel, two 8-float accumulators a
/// row, at most six rows: 12 accumulators, the panel's two vectors and a
/// broadcast in the 16 registers), A's rows read where they lie; per k one
/// fused multiply-add in k order from zero, as the AVX2 micro-kernel
/// (GemmKernelAvx2.cpp) does on packed A, then the epilogue.
template <int Rows>
__attribute__((target("avx2,fma"))) void
gemmPanelAvx2(const float *const *rows, int64_t depth, const float *panel,
              const GateGemm &gemm, const float *bias, float *out,
              int64_t ldo) {
  __m256 low[Rows], high[Rows];
#pragma GCC unroll 8
  for (int i = 0; i < Rows; ++i)
    low[i] = high[i] = _mm256_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    __m256 panelLow = _mm256_load_ps(panel + k * kPanelColumns);
    __m256 panelHigh = _mm256_load_ps(panel + k * kPanelColumns + 8);
#pragma GCC unroll 8
    for (int i = 0; i < Rows; ++i) {
      __m256 a = _mm256_broadcast_ss(rows[i] + k);
      low[i] = _mm256_fmadd_ps(a, panelLow, low[i]);
      high[i] = _mm256_fmadd_ps(a, panelHigh, high[i]);
    }
  }
  const __m256 alpha = _mm256_set1_ps(gemm.alpha);
  const __m256 beta = _mm256_set1_ps(gemm.beta);
  __m256 biasLow = _mm256_setzero_ps(), biasHigh = _mm256_setzero_ps();
  if (bias) {
    biasLow = _mm256_mul_ps(beta, _mm256_loadu_ps(bias));
    biasHigh = _mm256_mul_ps(beta, _mm256_loadu_ps(bias + 8));
  }
#pragma GCC unroll 8
  for (int i = 0; i < Rows; ++i) {
    __m256 dLow = low[i], dHigh = high[i];
    if (gemm.alpha != 1.0f) {
      dLow = _mm256_mul_ps(alpha, dLow);
      dHigh = _mm256_mul_ps(alpha, dHigh);
    }
    if (bias) {
      dLow = _mm256_add_ps(dLow, biasLow);
      dHigh = _mm256_add_ps(dHigh, biasHigh);
    }
    _mm256_store_ps(out + i * ldo, dLow);
    _mm256_store_ps(out + i * ldo + 8, dHigh);
  }
}

/// gemmPanelAvx2 over `count` rows and every panel: six rows at a time
/// (the rest in one smaller group), each group's rows walking the panels
/// while they are in the first-level cache.
__attribute__((target("avx2,fma"))) void
gemmPartAvx2(const float *const *rows, int64_t count, int64_t depth,
             const PackedMatrix &w, const GateGemm &gemm, float *out,
             int64_t ldo) {
  using PanelKernel =
      void (*)(const float *const *, int64_t, const float *, const GateGemm &,
               const float *, float *, int64_t);
  static constexpr PanelKernel kernels[] = {
      nullptr,          gemmPanelAvx2<1>, gemmPanelAvx2<2>, gemmPanelAvx2<3>,
      gemmPanelAvx2<4>, gemmPanelAvx2<5>, gemmPanelAvx2<6>};
  const int64_t panels = w.columns() / kPanelColumns;
  for (int64_t r = 0; r < count; r += 6) {
    PanelKernel kernel = kernels[std::min<int64_t>(6, count - r)];
    for (int64_t p = 0; p < panels; ++p)
      kernel(rows + r, depth, w.panel(p), gemm,
             gemm.bias ? gemm.bias + p * kPanelColumns : nullptr,
             out + r * ldo + p * kPanelColumns, ldo);
  }
}

void gemmPartFast(const float *const *rows, int64_t count, int64_t depth,
                  const PackedMatrix &w, const GateGemm &gemm, float *out,
                  int64_t ldo) {
  switch (w.columns() / kPanelColumns) {
  case 1:
    return gemmPartAvx512<1>(rows, count, depth, w, gemm, out, ldo);
  case 2:
    return gemmPartAvx512<2>(rows, count, depth, w, gemm, out, ldo);
  case 3:
    return gemmPartAvx512<3>(rows, count, depth, w, gemm, out, ldo);
  case 4:
    return gemmPartAvx512<4>(rows, count, depth, w, gemm, out, ldo);
  case 5:
    return gemmPartAvx512<5>(rows, count, depth, w, gemm, out, ldo);
  case 6:
    return gemmPartAvx512<6>(rows, count, depth, w, gemm, out, ldo);
  case 7:
    return gemmPartAvx512<7>(rows, count, depth, w, gemm, out, ldo);
  default:
    return gemmPartAvx512<8>(rows, count, depth, w, gemm, out, ldo);
  }
}
#endif
} // namespace

void cellrun::cpu::detail::lstmGateRowsWithGemm(const LstmGateRows &block,
                                                CpuIsa isa) {
  const GateGemm &gemm = *block.gemm;
  const PackedMatrix &weights = *gemm.weights;
  const int64_t n = weights.columns(), depth = weights.depth();
  alignas(64) float buffer[kPartRows * kMaxGateGemmColumns];
  const float *ring[kPartRows + kRingSlack];
  for (int64_t i = 0; i < kPartRows + kRingSlack; ++i)
    ring[i] = buffer + (i % kPartRows) * n;
  const int64_t prefetchRows =
      block.prefetchRows ? block.prefetchRows : block.rows;
  for (int64_t first = 0; first < block.rows; first += kPartRows) {
    int64_t rows = std::min(kPartRows, block.rows - first);
    // The next part's rows of A (pool rows, scattered), asked for now.
    for (int64_t r = first + kPartRows;
         r < std::min(block.rows, first + 2 * kPartRows); ++r)
      for (int64_t k = 0; k < depth; k += 16)
        __builtin_prefetch(gemm.rows[r] + k);
#if defined(__x86_64__)
    if (isa == CpuIsa::Avx512)
      gemmPartFast(gemm.rows + first, rows, depth, weights, gemm, buffer, n);
    else if (isa == CpuIsa::Avx2)
      gemmPartAvx2(gemm.rows + first, rows, depth, weights, gemm, buffer, n);
    else
#endif
    {
      GemmEpilogue epilogue;
      epilogue.alpha = gemm.alpha;
      epilogue.beta = gemm.beta;
      epilogue.bias = gemm.bias;
      packedGemmGathered(gemm.rows + first, rows, weights, epilogue, buffer, n,
                         nullptr, isa);
    }
    LstmGateRows part = block;
    part.gemm = nullptr;
    part.a = ring;
    part.b = block.b ? block.b + first : nullptr;
    part.c = block.c + first;
    part.cOut = block.cOut ? block.cOut + first * block.hidden : nullptr;
    part.hOut = block.hOut ? block.hOut + first * block.hidden : nullptr;
    part.cOutRows = block.cOutRows ? block.cOutRows + first : nullptr;
    part.hOutRows = block.hOutRows ? block.hOutRows + first : nullptr;
    part.cCopyRows = block.cCopyRows ? block.cCopyRows + first : nullptr;
    part.hCopyRows = block.hCopyRows ? block.hCopyRows + first : nullptr;
    part.rows = rows;
    part.prefetchRows = prefetchRows - first;
    lstmGateRowsUnfenced(part, isa); // lstmGateRows fences the whole block
  }
}
