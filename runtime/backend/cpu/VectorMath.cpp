//===- VectorMath.cpp - Sigmoid, tanh and exp over arrays ----------------===//
//
// Scalar, AVX2 and AVX-512 versions of the same arithmetic (see
// VectorMath.h). The library is built with -ffp-contract=off, so no
// multiply-add is fused behind our back: each one named below (std::fma, the
// fmadd intrinsics) is fused in every version, which rounds it once
// whatever the instruction set, and nothing else is.
//
//===----------------------------------------------------------------------===//
#include "VectorMath.h"
#include "MaskedTails.h" // and the vector intrinsics
#include "VectorMathInline.h"

#include <cmath>
#include <cstring>
#include <initializer_list>

using namespace cellrun::cpu;
using namespace cellrun::cpu::detail;
using namespace cellrun::cpu::detail::vectors;

namespace {
/// exp's range reduction and polynomial: y with exp(x) = y * 2^n, for an x
/// already clamped to the range the caller handles.
float expReduced(float x, float &n) {
  n = std::floor(std::fma(x, kLog2e, 0.5f));
  x = std::fma(-n, kLn2High, x);
  x = std::fma(-n, kLn2Low, x);
  float z = x * x;
  float y = kExpP0;
  for (float c : {kExpP1, kExpP2, kExpP3, kExpP4, kExpP5})
    y = std::fma(y, x, c);
  y = std::fma(y, z, x);
  return y + 1.0f;
}

float expScalar(float x) {
  x = x > kExpLow ? x : kExpLow; // as maxps: NaN becomes the bound
  x = x < kExpHigh ? x : kExpHigh;
  float n;
  float y = expReduced(x, n);
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return y * scale;
}

/// 2^(n >> 1) and 2^(n - (n >> 1)) as floats: both normal for the n of the
/// wide range (-150..128), so y * first * second rounds once into the
/// subnormals and overflows to +inf where exp does.
void splitScale(int32_t n, float &first, float &second) {
  int32_t half = n >> 1; // arithmetic shift, as _mm512_srai_epi32
  int32_t firstBits = (half + 127) << 23, secondBits = (n - half + 127) << 23;
  std::memcpy(&first, &firstBits, sizeof(first));
  std::memcpy(&second, &secondBits, sizeof(second));
}

/// exp over the whole float range: the same reduction and polynomial as
/// expScalar, the scale applied in two halves.
float expWideScalar(float x) {
  if (std::isnan(x))
    return x;
  x = x > kExpWideLow ? x : kExpWideLow;
  x = x < kExpWideHigh ? x : kExpWideHigh;
  float n;
  float y = expReduced(x, n);
  float first, second;
  splitScale(static_cast<int32_t>(n), first, second);
  return y * first * second;
}
} // namespace

float cellrun::cpu::sigmoidScalar(float x) {
  if (std::isnan(x))
    return x;
  return 1.0f / (1.0f + expScalar(-x));
}

float cellrun::cpu::tanhScalar(float x) {
  if (std::isnan(x))
    return x;
  float magnitude = std::fabs(x);
  magnitude = magnitude < kTanhClamp ? magnitude : kTanhClamp;
  float z = magnitude * magnitude;
  float p = kTanhP[5];
  for (int k = 4; k >= 0; --k)
    p = std::fma(p, z, kTanhP[k]);
  float q = kTanhQ[4];
  for (int k = 3; k >= 0; --k)
    q = std::fma(q, z, kTanhQ[k]);
  float result = magnitude * p / q;
  result = result < 1.0f ? result : 1.0f;
  return std::copysign(result, x); // tanh is odd, tanh(-0) = -0
}

#if defined(__x86_64__)

