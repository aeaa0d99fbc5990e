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

#include <cmath>
#include <cstring>
#include <initializer_list>

using namespace cellrun::cpu;
using namespace cellrun::cpu::detail;

namespace {
constexpr float kExpHigh = 88.0f, kExpLow = -87.0f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
constexpr float kExpP0 = 1.9875691500e-4f, kExpP1 = 1.3981999507e-3f,
                kExpP2 = 8.3334519073e-3f, kExpP3 = 4.1665795894e-2f,
                kExpP4 = 1.6666665459e-1f, kExpP5 = 5.0000001201e-1f;
// The exp op's range: below kExpWideLow the result is 0 in fp32 (after the
// subnormals), above kExpWideHigh (the float above ln(FLT_MAX)) it is +inf.
constexpr float kExpWideLow = -104.0f, kExpWideHigh = 88.72283935546875f;
constexpr float kTanhSmall = 0.625f;
constexpr float kTanhP0 = -5.70498872745e-3f, kTanhP1 = 2.06390887954e-2f,
                kTanhP2 = -5.37397155531e-2f, kTanhP3 = 1.33314422036e-1f,
                kTanhP4 = -3.33332819422e-1f;

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
  float result;
  if (magnitude < kTanhSmall) {
    float z = x * x;
    float y = kTanhP0;
    for (float c : {kTanhP1, kTanhP2, kTanhP3, kTanhP4})
      y = std::fma(y, z, c);
    result = std::fma(y * z, x, x);
  } else {
    float e = expScalar(magnitude + magnitude);
    result = 1.0f - 2.0f / (e + 1.0f);
  }
  return std::copysign(result, x); // tanh is odd, tanh(-0) = -0
}

#if defined(__x86_64__)
namespace {
__attribute__((target("avx2,fma"))) inline __m256 expAvx2(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(kExpLow));
  x = _mm256_min_ps(x, _mm256_set1_ps(kExpHigh));
  __m256 n = _mm256_floor_ps(
      _mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), _mm256_set1_ps(0.5f)));
  x = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2High), x);
  x = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Low), x);
  __m256 z = _mm256_mul_ps(x, x);
  __m256 y = _mm256_set1_ps(kExpP0);
  for (float c : {kExpP1, kExpP2, kExpP3, kExpP4, kExpP5})
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(c));
  y = _mm256_fmadd_ps(y, z, x);
  y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
  __m256i bits = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(bits));
}

/// NaN lanes of `x` pass through, as in the scalar versions.
__attribute__((target("avx2,fma"))) inline __m256 keepNan(__m256 x,
                                                          __m256 result) {
  return _mm256_blendv_ps(result, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

__attribute__((target("avx2,fma"))) inline __m256 sigmoidVector(__m256 x) {
  __m256 one = _mm256_set1_ps(1.0f);
  __m256 e = expAvx2(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return keepNan(x, _mm256_div_ps(one, _mm256_add_ps(one, e)));
}

__attribute__((target("avx2,fma"))) inline __m256 tanhVector(__m256 x) {
  __m256 signMask = _mm256_set1_ps(-0.0f);
  __m256 magnitude = _mm256_andnot_ps(signMask, x);
  __m256 z = _mm256_mul_ps(x, x);
  __m256 y = _mm256_set1_ps(kTanhP0);
  for (float c : {kTanhP1, kTanhP2, kTanhP3, kTanhP4})
    y = _mm256_fmadd_ps(y, z, _mm256_set1_ps(c));
  __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(y, z), x, x);
  __m256 one = _mm256_set1_ps(1.0f);
  __m256 e = expAvx2(_mm256_add_ps(magnitude, magnitude));
  __m256 large = _mm256_sub_ps(
      one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
  __m256 isSmall =
      _mm256_cmp_ps(magnitude, _mm256_set1_ps(kTanhSmall), _CMP_LT_OQ);
  __m256 result = _mm256_blendv_ps(large, small, isSmall);
  result = _mm256_or_ps(_mm256_andnot_ps(signMask, result),
                        _mm256_and_ps(signMask, x));
  return keepNan(x, result);
}

// The same operations sixteen lanes at a time (the same multiply-adds
// fused: the bits of the AVX2 and portable versions).
/// expReduced sixteen lanes at a time.
__attribute__((target("avx512f"))) inline __m512 expReducedAvx512(__m512 x,
                                                                  __m512 &n) {
  n = _mm512_roundscale_ps(
      _mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), _mm512_set1_ps(0.5f)),
      _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  x = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2High), x);
  x = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Low), x);
  __m512 z = _mm512_mul_ps(x, x);
  __m512 y = _mm512_set1_ps(kExpP0);
  for (float c : {kExpP1, kExpP2, kExpP3, kExpP4, kExpP5})
    y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(c));
  y = _mm512_fmadd_ps(y, z, x);
  return _mm512_add_ps(y, _mm512_set1_ps(1.0f));
}

