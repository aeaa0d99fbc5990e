//===- LstmGates.cpp - An LSTM's element-wise step in one pass ------------===//
//
// One loop body per instruction set (a macro over the vector type and its
// intrinsics): a row's gates go through the vector sigmoid and tanh of
// VectorMathInline.h `width` floats at a time, the last partial vector
// masked, so each element's bits are those of the op-by-op interpreter's.
// Consecutive rows do not depend on each other, so the processor overlaps
// their long sigmoid and tanh chains as it does over one long array; on
// AVX-512, rows of whole vectors go two at a time with their gates side by
// side in program order, which it overlaps better (the hidden-16 LSTM's
// 512-row task 23.2 -> 21.4 us in task_bench; no change measured in a
// whole `cellrun run`, where the rows' memory sets the pace). On AVX2, a
// row's whole vectors go two at a time the same way (where it has no
// partial vector or more than two whole ones), and those whose inputs hold
// no NaN (one check) go through the gates' activations without their
// per-lane NaN blends: the same bits, the gates
// of a 512-row block 11-13% faster at hidden 16 on a Zen 3 EPYC, 7-9% at
// hidden 64, 2-4% at hidden 256.
//
//===----------------------------------------------------------------------===//
#include "LstmGates.h"
#include "VectorMath.h"
#include "VectorMathInline.h"

using namespace cellrun::cpu;
using namespace cellrun::cpu::detail;
using namespace cellrun::cpu::detail::vectors;

void cellrun::cpu::detail::lstmGateRowsGeneric(const LstmGateRows &block) {
  const int64_t hidden = block.hidden;
  for (int64_t r = 0; r < block.rows; ++r) {
    const float *a = block.a[r];
    const float *b = block.b ? block.b[r] : nullptr;
    const float *c = block.c[r];
    float *cOut = block.cOutRows ? block.cOutRows[r] : block.cOut + r * hidden;
    float *hOut = block.hOutRows ? block.hOutRows[r] : block.hOut + r * hidden;
    float *cCopy = block.cCopyRows ? block.cCopyRows[r] : nullptr;
    float *hCopy = block.hCopyRows ? block.hCopyRows[r] : nullptr;
    auto gate = [&](int g, int64_t k) {
      int64_t at = block.offsets[g] + k;
      return b ? a[at] + b[at] : a[at];
    };
    for (int64_t k = 0; k < hidden; ++k) {
      float input = sigmoidScalar(gate(0, k));
      float forget = sigmoidScalar(gate(1, k));
      float candidate = tanhScalar(gate(2, k));
      float output = sigmoidScalar(gate(3, k));
      float kept = forget * c[k];
      float added = input * candidate;
      float cell = kept + added;
      float h = output * tanhScalar(cell);
      cOut[k] = cell;
      hOut[k] = h;
      if (cCopy)
        cCopy[k] = cell;
      if (hCopy)
        hCopy[k] = h;
    }
  }
}

