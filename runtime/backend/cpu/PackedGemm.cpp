//===- PackedGemm.cpp - The CPU backend's own fp32 GEMM ------------------===//
//
// Blocking (after BLIS): for large row counts, K in blocks of 512 and rows in
// blocks of 144, A packed per block in groups of 6 rows, so a 32 KB slice of
// a B panel stays in L1/L2 while the 6x16 micro-kernel walks the row groups
// (K blocks of 256 measured 10-15% slower on the 2-core EPYC machine).
// For 16 rows or fewer A is packed whole and each panel is streamed once
// from memory. A is packed once per product by the caller; the workers then
// take chunks of panels in turn. Partial sums go to D in fp32 between K
// blocks, which leaves every element's sum in order 0..K-1 whatever the
// blocking.
//
//===----------------------------------------------------------------------===//
#include "PackedGemm.h"

#include "ElementLoops.h"
#include "ThreadPool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace cellrun::cpu;
using namespace cellrun::cpu::detail;

static constexpr size_t kAlignment = 64;
static constexpr int kGroupRows = 6;
static constexpr int64_t kDepthBlock = 512;
static constexpr int64_t kRowBlock = 144;
static constexpr int64_t kSmallRows = 16;
/// The fewest panels a worker takes at a time: ThreadPool's guided chunks
/// are larger at first and this at the end. A multiple of the AVX-512 block
/// kernel's 4 panels a call for full groups and 8 for one or two rows; what
/// a chunk leaves over (3 rows take 6 panels a call, AVX2 2-4) goes panel
/// by panel.
static constexpr int64_t kPanelsPerChunk = 8;

void PackedMatrix::Free::operator()(float *p) const { std::free(p); }

static float *allocateFloats(int64_t count) {
  size_t bytes =
      static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(float);
  bytes = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return static_cast<float *>(std::aligned_alloc(kAlignment, bytes));
}

PackedMatrix::PackedMatrix(const float *source, int64_t k, int64_t n,
                           bool transposed)
    : k_(k), n_(n), panels_((n + kPanelColumns - 1) / kPanelColumns),
      data_(allocateFloats(panels_ * k * kPanelColumns)) {
  for (int64_t p = 0; p < panels_; ++p)
    for (int64_t row = 0; row < k; ++row) {
      float *target = data_.get() + (p * k + row) * kPanelColumns;
      for (int64_t c = 0; c < kPanelColumns; ++c) {
        int64_t column = p * kPanelColumns + c;
        target[c] = column >= n  ? 0.0f
                    : transposed ? source[column * k + row]
                                 : source[row * n + column];
      }
    }
}