// f over an array, `width` lanes at a time, the tail in one masked vector.
#define CELL_ARRAY_FUNCTION(name, isa, width, suffix, load, store, vector)     \
  __attribute__((target(isa))) void cellrun::cpu::detail::name(                \
      const float *in, float *out, int64_t count) {                            \
    int64_t i = 0;                                                             \
    for (; i + width <= count; i += width)                                     \
      store(out + i, vector(load(in + i)));                                    \
    if (i < count)                                                             \
      storeTail##suffix(out + i, count - i,                                    \
                        vector(loadTail##suffix(in + i, count - i)));          \
  }

// Rows wherever they lie (RegionInterpreter's views), into consecutive rows
// of `out`: the loops above, row by row. Rows of exactly one vector (hidden
// 16 on AVX-512) go two at a time, so that two dependency chains overlap as
// they do over one long array (a quarter faster there).
#define CELL_ROWS_FUNCTION(name, isa, width, suffix, load, store, vector)      \
  __attribute__((target(isa))) void cellrun::cpu::detail::name(                \
      const float *const *in, float *out, int64_t rows, int64_t count) {       \
    int64_t r = 0;                                                             \
    if (count == width)                                                        \
      for (; r + 2 <= rows; r += 2) {                                          \
        auto first = vector(load(in[r]));                                      \
        auto second = vector(load(in[r + 1]));                                 \
        store(out + r * width, first);                                         \
        store(out + (r + 1) * width, second);                                  \
      }                                                                        \
    for (; r < rows; ++r) {                                                    \
      const float *row = in[r];                                                \
      float *to = out + r * count;                                             \
      int64_t i = 0;                                                           \
      for (; i + width <= count; i += width)                                   \
        store(to + i, vector(load(row + i)));                                  \
      if (i < count)                                                           \
        storeTail##suffix(to + i, count - i,                                   \
                          vector(loadTail##suffix(row + i, count - i)));       \
    }                                                                          \
  }

CELL_ARRAY_FUNCTION(sigmoidAvx2, "avx2,fma", 8, Avx2, _mm256_loadu_ps,
                    _mm256_storeu_ps, sigmoidVector)
CELL_ARRAY_FUNCTION(tanhAvx2, "avx2,fma", 8, Avx2, _mm256_loadu_ps,
                    _mm256_storeu_ps, tanhVector)
CELL_ROWS_FUNCTION(sigmoidRowsAvx2, "avx2,fma", 8, Avx2, _mm256_loadu_ps,
                   _mm256_storeu_ps, sigmoidVector)
CELL_ROWS_FUNCTION(tanhRowsAvx2, "avx2,fma", 8, Avx2, _mm256_loadu_ps,
                   _mm256_storeu_ps, tanhVector)
CELL_ARRAY_FUNCTION(sigmoidAvx512, "avx512f", 16, Avx512, _mm512_loadu_ps,
                    _mm512_storeu_ps, sigmoidVector)
CELL_ARRAY_FUNCTION(tanhAvx512, "avx512f", 16, Avx512, _mm512_loadu_ps,
                    _mm512_storeu_ps, tanhVector)
CELL_ROWS_FUNCTION(sigmoidRowsAvx512, "avx512f", 16, Avx512, _mm512_loadu_ps,
                   _mm512_storeu_ps, sigmoidVector)
CELL_ROWS_FUNCTION(tanhRowsAvx512, "avx512f", 16, Avx512, _mm512_loadu_ps,
                   _mm512_storeu_ps, tanhVector)
CELL_ARRAY_FUNCTION(expAvx512, "avx512f", 16, Avx512, _mm512_loadu_ps,
                    _mm512_storeu_ps, expWideAvx512)
#undef CELL_ROWS_FUNCTION
#undef CELL_ARRAY_FUNCTION
#else
void cellrun::cpu::detail::expAvx512(const float *in, float *out,
                                     int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = expWideScalar(in[i]);
}
void cellrun::cpu::detail::sigmoidAvx2(const float *in, float *out,
                                       int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = sigmoidScalar(in[i]);
}
void cellrun::cpu::detail::tanhAvx2(const float *in, float *out,
                                    int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = tanhScalar(in[i]);
}
void cellrun::cpu::detail::sigmoidAvx512(const float *in, float *out,
                                         int64_t count) {
  sigmoidAvx2(in, out, count);
}
void cellrun::cpu::detail::sigmoidRowsAvx2(const float *const *in, float *out,
                                           int64_t rows, int64_t count) {
  for (int64_t r = 0; r < rows; ++r)
    sigmoidAvx2(in[r], out + r * count, count);
}
void cellrun::cpu::detail::tanhRowsAvx2(const float *const *in, float *out,
                                        int64_t rows, int64_t count) {
  for (int64_t r = 0; r < rows; ++r)
    tanhAvx2(in[r], out + r * count, count);
}
void cellrun::cpu::detail::sigmoidRowsAvx512(const float *const *in, float *out,
                                             int64_t rows, int64_t count) {
  sigmoidRowsAvx2(in, out, rows, count);
}
void cellrun::cpu::detail::tanhRowsAvx512(const float *const *in, float *out,
                                          int64_t rows, int64_t count) {
  tanhRowsAvx2(in, out, rows, count);
}
void cellrun::cpu::detail::tanhAvx512(const float *in, float *out,
                                      int64_t count) {
  tanhAvx2(in, out, count);
}
#endif

void cellrun::cpu::sigmoidArray(const float *in, float *out, int64_t count,
                                CpuIsa isa) {
  if (isa == CpuIsa::Avx512)
    return detail::sigmoidAvx512(in, out, count);
  if (usesAvx2(isa))
    return detail::sigmoidAvx2(in, out, count);
  for (int64_t i = 0; i < count; ++i)
    out[i] = sigmoidScalar(in[i]);
}

void cellrun::cpu::tanhArray(const float *in, float *out, int64_t count,
                             CpuIsa isa) {
  if (isa == CpuIsa::Avx512)
    return detail::tanhAvx512(in, out, count);
  if (usesAvx2(isa))
    return detail::tanhAvx2(in, out, count);
  for (int64_t i = 0; i < count; ++i)
    out[i] = tanhScalar(in[i]);
}

void cellrun::cpu::sigmoidRows(const float *const *in, float *out, int64_t rows,
                               int64_t count, CpuIsa isa) {
  if (isa == CpuIsa::Avx512)
    return detail::sigmoidRowsAvx512(in, out, rows, count);
  if (usesAvx2(isa))
    return detail::sigmoidRowsAvx2(in, out, rows, count);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < count; ++i)
      out[r * count + i] = sigmoidScalar(in[r][i]);
}

void cellrun::cpu::tanhRows(const float *const *in, float *out, int64_t rows,
                            int64_t count, CpuIsa isa) {
  if (isa == CpuIsa::Avx512)
    return detail::tanhRowsAvx512(in, out, rows, count);
  if (usesAvx2(isa))
    return detail::tanhRowsAvx2(in, out, rows, count);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < count; ++i)
      out[r * count + i] = tanhScalar(in[r][i]);
}

void cellrun::cpu::expArray(const float *in, float *out, int64_t count,
                            CpuIsa isa) {
  // AVX-512 only: on AVX2 machines the portable loop (the compiler may
  // vectorise it; the bits are the same either way, no FMA).
  if (isa == CpuIsa::Avx512)
    return detail::expAvx512(in, out, count);
  for (int64_t i = 0; i < count; ++i)
    out[i] = expWideScalar(in[i]);
}
