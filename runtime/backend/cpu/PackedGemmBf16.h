//===- PackedGemmBf16.h - The CPU GEMM with bf16 products ------*- C++ -*-===//
//
// For artifacts compiled with --precision=bf16 ("fp32 data, bf16
// products", as the GPU's tensor cores compute them): B is packed once as
// bf16 (rounded to nearest even), A's rows are rounded to bf16 as they are
// packed, and every element of D is accumulated in fp32 over k in pairs:
// d += a[k+1] * b[k+1]; d += a[k] * b[k] (each product of two bf16 values
// is exact in fp32), as AVX512_BF16's VDPBF16PS computes it. Half the
// weight bytes of fp32 to read, which is what a step of a few rows waits
// for. VDPBF16PS does no more multiply-adds a cycle than fp32 FMAs on the
// processors we measured, so above kBf16KernelRows rows the product runs
// on the fp32 kernel over a copy of B widened back to fp32, each pair of k
// swapped (odd first): fused multiply-adds of the same exact products in
// the same order, the same bits. On a processor without AVX512_BF16 the
// portable kernel computes the same sums in the same order too (the
// instruction alone flushes denormals). So a row's result does not depend
// on its batch, the kernel or the split among threads.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_PACKEDGEMMBF16_H
#define CELLRUN_BACKEND_CPU_PACKEDGEMMBF16_H

#include "PackedGemm.h"

#include <mutex>

namespace cellrun::cpu {

/// `x` rounded to bf16 (nearest, ties to even; NaN stays a NaN).
uint16_t toBf16(float x);
float fromBf16(uint16_t x);

/// Whether this processor runs AVX512_BF16 (VDPBF16PS).
bool cpuHasAvx512Bf16();

/// B (logically [k, n]) as bf16 in panels of 16 columns: panel p holds, for
/// each pair of rows (2q, 2q+1), 16 32-bit words, word c = b[2q][16p+c] in
/// its low half and b[2q+1][16p+c] in its high half (zero past k and n).
/// Where AMX runs (cpuHasAmxBf16), each panel's pairs are padded with zeros
/// to a multiple of 16, so that every 16 of them are a tile (GemmAmx.h).
class PackedMatrixBf16 {
public:
  PackedMatrixBf16(const float *source, int64_t k, int64_t n, bool transposed);

  int64_t depth() const { return k_; }
  int64_t columns() const { return n_; }
  int64_t panels() const { return panels_; }
  int64_t pairs() const { return pairs_; }
  /// Pairs a panel holds, the zero padding included (a multiple of 16 where
  /// AMX runs).
  int64_t paddedPairs() const { return paddedPairs_; }
  /// Pair `pair` of panel `panel`: 16 words.
  const uint32_t *panel(int64_t panel, int64_t pair = 0) const {
    return data_.get() + (panel * paddedPairs_ + pair) * kPanelColumns;
  }
  /// Words from one panel to the next.
  int64_t panelStride() const { return paddedPairs_ * kPanelColumns; }
  /// B widened to fp32 with the rows of each pair swapped (2 * pairs rows:
  /// b[1], b[0], b[3], b[2], ...), for products of many rows. Made with B
  /// where AMX does not run; where it does (and takes every product), only
  /// at the first call (tests asking for the other kernels).
  const PackedMatrix &widened() const;
  /// Bytes of the packed forms made so far.
  size_t bytes() const {
    return static_cast<size_t>(panels_ * paddedPairs_ * kPanelColumns) *
               sizeof(uint32_t) +
           (widened_ ? widened_->bytes() : 0);
  }

private:
  struct Free {
    void operator()(uint32_t *p) const;
  };
  /// widened() from the bf16 pairs.
  std::unique_ptr<PackedMatrix> widen() const;

  int64_t k_, n_, panels_, pairs_, paddedPairs_;
  std::unique_ptr<uint32_t[], Free> data_;
  mutable std::once_flag widenOnce_;
  mutable std::unique_ptr<PackedMatrix> widened_;
};

/// Up to this many rows a bf16 product runs on the bf16 kernels (reading
/// half the bytes of B); above, on the fp32 kernel over B widened.
constexpr int64_t kBf16KernelRows = 8;

/// Which kernels a bf16 product runs on: the portable ones, AVX512_BF16
/// (up to kBf16KernelRows rows; the fp32 kernel above, the same bits), or
/// AMX tiles for every row count (GemmAmx.h: bits of their own).
enum class Bf16Kernels { Portable, Avx512Bf16, Amx };

/// The fastest this processor runs for products by `b`: AMX where it takes
/// `b`, else AVX512_BF16 where the processor has it, else the portable ones
/// (the portable ones, too, when CELLRUN_CPU_ISA asks for avx2 or generic).
Bf16Kernels bestBf16Kernels(const PackedMatrixBf16 &b);

/// What bf16 products run on here, for descriptions: "amx", "avx512bf16" or
/// "portable" (asks nothing of the OS: cpuOffersAmxBf16).
const char *bf16KernelsName();

/// D[m, n] (row stride ldd) = epilogue(bf16(A[m, k]) * B) accumulated in
/// fp32 on `kernels` (Amx only where amxTakes(b)).
void packedGemmBf16(const float *a, int64_t lda, int64_t m,
                    const PackedMatrixBf16 &b, const GemmEpilogue &epilogue,
                    float *d, int64_t ldd, ThreadPool *pool,
                    Bf16Kernels kernels);
/// The same on bestBf16Kernels(b).
void packedGemmBf16(const float *a, int64_t lda, int64_t m,
                    const PackedMatrixBf16 &b, const GemmEpilogue &epilogue,
                    float *d, int64_t ldd, ThreadPool *pool = nullptr);

namespace detail {
/// rows (1..6) x (panels x 16) of D += or = (first) A * B over `pairs`
/// pairs of k: A as pairs groups of `rows` words, B's panel q at b + q *
/// panelStride.
using Bf16Kernel = void (*)(int rows, int panels, int64_t pairs,
                            const uint32_t *a, const uint32_t *b,
                            int64_t panelStride, float *c, int64_t ldc,
                            bool first);
/// Null where the build has no AVX512_BF16 kernel.
Bf16Kernel bf16KernelAvx512();
int bf16PanelsPerCall(int rows);
} // namespace detail

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_PACKEDGEMMBF16_H
