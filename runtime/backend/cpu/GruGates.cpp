//===- GruGates.cpp - A GRU's element-wise step in one pass ---------------===//
//
// One loop body per instruction set (a macro over the vector type and its
// intrinsics), as LstmGates.cpp: a row's parts go through the vector sigmoid
// and tanh of VectorMathInline.h `width` floats at a time, the last partial
// vector masked, so each element's bits are those of the op-by-op
// interpreter's.
//
//===----------------------------------------------------------------------===//
#include "GruGates.h"
#include "VectorMath.h"
#include "VectorMathInline.h"

using namespace cellrun::cpu;
using namespace cellrun::cpu::detail;
using namespace cellrun::cpu::detail::vectors;

namespace {
/// Rows ahead whose projections and state are asked for before a row is
/// computed (they lie scattered over the pools), as in LstmGates.cpp.
constexpr int64_t kPrefetchAhead = 8;
} // namespace

void cellrun::cpu::detail::gruGateRowsGeneric(const GruGateRows &block) {
  const int64_t hidden = block.hidden;
  for (int64_t r = 0; r < block.rows; ++r) {
    const float *a = block.a[r], *b = block.b[r], *h = block.h[r];
    float *out = block.outRows ? block.outRows[r] : block.out + r * hidden;
    for (int64_t k = 0; k < hidden; ++k) {
      float reset =
          sigmoidScalar(a[block.aOffsets[0] + k] + b[block.bOffsets[0] + k]);
      float update =
          sigmoidScalar(a[block.aOffsets[1] + k] + b[block.bOffsets[1] + k]);
      float candidate = tanhScalar(a[block.aOffsets[2] + k] +
                                   b[block.bOffsets[2] + k] * reset);
      float difference = block.hFirst ? h[k] - candidate : candidate - h[k];
      out[k] = difference * update + candidate;
    }
  }
}

#if defined(__x86_64__)
// The body for `width`-lane vectors (no lambdas: they would not inherit the
// target attribute). A row's chunk of `lanes` floats at k, all `width` of
// them or the row's last partial vector.
#define CELL_GRU_GATES(name, isa, width, vector, load, store, loadTail,        \
                       storeTail, add, sub, mul)                               \
  namespace {                                                                  \
  __attribute__((target(isa))) inline vector name##In(const float *from,       \
                                                      int64_t lanes) {         \
    return lanes == width ? load(from) : loadTail(from, lanes);                \
  }                                                                            \
  __attribute__((target(isa))) inline void                                     \
      name##Chunk(const float *a, const float *b, const float *h, float *out,  \
                  const GruGateRows &block, int64_t k, int64_t lanes) {        \
    const int64_t *ao = block.aOffsets, *bo = block.bOffsets;                  \
    vector reset = sigmoidVector(                                              \
        add(name##In(a + ao[0] + k, lanes), name##In(b + bo[0] + k, lanes)));  \
    vector update = sigmoidVector(                                             \
        add(name##In(a + ao[1] + k, lanes), name##In(b + bo[1] + k, lanes)));  \
    vector candidate =                                                         \
        tanhVector(add(name##In(a + ao[2] + k, lanes),                         \
                       mul(name##In(b + bo[2] + k, lanes), reset)));           \
    vector state = name##In(h + k, lanes);                                     \
    vector difference =                                                        \
        block.hFirst ? sub(state, candidate) : sub(candidate, state);          \
    vector result = add(mul(difference, update), candidate);                   \
    if (lanes == width)                                                        \
      store(out + k, result);                                                  \
    else                                                                       \
      storeTail(out + k, lanes, result);                                       \
  }                                                                            \
  }                                                                            \
  __attribute__((target(isa))) void cellrun::cpu::detail::name(                \
      const GruGateRows &block) {                                              \
    const int64_t hidden = block.hidden;                                       \
    const int64_t full = hidden - hidden % width, tail = hidden % width;       \
    for (int64_t r = 0; r < block.rows; ++r) {                                 \
      const float *a = block.a[r], *b = block.b[r], *h = block.h[r];           \
      float *out = block.outRows ? block.outRows[r] : block.out + r * hidden;  \
      if (r + kPrefetchAhead < block.rows) {                                   \
        const float *na = block.a[r + kPrefetchAhead];                         \
        const float *nb = block.b[r + kPrefetchAhead];                         \
        for (int p = 0; p < 3; ++p) {                                          \
          _mm_prefetch(reinterpret_cast<const char *>(na + block.aOffsets[p]), \
                       _MM_HINT_T0);                                           \
          _mm_prefetch(reinterpret_cast<const char *>(nb + block.bOffsets[p]), \
                       _MM_HINT_T0);                                           \
        }                                                                      \
        _mm_prefetch(                                                          \
            reinterpret_cast<const char *>(block.h[r + kPrefetchAhead]),       \
            _MM_HINT_T0);                                                      \
      }                                                                        \
      for (int64_t k = 0; k < full; k += width)                                \
        name##Chunk(a, b, h, out, block, k, width);                            \
      if (tail)                                                                \
        name##Chunk(a, b, h, out, block, full, tail);                          \
    }                                                                          \
  }

CELL_GRU_GATES(gruGateRowsAvx2, "avx2,fma", 8, __m256, _mm256_loadu_ps,
               _mm256_storeu_ps, loadTailAvx2, storeTailAvx2, _mm256_add_ps,
               _mm256_sub_ps, _mm256_mul_ps)
CELL_GRU_GATES(gruGateRowsAvx512, "avx512f", 16, __m512, _mm512_loadu_ps,
               _mm512_storeu_ps, loadTailAvx512, storeTailAvx512, _mm512_add_ps,
               _mm512_sub_ps, _mm512_mul_ps)
#undef CELL_GRU_GATES
#else
void cellrun::cpu::detail::gruGateRowsAvx512(const GruGateRows &block) {
  gruGateRowsGeneric(block);
}
void cellrun::cpu::detail::gruGateRowsAvx2(const GruGateRows &block) {
  gruGateRowsGeneric(block);
}
#endif

void cellrun::cpu::gruGateRows(const GruGateRows &block, CpuIsa isa) {
#if defined(__x86_64__)
  if (isa == CpuIsa::Avx512)
    return detail::gruGateRowsAvx512(block);
  if (isa == CpuIsa::Avx2)
    return detail::gruGateRowsAvx2(block);
#endif
  detail::gruGateRowsGeneric(block);
}