__attribute__((target("avx512f"))) inline __m512 expAvx512(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(kExpLow));
  x = _mm512_min_ps(x, _mm512_set1_ps(kExpHigh));
  __m512 n;
  __m512 y = expReducedAvx512(x, n);
  // y * 2^n in one instruction: exact here (the clamped range keeps the
  // result normal), so the same bits as the product by 2^n elsewhere.
  return _mm512_scalef_ps(y, n);
}

__attribute__((target("avx512f"))) inline __m512 keepNan(__m512 x,
                                                         __m512 result) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), result,
                              x);
}

__attribute__((target("avx512f"))) inline __m512 expWideAvx512(__m512 x) {
  __m512 clamped = _mm512_max_ps(x, _mm512_set1_ps(kExpWideLow));
  clamped = _mm512_min_ps(clamped, _mm512_set1_ps(kExpWideHigh));
  __m512 n;
  __m512 y = expReducedAvx512(clamped, n);
  __m512i whole = _mm512_cvtps_epi32(n);
  __m512i half = _mm512_srai_epi32(whole, 1);
  __m512i bias = _mm512_set1_epi32(127);
  __m512 first =
      _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(half, bias), 23));
  __m512 second = _mm512_castsi512_ps(_mm512_slli_epi32(
      _mm512_add_epi32(_mm512_sub_epi32(whole, half), bias), 23));
  return keepNan(x, _mm512_mul_ps(_mm512_mul_ps(y, first), second));
}

__attribute__((target("avx512f"))) inline __m512 sigmoidVector(__m512 x) {
  __m512 one = _mm512_set1_ps(1.0f);
  __m512 e = expAvx512(_mm512_sub_ps(_mm512_setzero_ps(), x));
  return keepNan(x, _mm512_div_ps(one, _mm512_add_ps(one, e)));
}

__attribute__((target("avx512f"))) inline __m512 tanhVector(__m512 x) {
  __m512i signMask = _mm512_set1_epi32(INT32_MIN);
  __m512i xBits = _mm512_castps_si512(x);
  __m512 magnitude = _mm512_castsi512_ps(_mm512_andnot_si512(signMask, xBits));
  __m512 z = _mm512_mul_ps(x, x);
  __m512 y = _mm512_set1_ps(kTanhP0);
  for (float c : {kTanhP1, kTanhP2, kTanhP3, kTanhP4})
    y = _mm512_fmadd_ps(y, z, _mm512_set1_ps(c));
  __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(y, z), x, x);
  __m512 one = _mm512_set1_ps(1.0f);
  __m512 e = expAvx512(_mm512_add_ps(magnitude, magnitude));
  __m512 large = _mm512_sub_ps(
      one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
  __mmask16 isSmall =
      _mm512_cmp_ps_mask(magnitude, _mm512_set1_ps(kTanhSmall), _CMP_LT_OQ);
  __m512i result =
      _mm512_castps_si512(_mm512_mask_blend_ps(isSmall, large, small));
  result = _mm512_or_si512(_mm512_andnot_si512(signMask, result),
                           _mm512_and_si512(signMask, xBits));
  return keepNan(x, _mm512_castsi512_ps(result));
}

} // namespace

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