namespace {
template <int Rows>
void genericTile(int64_t depth, const float *a, const float *b, float *c,
                 int64_t ldc, bool first) {
  float acc[Rows][kPanelColumns];
  for (int i = 0; i < Rows; ++i)
    for (int j = 0; j < kPanelColumns; ++j)
      acc[i][j] = first ? 0.0f : c[i * ldc + j];
  for (int64_t k = 0; k < depth; ++k)
    for (int i = 0; i < Rows; ++i) {
      float scale = a[k * Rows + i];
      for (int j = 0; j < kPanelColumns; ++j)
        acc[i][j] += scale * b[k * kPanelColumns + j];
    }
  for (int i = 0; i < Rows; ++i)
    std::memcpy(c + i * ldc, acc[i], sizeof(acc[i]));
}

void genericKernel(int rows, int64_t depth, const float *a, const float *b,
                   float *c, int64_t ldc, bool first) {
  switch (rows) {
  case 1:
    return genericTile<1>(depth, a, b, c, ldc, first);
  case 2:
    return genericTile<2>(depth, a, b, c, ldc, first);
  case 3:
    return genericTile<3>(depth, a, b, c, ldc, first);
  case 4:
    return genericTile<4>(depth, a, b, c, ldc, first);
  case 5:
    return genericTile<5>(depth, a, b, c, ldc, first);
  default:
    return genericTile<6>(depth, a, b, c, ldc, first);
  }
}

/// Where A's rows are: `rows` (row r at rows[r]) when it is given (rows
/// gathered where they lie), else `data` with a stride of `lda`.
struct RowsOfA {
  const float *data;
  int64_t lda;
  const float *const *rows;
  const float *row(int64_t r) const { return rows ? rows[r] : data + r * lda; }
};

/// Packs rows [first, first + rows) and columns [k0, k0 + depth) of A in
/// groups of 6 rows: group g holds depth x min(6, rows - 6g) floats,
/// k-major.
void packRows(const RowsOfA &a, int64_t first, int64_t k0, int64_t rows,
              int64_t depth, float *packed, PackSixRows packSix) {
  for (int64_t group = 0; group < rows; group += kGroupRows) {
    int64_t groupRows = std::min<int64_t>(kGroupRows, rows - group);
    float *target = packed + group * depth;
    const float *source[kGroupRows];
    for (int64_t i = 0; i < groupRows; ++i)
      source[i] = a.row(first + group + i) + k0;
    if (packSix && groupRows == kGroupRows) {
      packSix(source, depth, target);
      continue;
    }
    for (int64_t k = 0; k < depth; ++k)
      for (int64_t i = 0; i < groupRows; ++i)
        target[k * groupRows + i] = source[i][k];
  }
}

/// How A is cut: K in blocks of `depthBlock`, rows in blocks of
/// `rowBlock`; block (k0, r0) is packed (packRows) at k0 * m + r0 * its
/// depth.
struct Blocking {
  int64_t depthBlock, rowBlock;
  Blocking(int64_t m, int64_t depth)
      : depthBlock(m <= kSmallRows ? std::max<int64_t>(depth, 1) : kDepthBlock),
        rowBlock(m <= kSmallRows ? m : kRowBlock) {}
};

/// Blocks [first, end) of A (numbered K block by K block, row blocks
/// within) packed (Blocking), for every worker to read.
void packA(const RowsOfA &a, int64_t m, int64_t depth, const Blocking &blocking,
           float *packed, int64_t first, int64_t end, PackSixRows packSix) {
  int64_t rowBlocks = (m + blocking.rowBlock - 1) / blocking.rowBlock;
  for (int64_t block = first; block < end; ++block) {
    int64_t k0 = block / rowBlocks * blocking.depthBlock;
    int64_t r0 = block % rowBlocks * blocking.rowBlock;
    int64_t kLength = std::min(blocking.depthBlock, depth - k0);
    packRows(a, r0, k0, std::min(blocking.rowBlock, m - r0), kLength,
             packed + k0 * m + r0 * kLength, packSix);
  }
}

int64_t blocksOfA(int64_t m, int64_t depth, const Blocking &blocking) {
  return (depth + blocking.depthBlock - 1) / blocking.depthBlock *
         ((m + blocking.rowBlock - 1) / blocking.rowBlock);
}

/// One worker's share: panels [firstPanel, endPanel) of D for every row,
/// from A packed by packA.
void gemmPanels(const float *packedA, int64_t m, const PackedMatrix &b,
                const GemmEpilogue &epilogue, float *d, int64_t ldd,
                int64_t firstPanel, int64_t endPanel,
                const GemmKernels &kernels) {
  int64_t depth = b.depth(), n = b.columns();
  Blocking blocking(m, depth);
  float tile[kGroupRows * kPanelColumns];
  int64_t fullPanels = std::min(endPanel, n / kPanelColumns);
  // The epilogue of a group's columns right after their last depth block,
  // while they are in cache (a pass over all of D after the product read it
  // back from memory at hidden 1024): the same operations on the same sums.
  bool finishes = epilogue.alpha != 1.0f || epilogue.bias;
  auto finishGroup = [&](int64_t row, int rows, int64_t begin, int64_t end) {
    GemmEpilogue shifted = epilogue;
    if (shifted.bias)
      shifted.bias += row * shifted.biasStride;
    finishColumns(rows, false, shifted, d + row * ldd, ldd, begin, end);
  };
  for (int64_t k0 = 0; k0 < depth; k0 += blocking.depthBlock) {
    int64_t kLength = std::min(blocking.depthBlock, depth - k0);
    bool first = k0 == 0;
    bool last = finishes && k0 + kLength == depth;
    for (int64_t r0 = 0; r0 < m; r0 += blocking.rowBlock) {
      int64_t rLength = std::min(blocking.rowBlock, m - r0);
      const float *packed = packedA + k0 * m + r0 * kLength;
      // Strips of whole panels, as wide as the kernels take for a full
      // group; every group of the row block walks a strip while it is in
      // cache.
      int64_t p = firstPanel;
      int step = kernels.panelsPerCall(
          static_cast<int>(std::min<int64_t>(kGroupRows, rLength)));
      if (kernels.block && step > 1)
        for (; p + step <= fullPanels; p += step)
          for (int64_t g = 0; g < rLength; g += kGroupRows) {
            int rows =
                static_cast<int>(std::min<int64_t>(kGroupRows, rLength - g));
            kernels.block(rows, step, kLength, packed + g * kLength,
                          b.panel(p, k0), b.panelStride(),
                          d + (r0 + g) * ldd + p * kPanelColumns, ldd, first);
            if (last)
              finishGroup(r0 + g, rows, p * kPanelColumns,
                          (p + step) * kPanelColumns);
          }
      for (; p < endPanel; ++p) {
        const float *panel = b.panel(p, k0);
        int64_t column = p * kPanelColumns;
        int64_t width = std::min(kPanelColumns, n - column);
        for (int64_t g = 0; g < rLength; g += kGroupRows) {
          int rows =
              static_cast<int>(std::min<int64_t>(kGroupRows, rLength - g));
          float *c = d + (r0 + g) * ldd + column;
          if (width == kPanelColumns) {
            kernels.micro(rows, kLength, packed + g * kLength, panel, c, ldd,
                          first);
            if (last)
              finishGroup(r0 + g, rows, column, column + width);
            continue;
          }
          // The last panel: through a tile, so columns past n are not touched.
          for (int i = 0; i < rows && !first; ++i)
            std::memcpy(tile + i * kPanelColumns, c + i * ldd,
                        width * sizeof(float));
          kernels.micro(rows, kLength, packed + g * kLength, panel, tile,
                        kPanelColumns, first);
          for (int i = 0; i < rows; ++i)
            std::memcpy(c + i * ldd, tile + i * kPanelColumns,
                        width * sizeof(float));
          if (last)
            finishGroup(r0 + g, rows, column, column + width);
        }
      }
    }
  }
  if (depth == 0) // no product: zeros, then the epilogue
    finishColumns(m, true, epilogue, d, ldd, firstPanel * kPanelColumns,
                  std::min(n, endPanel * kPanelColumns));
}
} // namespace