#if defined(__x86_64__)
namespace {
/// Rows of at most this many floats (four lines) have their copies
/// streamed: a longer row's lines are consecutive, and the processor's own
/// prefetchers read them ahead of the stores.
constexpr int64_t kMostStreamedFloats = 64;

/// Whether a row's copies go out by non-temporal stores: rows of whole
/// lines, each copy (where there is one) starting a line.
inline bool streamsCopies(bool wholeLines, const float *cCopy,
                          const float *hCopy) {
  return wholeLines && (cCopy || hCopy) &&
         !((reinterpret_cast<uintptr_t>(cCopy) |
            reinterpret_cast<uintptr_t>(hCopy)) &
           63);
}

/// Where a block's row reads and writes (LstmGateRows).
struct RowPlaces {
  const float *a, *b, *c;
  float *cOut, *hOut, *cCopy, *hCopy;
};

inline RowPlaces placesOf(const LstmGateRows &block, int64_t r) {
  return {block.a[r],
          block.b ? block.b[r] : nullptr,
          block.c[r],
          block.cOutRows ? block.cOutRows[r] : block.cOut + r * block.hidden,
          block.hOutRows ? block.hOutRows[r] : block.hOut + r * block.hidden,
          block.cCopyRows ? block.cCopyRows[r] : nullptr,
          block.hCopyRows ? block.hCopyRows[r] : nullptr};
}

/// Asks for what row `r + kLstmRowsAhead` reads (its gates' lines and cell
/// state) and for the lines of row `r + kCopyRowsAhead`'s results, cold
/// (unless they go out by non-temporal stores: `streams`).
inline void askAhead(const LstmGateRows &block, int64_t r, int64_t prefetchRows,
                     bool wholeLines, bool streams) {
  if (r + kLstmRowsAhead < prefetchRows) {
    const float *na = block.a[r + kLstmRowsAhead];
    const float *nb = block.b ? block.b[r + kLstmRowsAhead] : nullptr;
    for (int g = 0; g < 4; ++g) {
      _mm_prefetch(reinterpret_cast<const char *>(na + block.offsets[g]),
                   _MM_HINT_T0);
      if (nb)
        _mm_prefetch(reinterpret_cast<const char *>(nb + block.offsets[g]),
                     _MM_HINT_T0);
    }
    _mm_prefetch(reinterpret_cast<const char *>(block.c[r + kLstmRowsAhead]),
                 _MM_HINT_T0);
  }
  if (r + kCopyRowsAhead < prefetchRows) {
    float *cLater =
        block.cCopyRows ? block.cCopyRows[r + kCopyRowsAhead] : nullptr;
    float *hLater =
        block.hCopyRows ? block.hCopyRows[r + kCopyRowsAhead] : nullptr;
    if (!(streams && streamsCopies(wholeLines, cLater, hLater))) {
      if (hLater)
        _mm_prefetch(reinterpret_cast<const char *>(hLater), _MM_HINT_T0);
      if (cLater)
        _mm_prefetch(reinterpret_cast<const char *>(cLater), _MM_HINT_T0);
    }
  }
}

/// A chunk's loads on AVX2: the four gates' pre-activations (summed where
/// there is a b) and the cell state.
struct GateInputsAvx2 {
  __m256 input, forget, candidate, output, cell;
};

__attribute__((target("avx2,fma"))) inline __m256
gateInputAvx2(const RowPlaces &row, int64_t at) {
  __m256 x = _mm256_loadu_ps(row.a + at);
  return row.b ? _mm256_add_ps(x, _mm256_loadu_ps(row.b + at)) : x;
}

/// Whether no lane of x or y is NaN.
__attribute__((target("avx2,fma"))) inline bool noNanIn(__m256 x, __m256 y) {
  __m256 nan = _mm256_cmp_ps(x, y, _CMP_UNORD_Q);
  return _mm256_testz_ps(nan, nan);
}

/// Loads the chunk at k and says whether none of its lanes is NaN. Then the
/// four gates' keepNan changes no lane (sigmoid and tanh of a number are
/// numbers), so sigmoidOfFinite and tanhOfFinite give the loop's bits with
/// a check a chunk instead of a blend an activation. c' = f c + i g is a
/// number too while f > 0 (an infinite c gives an infinite c'), but with
/// subnormal results flushed to zero (a caller's MXCSR) f can be 0 and
/// 0 * inf NaN: c' is checked too before tanh(c') goes without its blend.
__attribute__((target("avx2,fma"))) inline bool
loadFiniteGatesAvx2(const RowPlaces &row, const int64_t *offsets, int64_t k,
                    GateInputsAvx2 &in) {
  in.input = gateInputAvx2(row, offsets[0] + k);
  in.forget = gateInputAvx2(row, offsets[1] + k);
  in.candidate = gateInputAvx2(row, offsets[2] + k);
  in.output = gateInputAvx2(row, offsets[3] + k);
  in.cell = _mm256_loadu_ps(row.c + k);
  // One test of the three compares' lanes together.
  __m256 nan =
      _mm256_or_ps(_mm256_cmp_ps(in.input, in.forget, _CMP_UNORD_Q),
                   _mm256_cmp_ps(in.candidate, in.output, _CMP_UNORD_Q));
  nan = _mm256_or_ps(nan, _mm256_cmp_ps(in.cell, in.cell, _CMP_UNORD_Q));
  return _mm256_testz_ps(nan, nan);
}

/// c' and h' at k, stored as the loop stores them.
__attribute__((target("avx2,fma"))) inline void
storeChunkAvx2(const RowPlaces &row, int64_t k, __m256 cell, __m256 h,
               bool streamCopies) {
  _mm256_storeu_ps(row.cOut + k, cell);
  _mm256_storeu_ps(row.hOut + k, h);
  if (streamCopies) {
    if (row.cCopy)
      _mm256_stream_ps(row.cCopy + k, cell);
    if (row.hCopy)
      _mm256_stream_ps(row.hCopy + k, h);
    return;
  }
  if (row.cCopy)
    _mm256_storeu_ps(row.cCopy + k, cell);
  if (row.hCopy)
    _mm256_storeu_ps(row.hCopy + k, h);
}

/// One whole vector of a row without NaNs (loadFiniteGatesAvx2); false,
/// with nothing written, where there is a NaN.
__attribute__((target("avx2,fma"))) inline bool
finiteChunkAvx2(const RowPlaces &row, const int64_t *offsets, int64_t k,
                bool streamCopies) {
  GateInputsAvx2 in;
  if (!loadFiniteGatesAvx2(row, offsets, k, in))
    return false;
  __m256 cell = _mm256_add_ps(
      _mm256_mul_ps(sigmoidOfFinite(in.forget), in.cell),
      _mm256_mul_ps(sigmoidOfFinite(in.input), tanhOfFinite(in.candidate)));
  if (!noNanIn(cell, cell))
    return false;
  __m256 h = _mm256_mul_ps(sigmoidOfFinite(in.output), tanhOfFinite(cell));
  storeChunkAvx2(row, k, cell, h, streamCopies);
  return true;
}

/// Two whole vectors of a row, at k and k + 8, without NaNs, side by side
/// gate by gate: two independent chains in program order, which the
/// processor overlaps better than one vector after the other (alone, with
/// the NaN blends kept, the gates of a 512-row block of hidden 16 10% faster
/// on a Zen 3 EPYC). False, with nothing written, where there is a NaN.
__attribute__((target("avx2,fma"))) inline bool
finiteChunkPairAvx2(const RowPlaces &row, const int64_t *offsets, int64_t k,
                    bool streamCopies) {
  GateInputsAvx2 low, high;
  if (!(loadFiniteGatesAvx2(row, offsets, k, low) &
        loadFiniteGatesAvx2(row, offsets, k + 8, high)))
    return false;
  __m256 input0 = sigmoidOfFinite(low.input);
  __m256 input1 = sigmoidOfFinite(high.input);
  __m256 forget0 = sigmoidOfFinite(low.forget);
  __m256 forget1 = sigmoidOfFinite(high.forget);
  __m256 candidate0 = tanhOfFinite(low.candidate);
  __m256 candidate1 = tanhOfFinite(high.candidate);
  __m256 output0 = sigmoidOfFinite(low.output);
  __m256 output1 = sigmoidOfFinite(high.output);
  __m256 cell0 = _mm256_add_ps(_mm256_mul_ps(forget0, low.cell),
                               _mm256_mul_ps(input0, candidate0));
  __m256 cell1 = _mm256_add_ps(_mm256_mul_ps(forget1, high.cell),
                               _mm256_mul_ps(input1, candidate1));
  if (!noNanIn(cell0, cell1))
    return false;
  __m256 h0 = _mm256_mul_ps(output0, tanhOfFinite(cell0));
  __m256 h1 = _mm256_mul_ps(output1, tanhOfFinite(cell1));
  storeChunkAvx2(row, k, cell0, h0, streamCopies);
  storeChunkAvx2(row, k + 8, cell1, h1, streamCopies);
  return true;
}

/// The AVX-512 loop has no such ways (not measured there).
inline bool noFiniteChunk(const RowPlaces &, const int64_t *, int64_t, bool) {
  return false;
}
inline bool noFiniteChunkPair(const RowPlaces &, const int64_t *, int64_t,
                              bool) {
  return false;
}
} // namespace

