//===- PackedGemm.h - The CPU backend's own fp32 GEMM ----------*- C++ -*-===//
//
// D = alpha * A * B (+ beta * bias) with B a weight packed once, at load, into
// panels of 16 columns. The same routine serves one row and 512: B is read
// once per call whatever the row count (no matrix-vector loop per row, no
// packing of the weights per call), and every element of D is the sum over
// k in order 0..K-1 of one fused multiply-add after another (AVX2 and
// AVX-512 alike; the portable kernel, for processors without FMA,
// multiplies and adds apart: bits of its own), then the epilogue. So a row's result does not depend on which rows it was batched
// with, nor on how the work was split among threads: the same bits alone
// and in a batch of 512.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_PACKEDGEMM_H
#define CELLRUN_BACKEND_CPU_PACKEDGEMM_H

#include "CpuIsa.h"

#include <cstdint>
#include <cstdlib>
#include <memory>

namespace cellrun::cpu {
class ThreadPool;

/// Columns per panel of a packed matrix (two AVX2 vectors, one AVX-512).
constexpr int64_t kPanelColumns = 16;

/// B (logically [k, n]) in panels: panel p holds columns 16p..16p+15 as
/// k rows of 16 floats, the columns past n zero.
class PackedMatrix {
public:
  /// Packs `source`: [n, k] row-major when `transposed` (a weight as Gemm
  /// with transB=1 stores it), [k, n] otherwise.
  PackedMatrix(const float *source, int64_t k, int64_t n, bool transposed);

  int64_t depth() const { return k_; }
  int64_t columns() const { return n_; }
  int64_t panels() const { return panels_; }
  /// Row `row` of panel `panel`: 16 floats.
  const float *panel(int64_t panel, int64_t row = 0) const {
    return data_.get() + (panel * k_ + row) * kPanelColumns;
  }
  /// Floats from one panel to the next.
  int64_t panelStride() const { return k_ * kPanelColumns; }
  size_t bytes() const {
    return static_cast<size_t>(panels_ * k_ * kPanelColumns) * sizeof(float);
  }

private:
  struct Free {
    void operator()(float *p) const;
  };
  int64_t k_, n_, panels_;
  std::unique_ptr<float[], Free> data_;
};

/// What is added after the product: d = alpha * acc, then d += beta * bias
/// (bias [n] for every row, or [m, n] with row stride `biasStride`).
struct GemmEpilogue {
  float alpha = 1.0f;
  float beta = 0.0f;
  const float *bias = nullptr;
  int64_t biasStride = 0; // 0: the same bias row for every row
};

/// Below this many floating-point operations (2 m n k, about 40 us on one
/// core) a product runs on the calling thread alone.
constexpr double kMinParallelGemmFlops = 2e6;

/// D[m, n] (row stride ldd) = epilogue(A[m, k] (row stride lda) * B).
/// With `pool`, the panels of a large enough product are split among its
/// workers. `isa` picks the micro-kernels (the machine's best by default).
void packedGemm(const float *a, int64_t lda, int64_t m, const PackedMatrix &b,
                const GemmEpilogue &epilogue, float *d, int64_t ldd,
                ThreadPool *pool = nullptr, CpuIsa isa = detectCpuIsa());
/// The same with A's row r at rowsOfA[r] (rows read where they lie, e.g.
/// pool rows of a task): the same bits as packedGemm of those rows copied
/// together.
void packedGemmGathered(const float *const *rowsOfA, int64_t m,
                        const PackedMatrix &b, const GemmEpilogue &epilogue,
                        float *d, int64_t ldd, ThreadPool *pool = nullptr,
                        CpuIsa isa = detectCpuIsa());

namespace detail {
/// rows x 16 block of D (row stride ldc) += or = (first) A * B-panel over
/// `depth` rows: A packed as depth groups of `rows` floats, B as depth rows
/// of 16. rows is 1..6.
using MicroKernel = void (*)(int rows, int64_t depth, const float *a,
                             const float *b, float *c, int64_t ldc, bool first);
/// rows (1..6) x (panels x 16) of D: the same as that many micro-kernel
/// calls side by side (panel q's B at b + q * panelStride), in one pass
/// over k with more accumulators and weight streams in flight.
using BlockKernel = void (*)(int rows, int panels, int64_t depth,
                             const float *a, const float *b,
                             int64_t panelStride, float *c, int64_t ldc,
                             bool first);
/// Packs six rows of A (row i's `depth` floats at rows[i]) as depth groups
/// of six floats (k-major), what the micro-kernels read: a copy, so every
/// version gives the same bits.
using PackSixRows = void (*)(const float *const *rows, int64_t depth,
                             float *packed);
/// One instruction set's kernels.
struct GemmKernels {
  MicroKernel micro;
  BlockKernel block; // null: the micro-kernel only
  /// Panels a block call covers for a group of `rows` rows (1: the
  /// micro-kernel panel by panel).
  int (*panelsPerCall)(int rows);
  PackSixRows packSix = nullptr; // null: the portable loop
};
GemmKernels gemmKernelsGeneric();
GemmKernels gemmKernelsAvx2();
GemmKernels gemmKernelsAvx512();
/// The kernels of `isa` (the portable ones where the build has no others).
GemmKernels gemmKernels(CpuIsa isa);
/// A growing buffer of T, 64-byte aligned (a thread's packed A).
template <typename T> class AlignedScratch {
public:
  ~AlignedScratch() { std::free(data_); }
  /// At least `count` elements (the old contents are not kept).
  T *reserve(int64_t count) {
    if (count > capacity_) {
      std::free(data_);
      size_t bytes = static_cast<size_t>(count) * sizeof(T);
      data_ = static_cast<T *>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
      capacity_ = count;
    }
    return data_;
  }

private:
  T *data_ = nullptr;
  int64_t capacity_ = 0;
};
/// Columns [begin, end) of D's m rows after the product: zero when the
/// product was empty (K = 0), then the epilogue (alpha, bias).
void finishColumns(int64_t m, bool emptyProduct, const GemmEpilogue &epilogue,
                   float *d, int64_t ldd, int64_t begin, int64_t end);
} // namespace detail

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_PACKEDGEMM_H