void cellrun::cpu::detail::finishColumns(int64_t m, bool emptyProduct,
                                         const GemmEpilogue &epilogue, float *d,
                                         int64_t ldd, int64_t begin,
                                         int64_t end) {
  if (emptyProduct)
    for (int64_t i = 0; i < m; ++i)
      std::fill(d + i * ldd + begin, d + i * ldd + end, 0.0f);
  if (epilogue.alpha == 1.0f && !epilogue.bias)
    return;
  scaleRowsAddBias(m, d, ldd, begin, end, epilogue.alpha, epilogue.beta,
                   epilogue.bias, epilogue.biasStride);
}

static int onePanelPerCall(int) { return 1; }

GemmKernels cellrun::cpu::detail::gemmKernelsGeneric() {
  return {genericKernel, nullptr, onePanelPerCall};
}

GemmKernels cellrun::cpu::detail::gemmKernels(CpuIsa isa) {
  switch (isa) {
  case CpuIsa::Avx512:
    return gemmKernelsAvx512();
  case CpuIsa::Avx2:
    return gemmKernelsAvx2();
  case CpuIsa::Generic:
    break;
  }
  return gemmKernelsGeneric();
}

namespace {
void packedGemmOf(const RowsOfA &a, int64_t m, const PackedMatrix &b,
                  const GemmEpilogue &epilogue, float *d, int64_t ldd,
                  ThreadPool *pool, CpuIsa isa) {
  if (m <= 0 || b.columns() == 0)
    return;
  GemmKernels kernels = gemmKernels(isa);
  int64_t panels = b.panels(), depth = b.depth();
  static thread_local AlignedScratch<float> scratch;
  float *packedA = scratch.reserve(m * depth);
  Blocking blocking(m, depth);
  int64_t blocks = blocksOfA(m, depth, blocking);
  // A small product runs on the caller alone: handing it to the pool costs
  // more than it saves, and workers woken for it spin afterwards, taking
  // cores from the threads that serve requests (measured: bench/results).
  double flops = 2.0 * double(m) * double(b.columns()) * double(b.depth());
  if (!pool || pool->size() == 1 || panels == 1 ||
      flops < kMinParallelGemmFlops) {
    packA(a, m, depth, blocking, packedA, 0, blocks, kernels.packSix);
    gemmPanels(packedA, m, b, epilogue, d, ldd, 0, panels, kernels);
    return;
  }
  // The blocks of A (a few MB at hundreds of rows) are packed by the
  // workers too.
  pool->parallelFor(
      blocks,
      [&](unsigned, int64_t begin, int64_t end) {
        packA(a, m, depth, blocking, packedA, begin, end, kernels.packSix);
      },
      1);
  // Chunks of panels taken in turn: the cores of a machine (or of a
  // virtual one) do not always run at the same speed.
  pool->parallelFor(
      panels,
      [&](unsigned, int64_t begin, int64_t end) {
        gemmPanels(packedA, m, b, epilogue, d, ldd, begin, end, kernels);
      },
      kPanelsPerChunk);
}
} // namespace

void cellrun::cpu::packedGemm(const float *a, int64_t lda, int64_t m,
                              const PackedMatrix &b,
                              const GemmEpilogue &epilogue, float *d,
                              int64_t ldd, ThreadPool *pool, CpuIsa isa) {
  packedGemmOf({a, lda, nullptr}, m, b, epilogue, d, ldd, pool, isa);
}

void cellrun::cpu::packedGemmGathered(const float *const *rowsOfA, int64_t m,
                                      const PackedMatrix &b,
                                      const GemmEpilogue &epilogue, float *d,
                                      int64_t ldd, ThreadPool *pool,
                                      CpuIsa isa) {
  packedGemmOf({nullptr, 0, rowsOfA}, m, b, epilogue, d, ldd, pool, isa);
}
