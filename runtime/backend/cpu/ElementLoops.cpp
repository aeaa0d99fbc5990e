//===- ElementLoops.cpp - Element-wise loops for the CPU's vectors --------===//
//
// One body per loop (always inlined), wrapped three times with a target
// attribute so the compiler vectorises it for that width (ElementLoops.h);
// the loops over rows wherever they lie in explicit vectors.
//
//===----------------------------------------------------------------------===//
#include "ElementLoops.h"
#include "MaskedTails.h" // and the vector intrinsics

using namespace cellrun::cpu;
using namespace cellrun::cpu::detail;

#define CELL_INLINE inline __attribute__((always_inline))

namespace {
/// The operands may be the result itself (an op in place): no __restrict.
CELL_INLINE void arrays(ElementOp op, const float *a, const float *b,
                        float *out, int64_t count) {
  switch (op) {
  case ElementOp::Add:
    for (int64_t k = 0; k < count; ++k)
      out[k] = a[k] + b[k];
    return;
  case ElementOp::Sub:
    for (int64_t k = 0; k < count; ++k)
      out[k] = a[k] - b[k];
    return;
  case ElementOp::Mul:
    for (int64_t k = 0; k < count; ++k)
      out[k] = a[k] * b[k];
    return;
  case ElementOp::Div:
    for (int64_t k = 0; k < count; ++k)
      out[k] = a[k] / b[k];
    return;
  }
}

/// Row r of `out` (rows of `count`, one after another) from rows a[r] and
/// b[r], wherever they lie.
CELL_INLINE void rowArrays(ElementOp op, const float *const *a,
                           const float *const *b, float *out, int64_t rows,
                           int64_t count) {
  for (int64_t r = 0; r < rows; ++r)
    arrays(op, a[r], b[r], out + r * count, count);
}

CELL_INLINE void runAndNumber(ElementOp op, const float *a, bool runOfA,
                              const float *b, float *out, int64_t count) {
  float x = a[0], y = b[0];
  switch (op) {
  case ElementOp::Add:
    if (runOfA)
      for (int64_t k = 0; k < count; ++k)
        out[k] = a[k] + y;
    else
      for (int64_t k = 0; k < count; ++k)
        out[k] = x + b[k];
    return;
  case ElementOp::Sub:
    if (runOfA)
      for (int64_t k = 0; k < count; ++k)
        out[k] = a[k] - y;
    else
      for (int64_t k = 0; k < count; ++k)
        out[k] = x - b[k];
    return;
  case ElementOp::Mul:
    if (runOfA)
      for (int64_t k = 0; k < count; ++k)
        out[k] = a[k] * y;
    else
      for (int64_t k = 0; k < count; ++k)
        out[k] = x * b[k];
    return;
  case ElementOp::Div:
    if (runOfA)
      for (int64_t k = 0; k < count; ++k)
        out[k] = a[k] / y;
    else
      for (int64_t k = 0; k < count; ++k)
        out[k] = x / b[k];
    return;
  }
}

CELL_INLINE void scaleBias(int64_t m, float *d, int64_t ldd, int64_t begin,
                           int64_t end, float alpha, float beta,
                           const float *bias, int64_t biasStride) {
  for (int64_t i = 0; i < m; ++i) {
    float *__restrict row = d + i * ldd;
    if (!bias) {
      for (int64_t j = begin; j < end; ++j)
        row[j] = alpha * row[j];
      continue;
    }
    const float *__restrict rowBias = bias + i * biasStride;
    if (alpha == 1.0f) // 1 * x is x: the common bias-only epilogue
      for (int64_t j = begin; j < end; ++j)
        row[j] = row[j] + beta * rowBias[j];
    else
      for (int64_t j = begin; j < end; ++j)
        row[j] = alpha * row[j] + beta * rowBias[j];
  }
}
} // namespace

#if defined(__x86_64__)
#define CELL_VERSIONS(X)                                                       \
  X(Avx512, __attribute__((target("avx512f"))))                                \
  X(Avx2, __attribute__((target("avx2"))))                                     \
  X(Generic, )
#else
#define CELL_VERSIONS(X) X(Generic, )
#endif

#define CELL_DEFINE(name, attribute)                                           \
  attribute void arrays##name(ElementOp op, const float *a, const float *b,    \
                              float *out, int64_t count) {                     \
    arrays(op, a, b, out, count);                                              \
  }                                                                            \
  attribute void runAndNumber##name(ElementOp op, const float *a, bool runOfA, \
                                    const float *b, float *out,                \
                                    int64_t count) {                           \
    runAndNumber(op, a, runOfA, b, out, count);                                \
  }                                                                            \
  attribute void scaleBias##name(                                              \
      int64_t m, float *d, int64_t ldd, int64_t begin, int64_t end,            \
      float alpha, float beta, const float *bias, int64_t biasStride) {        \
    scaleBias(m, d, ldd, begin, end, alpha, beta, bias, biasStride);           \
  }