// The body for `width`-lane vectors (no lambdas: they would not inherit the
// target attribute). A row's chunk of `lanes` floats at k, all `width` of
// them or the row's last partial vector. `streams`: whether result rows of
// whole lines go out by non-temporal stores at all. They do on AVX2 (a Zen 3
// EPYC: about 30 ns a row-step faster than a prefetch and a store through
// the caches); on AVX-512 (a Xeon) they measured 5-8 ns slower, so there the
// lines are prefetched and stored like any others
// (bench/results/2026-12-02-cpu-xeon-host-path).
#define CELL_LSTM_GATES(name, isa, width, vector, load, store, loadTail,       \
                        storeTail, add, mul, stream, streams, finiteChunk,     \
                        finiteChunkPair)                                       \
  namespace {                                                                  \
  __attribute__((target(isa))) inline vector name##In(const float *from,       \
                                                      int64_t lanes) {         \
    return lanes == width ? load(from) : loadTail(from, lanes);                \
  }                                                                            \
  __attribute__((target(isa))) inline vector                                   \
      name##Gate(const float *a, const float *b, int64_t at, int64_t lanes) {  \
    return b ? add(name##In(a + at, lanes), name##In(b + at, lanes))           \
             : name##In(a + at, lanes);                                        \
  }                                                                            \
  __attribute__((target(isa))) inline void                                     \
      name##Chunk(const float *a, const float *b, const float *c, float *cOut, \
                  float *hOut, float *cCopy, float *hCopy, bool streamCopies,  \
                  const int64_t *offsets, int64_t k, int64_t lanes) {          \
    vector input = sigmoidVector(name##Gate(a, b, offsets[0] + k, lanes));     \
    vector forget = sigmoidVector(name##Gate(a, b, offsets[1] + k, lanes));    \
    vector candidate = tanhVector(name##Gate(a, b, offsets[2] + k, lanes));    \
    vector output = sigmoidVector(name##Gate(a, b, offsets[3] + k, lanes));    \
    vector cell =                                                              \
        add(mul(forget, name##In(c + k, lanes)), mul(input, candidate));       \
    vector h = mul(output, tanhVector(cell));                                  \
    if (lanes == width) {                                                      \
      store(cOut + k, cell);                                                   \
      store(hOut + k, h);                                                      \
      if (streamCopies) {                                                      \
        if (cCopy)                                                             \
          stream(cCopy + k, cell);                                             \
        if (hCopy)                                                             \
          stream(hCopy + k, h);                                                \
      } else {                                                                 \
        if (cCopy)                                                             \
          store(cCopy + k, cell);                                              \
        if (hCopy)                                                             \
          store(hCopy + k, h);                                                 \
      }                                                                        \
    } else {                                                                   \
      storeTail(cOut + k, lanes, cell);                                        \
      storeTail(hOut + k, lanes, h);                                           \
      if (cCopy)                                                               \
        storeTail(cCopy + k, lanes, cell);                                     \
      if (hCopy)                                                               \
        storeTail(hCopy + k, lanes, h);                                        \
    }                                                                          \
  }                                                                            \
  /* Gate `at` of two rows through sigmoid (or tanh), the rows side by         \
     side: two independent chains for the processor to overlap. */             \
  __attribute__((target(isa))) inline void                                     \
      name##TwoRows(const RowPlaces &one, const RowPlaces &two, int64_t at,    \
                    bool squash, vector &first, vector &second) {              \
    vector x = name##Gate(one.a, one.b, at, width);                            \
    vector y = name##Gate(two.a, two.b, at, width);                            \
    first = squash ? tanhVector(x) : sigmoidVector(x);                         \
    second = squash ? tanhVector(y) : sigmoidVector(y);                        \
  }                                                                            \
  /* Two rows' chunks of whole vectors, each gate of both rows before the      \
     next, in program order. */                                                \
  __attribute__((target(isa))) inline void name##Pair(const RowPlaces &one,    \
                                                      const RowPlaces &two,    \
                                                      const int64_t *offsets,  \
                                                      int64_t k) {             \
    vector input0, input1, forget0, forget1, candidate0, candidate1, output0,  \
        output1;                                                               \
    name##TwoRows(one, two, offsets[0] + k, false, input0, input1);            \
    name##TwoRows(one, two, offsets[1] + k, false, forget0, forget1);          \
    name##TwoRows(one, two, offsets[2] + k, true, candidate0, candidate1);     \
    name##TwoRows(one, two, offsets[3] + k, false, output0, output1);          \
    vector cell0 =                                                             \
        add(mul(forget0, load(one.c + k)), mul(input0, candidate0));           \
    vector cell1 =                                                             \
        add(mul(forget1, load(two.c + k)), mul(input1, candidate1));           \
    vector h0 = mul(output0, tanhVector(cell0));                               \
    vector h1 = mul(output1, tanhVector(cell1));                               \
    store(one.cOut + k, cell0);                                                \
    store(one.hOut + k, h0);                                                   \
    store(two.cOut + k, cell1);                                                \
    store(two.hOut + k, h1);                                                   \
    if (one.cCopy)                                                             \
      store(one.cCopy + k, cell0);                                             \
    if (one.hCopy)                                                             \
      store(one.hCopy + k, h0);                                                \
    if (two.cCopy)                                                             \
      store(two.cCopy + k, cell1);                                             \
    if (two.hCopy)                                                             \
      store(two.hCopy + k, h1);                                                \
  }                                                                            \
  }                                                                            \
  __attribute__((target(isa))) void cellrun::cpu::detail::name(                \
      const LstmGateRows &block) {                                             \
    const int64_t hidden = block.hidden;                                       \
    const int64_t full = hidden - hidden % width, tail = hidden % width;       \
    const int64_t prefetchRows =                                               \
        block.prefetchRows ? block.prefetchRows : block.rows;                  \
    const bool wholeLines = hidden % 16 == 0 && hidden <= kMostStreamedFloats; \
    for (int64_t r = 0; r < block.rows; ++r) {                                 \
      askAhead(block, r, prefetchRows, wholeLines, streams);                   \
      if (!streams && tail == 0 && r + 1 < block.rows) {                       \
        askAhead(block, r + 1, prefetchRows, wholeLines, streams);             \
        RowPlaces one = placesOf(block, r), two = placesOf(block, r + 1);      \
        for (int64_t k = 0; k < full; k += width)                              \
          name##Pair(one, two, block.offsets, k);                              \
        ++r;                                                                   \
        continue;                                                              \
      }                                                                        \
      RowPlaces row = placesOf(block, r);                                      \
      bool streamCopies =                                                      \
          streams && streamsCopies(wholeLines, row.cCopy, row.hCopy);          \
      /* A row of exactly two vectors (hidden 16 on AVX2) as one call at       \
         k = 0: measured 0.83-0.88 of the old loop's time against 0.89-1.08    \
         with it in the general loop below (the compiler's registers). */      \
      if (full == 2 * width && tail == 0 &&                                    \
          finiteChunkPair(row, block.offsets, 0, streamCopies))                \
        continue;                                                              \
      int64_t k = 0;                                                           \
      for (; full != 2 * width && k + 2 * width <= full; k += 2 * width)       \
        if (!finiteChunkPair(row, block.offsets, k, streamCopies))             \
          for (int64_t half : {k, k + width})                                  \
            name##Chunk(row.a, row.b, row.c, row.cOut, row.hOut, row.cCopy,    \
                        row.hCopy, streamCopies, block.offsets, half, width);  \
      for (; k < full; k += width)                                             \
        if (!finiteChunk(row, block.offsets, k, streamCopies))                 \
          name##Chunk(row.a, row.b, row.c, row.cOut, row.hOut, row.cCopy,      \
                      row.hCopy, streamCopies, block.offsets, k, width);       \
      if (tail)                                                                \
        name##Chunk(row.a, row.b, row.c, row.cOut, row.hOut, row.cCopy,        \
                    row.hCopy, false, block.offsets, full, tail);              \
    }                                                                          \
  }

