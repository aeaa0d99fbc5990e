//===- GemmAmx.cpp - bf16 products on AMX tiles ---------------------------===//
//
// A is rounded to bf16 (as toBf16) and packed in tiles: row tile t (16
// rows, those past m zero) and k block kb (32 values, those past k zero) at
// (t * blocks + kb) * 512 values, 16 rows of 64 bytes, so a tile load reads
// 1 KB in a row (rows of A 2 KB apart fall in the same cache sets: a third
// of the speed). B's panels are tiles already: pairs 16kb..16kb+15 of a
// panel are 16 rows of 16 words, zero past k (PackedMatrixBf16), so any
// depth runs (the padding adds products of zeros). A call of the block
// kernel keeps a block of D of up to 2 x 2 tiles (32 x 32) in the tile
// registers over the whole depth, k blocks in order; the workers take pairs
// of panels, and each block goes through the epilogue as it leaves the
// tiles.
//
//===----------------------------------------------------------------------===//
#include "GemmAmx.h"

#include "PackedGemmBf16.h"
#include "ThreadPool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start some intrinsics from a self-initialised
// "undefined" vector and then warn about it (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

using namespace cellrun::cpu;

namespace {
constexpr int64_t kTileRows = 16;
constexpr int64_t kTileDepth = 32; // bf16 values of k in a row of an A tile
constexpr int64_t kTileValues = kTileRows * kTileDepth;
constexpr int64_t kBlockColumns = 2 * kPanelColumns; // a pair of panels
/// Pairs of panels a worker takes at a time.
constexpr int64_t kPairsPerChunk = 4;

#if defined(__x86_64__)
bool processorOffersAmx() {
  const char *setting = std::getenv("CELLRUN_CPU_AMX");
  if (setting && std::strcmp(setting, "off") == 0)
    return false;
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27)))
    return false; // no OSXSAVE: no XGETBV
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
    return false;
  bool amxBf16 = edx & (1u << 22), amxTile = edx & (1u << 24);
  // Its A is packed with AVX-512 F; CELLRUN_CPU_ISA=avx2 or generic turns
  // it off with the rest.
  if (!amxBf16 || !amxTile || detectCpuIsa() != CpuIsa::Avx512)
    return false;
  uint32_t low, high;
  asm volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  constexpr uint32_t kTileState = 3u << 17; // XTILECFG, XTILEDATA
  return (low & kTileState) == kTileState;
}

bool tileStateGranted() {
  // Linux hands the tile data out per process on request (5.16 and later).
  constexpr long kRequestPermission = 0x1023; // ARCH_REQ_XCOMP_PERM
  constexpr long kTileData = 18;              // XFEATURE_XTILEDATA
  return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
}

/// The tile registers' shapes: all eight 16 rows of 64 bytes.
struct TileConfig {
  uint8_t palette = 1;
  uint8_t startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t bytesPerRow[16] = {};
  uint8_t rows[16] = {};
};