namespace {
CELL_VERSIONS(CELL_DEFINE)

void rowArraysGeneric(ElementOp op, const float *const *a,
                      const float *const *b, float *out, int64_t rows,
                      int64_t count) {
  rowArrays(op, a, b, out, rows, count);
}

#if defined(__x86_64__)
// Rows wherever they lie, in explicit vectors: a row is only a few vectors
// long (16-64 floats for small cells), where the vectoriser's alias checks
// and remainder loops for each row cost more than the arithmetic. The op is
// chosen once a call, a row's tail is one masked vector; each element is
// still the one IEEE operation (the same bits). An operand may be the
// result itself: each vector is loaded before it is stored.
#define CELL_ROW_LOOPS(suffix, isa, width, vector, load, store, loadTail,      \
                       storeTail, add, sub, mul, div)                          \
  template <ElementOp Op>                                                      \
  __attribute__((target(isa))) inline vector apply##suffix(vector x,           \
                                                           vector y) {         \
    if constexpr (Op == ElementOp::Add)                                        \
      return add(x, y);                                                        \
    else if constexpr (Op == ElementOp::Sub)                                   \
      return sub(x, y);                                                        \
    else if constexpr (Op == ElementOp::Mul)                                   \
      return mul(x, y);                                                        \
    else                                                                       \
      return div(x, y);                                                        \
  }                                                                            \
  template <ElementOp Op>                                                      \
  __attribute__((target(isa))) void rows##suffix(                              \
      const float *const *a, const float *const *b, float *out, int64_t rows,  \
      int64_t count) {                                                         \
    int64_t full = count - count % width, tail = count % width;                \
    for (int64_t r = 0; r < rows; ++r) {                                       \
      const float *x = a[r], *y = b[r];                                        \
      float *to = out + r * count;                                             \
      for (int64_t i = 0; i < full; i += width)                                \
        store(to + i, apply##suffix<Op>(load(x + i), load(y + i)));            \
      if (tail)                                                                \
        storeTail(to + full, tail,                                             \
                  apply##suffix<Op>(loadTail(x + full, tail),                  \
                                    loadTail(y + full, tail)));                \
    }                                                                          \
  }                                                                            \
  __attribute__((target(isa))) void rowArrays##suffix(                         \
      ElementOp op, const float *const *a, const float *const *b, float *out,  \
      int64_t rows, int64_t count) {                                           \
    switch (op) {                                                              \
    case ElementOp::Add:                                                       \
      return rows##suffix<ElementOp::Add>(a, b, out, rows, count);             \
    case ElementOp::Sub:                                                       \
      return rows##suffix<ElementOp::Sub>(a, b, out, rows, count);             \
    case ElementOp::Mul:                                                       \
      return rows##suffix<ElementOp::Mul>(a, b, out, rows, count);             \
    case ElementOp::Div:                                                       \
      return rows##suffix<ElementOp::Div>(a, b, out, rows, count);             \
    }                                                                          \
  }

CELL_ROW_LOOPS(Avx2, "avx2", 8, __m256, _mm256_loadu_ps, _mm256_storeu_ps,
               loadTailAvx2, storeTailAvx2, _mm256_add_ps, _mm256_sub_ps,
               _mm256_mul_ps, _mm256_div_ps)
CELL_ROW_LOOPS(Avx512, "avx512f", 16, __m512, _mm512_loadu_ps, _mm512_storeu_ps,
               loadTailAvx512, storeTailAvx512, _mm512_add_ps, _mm512_sub_ps,
               _mm512_mul_ps, _mm512_div_ps)
#undef CELL_ROW_LOOPS
#endif
} // namespace
#undef CELL_DEFINE

void cellrun::cpu::elementArrays(ElementOp op, const float *a, const float *b,
                                 float *out, int64_t count, CpuIsa isa) {
#if defined(__x86_64__)
  if (isa == CpuIsa::Avx512)
    return arraysAvx512(op, a, b, out, count);
  if (isa == CpuIsa::Avx2)
    return arraysAvx2(op, a, b, out, count);
#endif
  arraysGeneric(op, a, b, out, count);
}

void cellrun::cpu::elementRows(ElementOp op, const float *const *a,
                               const float *const *b, float *out, int64_t rows,
                               int64_t count, CpuIsa isa) {
#if defined(__x86_64__)
  if (isa == CpuIsa::Avx512)
    return rowArraysAvx512(op, a, b, out, rows, count);
  if (isa == CpuIsa::Avx2)
    return rowArraysAvx2(op, a, b, out, rows, count);
#endif
  rowArraysGeneric(op, a, b, out, rows, count);
}

void cellrun::cpu::elementRunAndNumber(ElementOp op, const float *a,
                                       bool runOfA, const float *b, float *out,
                                       int64_t count, CpuIsa isa) {
#if defined(__x86_64__)
  if (isa == CpuIsa::Avx512)
    return runAndNumberAvx512(op, a, runOfA, b, out, count);
  if (isa == CpuIsa::Avx2)
    return runAndNumberAvx2(op, a, runOfA, b, out, count);
#endif
  runAndNumberGeneric(op, a, runOfA, b, out, count);
}

void cellrun::cpu::scaleRowsAddBias(int64_t m, float *d, int64_t ldd,
                                    int64_t begin, int64_t end, float alpha,
                                    float beta, const float *bias,
                                    int64_t biasStride, CpuIsa isa) {
#if defined(__x86_64__)
  if (isa == CpuIsa::Avx512)
    return scaleBiasAvx512(m, d, ldd, begin, end, alpha, beta, bias,
                           biasStride);
  if (isa == CpuIsa::Avx2)
    return scaleBiasAvx2(m, d, ldd, begin, end, alpha, beta, bias, biasStride);
#endif
  scaleBiasGeneric(m, d, ldd, begin, end, alpha, beta, bias, biasStride);
}
