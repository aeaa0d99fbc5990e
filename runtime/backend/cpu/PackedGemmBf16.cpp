//===- PackedGemmBf16.cpp - The CPU GEMM with bf16 products --------------===//
//
// Products of a few rows (kBf16KernelRows) on the bf16 kernels: A packed
// whole in groups of 6 rows, each strip of panels streamed once over the
// whole depth, chunks of panels taken by the pool's workers. More rows run
// on the fp32 kernel over B widened (PackedGemmBf16.h).
//
//===----------------------------------------------------------------------===//
#include "PackedGemmBf16.h"

#include "GemmAmx.h"

#include "ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace cellrun::cpu;
using namespace cellrun::cpu::detail;

static constexpr size_t kAlignment = 64;
static constexpr int kGroupRows = 6;
static constexpr int64_t kPanelsPerChunk = 16;

uint16_t cellrun::cpu::toBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  if (std::isnan(x))
    return static_cast<uint16_t>((bits >> 16) | 0x40); // a quiet NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

float cellrun::cpu::fromBf16(uint16_t x) {
  uint32_t bits = static_cast<uint32_t>(x) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

bool cellrun::cpu::cpuHasAvx512Bf16() {
#if defined(__x86_64__)
  return cpuHasAvx512() && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

static uint32_t *allocateWords(int64_t count) {
  size_t bytes =
      static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(uint32_t);
  bytes = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return static_cast<uint32_t *>(std::aligned_alloc(kAlignment, bytes));
}

void PackedMatrixBf16::Free::operator()(uint32_t *p) const { std::free(p); }

PackedMatrixBf16::PackedMatrixBf16(const float *source, int64_t k, int64_t n,
                                   bool transposed)
    : k_(k), n_(n), panels_((n + kPanelColumns - 1) / kPanelColumns),
      pairs_((k + 1) / 2),
      paddedPairs_(cpuHasAmxBf16() ? (pairs_ + 15) / 16 * 16 : pairs_),
      data_(allocateWords(panels_ * paddedPairs_ * kPanelColumns)) {
  auto at = [&](int64_t row, int64_t column) -> uint32_t {
    if (row >= k || column >= n)
      return 0;
    return toBf16(transposed ? source[column * k + row]
                             : source[row * n + column]);
  };
  for (int64_t p = 0; p < panels_; ++p)
    for (int64_t q = 0; q < paddedPairs_; ++q) { // zeros past k
      uint32_t *target = data_.get() + (p * paddedPairs_ + q) * kPanelColumns;
      for (int64_t c = 0; c < kPanelColumns; ++c) {
        int64_t column = p * kPanelColumns + c;
        target[c] = at(2 * q, column) | at(2 * q + 1, column) << 16;
      }
    }
  if (!cpuHasAmxBf16()) // AMX takes every product: no fp32 copy needed
    widened_ = widen();
}

std::unique_ptr<PackedMatrix> PackedMatrixBf16::widen() const {
  // [n, 2 * pairs] row-major: column j of row 2q + s is bf16(b[2q + 1 - s][j]).
  std::vector<float> swapped(static_cast<size_t>(n_ * 2 * pairs_));
  for (int64_t j = 0; j < n_; ++j) {
    int64_t p = j / kPanelColumns, c = j % kPanelColumns;
    for (int64_t q = 0; q < pairs_; ++q) {
      uint32_t word = panel(p, q)[c];
      swapped[j * 2 * pairs_ + 2 * q] = fromBf16(uint16_t(word >> 16));
      swapped[j * 2 * pairs_ + 2 * q + 1] = fromBf16(uint16_t(word));
    }
  }
  return std::make_unique<PackedMatrix>(swapped.data(), 2 * pairs_, n_, true);
}

const PackedMatrix &PackedMatrixBf16::widened() const {
  std::call_once(widenOnce_, [this] {
    if (!widened_)
      widened_ = widen();
  });
  return *widened_;
}

int cellrun::cpu::detail::bf16PanelsPerCall(int rows) {
  return rows <= 2 ? 8 : rows == 3 ? 6 : 4;
}

namespace {
/// The portable kernel: per element and pair, the odd product added, then
/// the even one, each rounded once (what VDPBF16PS computes).
void portableKernel(int rows, int panels, int64_t pairs, const uint32_t *a,
                    const uint32_t *b, int64_t panelStride, float *c,
                    int64_t ldc, bool first) {
  for (int q = 0; q < panels; ++q)
    for (int i = 0; i < rows; ++i) {
      float *out = c + i * ldc + q * kPanelColumns;
      float acc[kPanelColumns];
      for (int j = 0; j < kPanelColumns; ++j)
        acc[j] = first ? 0.0f : out[j];
      const uint32_t *panel = b + q * panelStride;
      for (int64_t p = 0; p < pairs; ++p) {
        uint32_t pair = a[p * rows + i];
        float even = fromBf16(static_cast<uint16_t>(pair)),
              odd = fromBf16(static_cast<uint16_t>(pair >> 16));
        for (int j = 0; j < kPanelColumns; ++j) {
          uint32_t weights = panel[p * kPanelColumns + j];
          acc[j] += odd * fromBf16(static_cast<uint16_t>(weights >> 16));
          acc[j] += even * fromBf16(static_cast<uint16_t>(weights));
        }
      }
      std::memcpy(out, acc, sizeof(acc));
    }
}

/// A's m rows (at most kBf16KernelRows) as bf16 pairs of k, in groups of 6
/// rows: group g holds pairs x its rows words, pair-major.
void packRows(const float *a, int64_t lda, int64_t depth, int64_t m,
              int64_t pairs, uint32_t *packed) {
  for (int64_t group = 0; group < m; group += kGroupRows) {
    int64_t groupRows = std::min<int64_t>(kGroupRows, m - group);
    uint32_t *target = packed + group * pairs;
    for (int64_t q = 0; q < pairs; ++q)
      for (int64_t i = 0; i < groupRows; ++i) {
        const float *row = a + (group + i) * lda;
        uint32_t even = toBf16(row[2 * q]);
        uint32_t odd = 2 * q + 1 < depth ? toBf16(row[2 * q + 1]) : 0;
        target[q * groupRows + i] = even | odd << 16;
      }
  }
}

/// Panels [firstPanel, endPanel) of D for A's m rows: a few rows, so every
/// panel is streamed once over the whole depth.
void gemmPanels(const uint32_t *packedA, int64_t m, const PackedMatrixBf16 &b,
                float *d, int64_t ldd, int64_t firstPanel, int64_t endPanel,
                Bf16Kernel kernel) {
  int64_t pairs = b.pairs(), n = b.columns();
  int64_t fullPanels = std::min(endPanel, n / kPanelColumns);
  int step =
      bf16PanelsPerCall(static_cast<int>(std::min<int64_t>(kGroupRows, m)));
  auto eachGroup = [&](auto &&run) {
    for (int64_t g = 0; g < m; g += kGroupRows)
      run(static_cast<int>(std::min<int64_t>(kGroupRows, m - g)),
          packedA + g * pairs, d + g * ldd);
  };
  int64_t p = firstPanel;
  for (; p + step <= fullPanels; p += step)
    eachGroup([&](int rows, const uint32_t *a, float *c) {
      kernel(rows, step, pairs, a, b.panel(p), b.panelStride(),
             c + p * kPanelColumns, ldd, true);
    });
  for (; p < endPanel; ++p) {
    int64_t column = p * kPanelColumns;
    int64_t width = std::min(kPanelColumns, n - column);
    eachGroup([&](int rows, const uint32_t *a, float *c) {
      if (width == kPanelColumns)
        return kernel(rows, 1, pairs, a, b.panel(p), b.panelStride(),
                      c + column, ldd, true);
      // The last panel: through a tile, so columns past n are not touched.
      float tile[kGroupRows * kPanelColumns];
      kernel(rows, 1, pairs, a, b.panel(p), b.panelStride(), tile,
             kPanelColumns, true);
      for (int i = 0; i < rows; ++i)
        std::memcpy(c + i * ldd + column, tile + i * kPanelColumns,
                    width * sizeof(float));
    });
  }
}

} // namespace

/// AVX512_BF16 where the processor has it and CELLRUN_CPU_ISA leaves the
/// AVX-512 kernels on (as AMX, cpuOffersAmxBf16).
static bool avx512Bf16InUse() {
  return cpuHasAvx512Bf16() && detectCpuIsa() == CpuIsa::Avx512;
}

Bf16Kernels cellrun::cpu::bestBf16Kernels(const PackedMatrixBf16 &b) {
  if (amxTakes(b))
    return Bf16Kernels::Amx;
  return avx512Bf16InUse() ? Bf16Kernels::Avx512Bf16 : Bf16Kernels::Portable;
}

const char *cellrun::cpu::bf16KernelsName() {
  return cpuOffersAmxBf16()  ? "amx"
         : avx512Bf16InUse() ? "avx512bf16"
                             : "portable";
}

void cellrun::cpu::packedGemmBf16(const float *a, int64_t lda, int64_t m,
                                  const PackedMatrixBf16 &b,
                                  const GemmEpilogue &epilogue, float *d,
                                  int64_t ldd, ThreadPool *pool) {
  packedGemmBf16(a, lda, m, b, epilogue, d, ldd, pool, bestBf16Kernels(b));
}

void cellrun::cpu::packedGemmBf16(const float *a, int64_t lda, int64_t m,
                                  const PackedMatrixBf16 &b,
                                  const GemmEpilogue &epilogue, float *d,
                                  int64_t ldd, ThreadPool *pool,
                                  Bf16Kernels kernels) {
  if (m <= 0 || b.columns() == 0)
    return;
  if (kernels == Bf16Kernels::Amx && amxTakes(b))
    return amxGemmBf16(a, lda, m, b, epilogue, d, ldd, pool);
  if (m > kBf16KernelRows) {
    // A rounded to bf16, each pair of k swapped, times B widened: the fp32
    // kernel's fused multiply-adds of the same products in the same order.
    static thread_local std::vector<float> swappedA;
    int64_t width = 2 * b.pairs(), depth = b.depth();
    swappedA.resize(static_cast<size_t>(m * width));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t k = 0; k < width; ++k) {
        int64_t from = k ^ 1;
        swappedA[i * width + k] =
            from < depth ? fromBf16(toBf16(a[i * lda + from])) : 0.0f;
      }
    packedGemm(swappedA.data(), width, m, b.widened(), epilogue, d, ldd, pool);
    return;
  }
  Bf16Kernel kernel = kernels != Bf16Kernels::Portable && cpuHasAvx512Bf16()
                          ? bf16KernelAvx512()
                          : nullptr;
  if (!kernel)
    kernel = portableKernel;
  int64_t pairs = b.pairs(), depth = b.depth(), n = b.columns();
  int64_t panels = b.panels();
  static thread_local AlignedScratch<uint32_t> scratch;
  uint32_t *packedA = scratch.reserve(m * pairs);
  packRows(a, lda, depth, m, pairs, packedA);
  auto share = [&](int64_t begin, int64_t end) {
    gemmPanels(packedA, m, b, d, ldd, begin, end, kernel);
    finishColumns(m, pairs == 0, epilogue, d, ldd, begin * kPanelColumns,
                  std::min(n, end * kPanelColumns));
  };
  double flops = 2.0 * double(m) * double(n) * double(depth);
  if (!pool || pool->size() == 1 || panels == 1 ||
      flops < kMinParallelGemmFlops) {
    share(0, panels);
    return;
  }
  pool->parallelFor(
      panels, [&](unsigned, int64_t begin, int64_t end) { share(begin, end); },
      kPanelsPerChunk);
}