/// Rows [0, m) of A (`depth` values each) as bf16 tiles of `blocks` k
/// blocks (file comment); the rows after m up to a whole tile, and the
/// values after depth, are zero.
__attribute__((target("avx512f"))) void packTiles(const float *a, int64_t lda,
                                                  int64_t m, int64_t depth,
                                                  int64_t blocks,
                                                  uint16_t *packed) {
  int64_t rows = (m + kTileRows - 1) / kTileRows * kTileRows;
  const __m512i half = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1),
                quiet = _mm512_set1_epi32(0x40);
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t *tileRow = packed + (r / kTileRows) * blocks * kTileValues +
                        (r % kTileRows) * kTileDepth;
    if (r >= m) {
      for (int64_t kb = 0; kb < blocks; ++kb)
        std::memset(tileRow + kb * kTileValues, 0, kTileDepth * 2);
      continue;
    }
    const float *row = a + r * lda;
    for (int64_t k = 0; k < blocks * kTileDepth; k += 16) {
      // toBf16 sixteen at a time: nearest, ties to even; NaN stays quiet.
      int64_t valid = std::max<int64_t>(0, std::min<int64_t>(16, depth - k));
      __m512 x = _mm512_maskz_loadu_ps(
          static_cast<__mmask16>((1u << valid) - 1), row + k);
      __m512i bits = _mm512_castps_si512(x);
      __m512i rounded = _mm512_srli_epi32(
          _mm512_add_epi32(
              bits,
              _mm512_add_epi32(
                  half, _mm512_and_si512(_mm512_srli_epi32(bits, 16), one))),
          16);
      __m512i nan = _mm512_or_si512(_mm512_srli_epi32(bits, 16), quiet);
      rounded = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q),
                                        rounded, nan);
      _mm256_storeu_si256(
          reinterpret_cast<__m256i *>(tileRow + (k / kTileDepth) * kTileValues +
                                      k % kTileDepth),
          _mm512_cvtepi32_epi16(rounded));
    }
  }
}

/// A block of D of RowTiles x ColumnTiles tiles into `out` (32 x 32 floats,
/// tile (i, j) at row 16i, column 16j) over `blocks` k blocks: A's row
/// tiles from `a` (the next one `blocks` tiles on), B's panels `first` and
/// `second` (tiles of 16 pairs, 64 bytes a row).
template <int RowTiles, int ColumnTiles>
__attribute__((target("avx512f,amx-tile,amx-bf16"))) void
block(const uint16_t *a, int64_t blocks, const uint32_t *first,
      const uint32_t *second, float *out) {
  constexpr int64_t kPanelTileWords = kTileRows * kPanelColumns;
  constexpr int kStride = kBlockColumns * sizeof(float);
  _tile_zero(0);
  if constexpr (ColumnTiles > 1)
    _tile_zero(1);
  if constexpr (RowTiles > 1)
    _tile_zero(2);
  if constexpr (RowTiles > 1 && ColumnTiles > 1)
    _tile_zero(3);
  for (int64_t kb = 0; kb < blocks; ++kb) {
    _tile_loadd(4, a + kb * kTileValues, 64);
    if constexpr (RowTiles > 1)
      _tile_loadd(5, a + (blocks + kb) * kTileValues, 64);
    _tile_loadd(6, first + kb * kPanelTileWords, 64);
    if constexpr (ColumnTiles > 1)
      _tile_loadd(7, second + kb * kPanelTileWords, 64);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (ColumnTiles > 1)
      _tile_dpbf16ps(1, 4, 7);
    if constexpr (RowTiles > 1)
      _tile_dpbf16ps(2, 5, 6);
    if constexpr (RowTiles > 1 && ColumnTiles > 1)
      _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, out, kStride);
  if constexpr (ColumnTiles > 1)
    _tile_stored(1, out + kPanelColumns, kStride);
  if constexpr (RowTiles > 1)
    _tile_stored(2, out + kTileRows * kBlockColumns, kStride);
  if constexpr (RowTiles > 1 && ColumnTiles > 1)
    _tile_stored(3, out + kTileRows * kBlockColumns + kPanelColumns, kStride);
}