CELL_LSTM_GATES(lstmGateRowsAvx2, "avx2,fma", 8, __m256, _mm256_loadu_ps,
                _mm256_storeu_ps, loadTailAvx2, storeTailAvx2, _mm256_add_ps,
                _mm256_mul_ps, _mm256_stream_ps, true, finiteChunkAvx2,
                finiteChunkPairAvx2)
CELL_LSTM_GATES(lstmGateRowsAvx512, "avx512f", 16, __m512, _mm512_loadu_ps,
                _mm512_storeu_ps, loadTailAvx512, storeTailAvx512,
                _mm512_add_ps, _mm512_mul_ps, _mm512_stream_ps, false,
                noFiniteChunk, noFiniteChunkPair)
#undef CELL_LSTM_GATES
#else
void cellrun::cpu::detail::lstmGateRowsAvx512(const LstmGateRows &block) {
  lstmGateRowsGeneric(block);
}
void cellrun::cpu::detail::lstmGateRowsAvx2(const LstmGateRows &block) {
  lstmGateRowsGeneric(block);
}
#endif

void cellrun::cpu::detail::lstmGateRowsUnfenced(const LstmGateRows &block,
                                                CpuIsa isa) {
  if (block.gemm)
    return detail::lstmGateRowsWithGemm(block, isa);
#if defined(__x86_64__)
  if (isa == CpuIsa::Avx512)
    return detail::lstmGateRowsAvx512(block);
  if (isa == CpuIsa::Avx2)
    return detail::lstmGateRowsAvx2(block);
#endif
  detail::lstmGateRowsGeneric(block);
}

void cellrun::cpu::lstmGateRows(const LstmGateRows &block, CpuIsa isa) {
  detail::lstmGateRowsUnfenced(block, isa);
#if defined(__x86_64__)
  // Copies streamed past the caches are weakly ordered: done before the
  // task's end hands the results on to another thread.
  if (block.cCopyRows || block.hCopyRows)
    _mm_sfence();
#endif
}