/// Pairs of panels [begin, end) of D for all of A's rows (packed tiles).
__attribute__((target("avx512f,amx-tile,amx-bf16"))) void
panelPairs(const uint16_t *packedA, int64_t m, const PackedMatrixBf16 &b,
           const GemmEpilogue &epilogue, float *d, int64_t ldd, int64_t begin,
           int64_t end) {
  // GCC's tile loads are asm that does not say it reads memory: the packed
  // A (and B) must be in memory before any of them.
  asm volatile("" ::: "memory");
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = kTileRows;
    config.bytesPerRow[t] = 64;
  }
  _tile_loadconfig(&config);
  int64_t blocks = b.paddedPairs() / kTileRows, n = b.columns();
  int64_t rowTiles = (m + kTileRows - 1) / kTileRows;
  alignas(64) float out[2 * kTileRows * kBlockColumns];
  for (int64_t pair = begin; pair < end; ++pair) {
    int64_t panel = 2 * pair;
    bool two = panel + 1 < b.panels();
    const uint32_t *first = b.panel(panel);
    const uint32_t *second = two ? b.panel(panel + 1) : first;
    int64_t column = panel * kPanelColumns;
    int64_t width = std::min(n - column, two ? kBlockColumns : kPanelColumns);
    for (int64_t t = 0; t < rowTiles; t += 2) {
      const uint16_t *a = packedA + t * blocks * kTileValues;
      bool twoRows = t + 1 < rowTiles;
      if (twoRows && two)
        block<2, 2>(a, blocks, first, second, out);
      else if (twoRows)
        block<2, 1>(a, blocks, first, second, out);
      else if (two)
        block<1, 2>(a, blocks, first, second, out);
      else
        block<1, 1>(a, blocks, first, second, out);
      int64_t row = t * kTileRows;
      int64_t rows = std::min(m - row, (twoRows ? 2 : 1) * kTileRows);
      // The epilogue on the block while it is in cache (one pass over D, not
      // two): its bias from this block's first row and column.
      GemmEpilogue shifted = epilogue;
      if (shifted.bias)
        shifted.bias += row * shifted.biasStride + column;
      detail::finishColumns(rows, false, shifted, out, kBlockColumns, 0, width);
      for (int64_t i = 0; i < rows; ++i)
        std::memcpy(d + (row + i) * ldd + column, out + i * kBlockColumns,
                    width * sizeof(float));
    }
  }
  _tile_release();
}
#endif
} // namespace

bool cellrun::cpu::cpuOffersAmxBf16() {
#if defined(__x86_64__)
  static const bool offers = processorOffersAmx();
  return offers;
#else
  return false;
#endif
}

bool cellrun::cpu::cpuHasAmxBf16() {
#if defined(__x86_64__)
  static const bool has = cpuOffersAmxBf16() && tileStateGranted();
  return has;
#else
  return false;
#endif
}

bool cellrun::cpu::amxTakes(const PackedMatrixBf16 &b) {
  return b.depth() > 0 && b.paddedPairs() % kTileRows == 0 && cpuHasAmxBf16();
}

void cellrun::cpu::amxGemmBf16(const float *a, int64_t lda, int64_t m,
                               const PackedMatrixBf16 &b,
                               const GemmEpilogue &epilogue, float *d,
                               int64_t ldd, ThreadPool *pool) {
#if defined(__x86_64__)
  if (m <= 0 || b.columns() == 0)
    return;
  int64_t depth = b.depth(), n = b.columns();
  int64_t rows = (m + kTileRows - 1) / kTileRows * kTileRows;
  static thread_local detail::AlignedScratch<uint16_t> scratch;
  int64_t blocks = b.paddedPairs() / kTileRows;
  uint16_t *packedA = scratch.reserve(rows * blocks * kTileDepth);
  packTiles(a, lda, m, depth, blocks, packedA);
  int64_t pairs = (b.panels() + 1) / 2;
  auto share = [&](int64_t begin, int64_t end) {
    panelPairs(packedA, m, b, epilogue, d, ldd, begin, end);
  };
  double flops = 2.0 * double(m) * double(n) * double(depth);
  // AMX does several times the multiply-adds of AVX-512 a second: a product
  // is worth splitting from that many more of them.
  if (!pool || pool->size() == 1 || pairs == 1 ||
      flops < 4 * kMinParallelGemmFlops) {
    share(0, pairs);
    return;
  }
  pool->parallelFor(
      pairs, [&](unsigned, int64_t begin, int64_t end) { share(begin, end); },
      kPairsPerChunk);
#else
  (void)a, (void)lda, (void)m, (void)b, (void)epilogue, (void)d, (void)ldd,
      (void)pool;
#endif
}
