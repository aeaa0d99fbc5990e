//===- VectorMathInline.h - Sigmoid, tanh and exp of one vector -*- C++ -*-===//
//
// The constants of VectorMath.cpp's exp, sigmoid and tanh, and their AVX2 and
// AVX-512 versions of one vector, inlined into the loops that use them (the
// arrays and rows of VectorMath.cpp, the fused LSTM gates of LstmGates.cpp),
// so that every caller gives the portable bits (VectorMath.h). The library is
// built with -ffp-contract=off: only the multiply-adds named here are fused.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_VECTORMATHINLINE_H
#define CELLRUN_BACKEND_CPU_VECTORMATHINLINE_H

#include "MaskedTails.h" // and the vector intrinsics

#include <cstdint>
#include <initializer_list>

namespace cellrun::cpu::detail::vectors {
constexpr float kExpHigh = 88.0f, kExpLow = -87.0f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
constexpr float kExpP0 = 1.9875691500e-4f, kExpP1 = 1.3981999507e-3f,
                kExpP2 = 8.3334519073e-3f, kExpP3 = 4.1665795894e-2f,
                kExpP4 = 1.6666665459e-1f, kExpP5 = 5.0000001201e-1f;
// The exp op's range: below kExpWideLow the result is 0 in fp32 (after the
// subnormals), above kExpWideHigh (the float above ln(FLT_MAX)) it is +inf.
constexpr float kExpWideLow = -104.0f, kExpWideHigh = 88.72283935546875f;
// tanh(x) = x P(x^2) / Q(x^2) for |x| up to kTanhClamp (beyond it tanh is
// 1 in fp32): a (5, 4) rational function in x^2 fitted to tanh(x) / x by
// scripts/fit-tanh.py: within 1.3e-9 relative as fitted, 2.4e-8 with the
// coefficients rounded to floats. Evaluated in fp32 (Horner, every step a
// multiply-add) it is within 5.3 ulp of tanh over every float, 92% of them
// correctly rounded (bench/activation_accuracy). Nine multiply-adds, two
// multiplies, two minimums and one division: the two-branch version it replaced
// (an odd polynomial below 0.625, 1 - 2 / (exp(2|x|) + 1) above, both
// computed for every lane) took 1.8 times as long a vector.
constexpr float kTanhClamp = 9.02f;
constexpr float kTanhP[] = {1.0f,
                            1.367989630e-01f,
                            3.868304193e-03f,
                            2.800694529e-05f,
                            3.058366360e-08f,
                            -1.220235891e-11f};
constexpr float kTanhQ[] = {1.0f, 4.701322913e-01f, 2.724575438e-02f,
                            3.938588197e-04f, 1.287329042e-06f};

#if defined(__x86_64__)
/// NaN lanes of `x` pass through, as in the scalar versions.
__attribute__((target("avx2,fma"))) inline __m256 keepNan(__m256 x,
                                                          __m256 result) {
  return _mm256_blendv_ps(result, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/// exp(-x) as the scalar expScalar(-x) computes it (VectorMath.cpp), for
/// lanes that are not NaN, without negating x first: each of its steps on
/// -x is the negation of a step on x with operands' signs turned
/// (max(-x, lo) = -min(x, -lo); fma(-a, b, c) is fnmadd(a, b, c); rounding
/// to nearest is the same either side of zero), so the reduced argument
/// comes out as s = -r and the polynomial in r is taken in s. The same
/// bits (a zero's sign aside, which does not reach the result), one
/// instruction less on sigmoid's chain.
__attribute__((target("avx2,fma"))) inline __m256 expOfNegatedAvx2(__m256 x) {
  __m256 m = _mm256_min_ps(x, _mm256_set1_ps(-kExpLow));
  m = _mm256_max_ps(m, _mm256_set1_ps(-kExpHigh));
  __m256 n = _mm256_floor_ps(
      _mm256_fnmadd_ps(m, _mm256_set1_ps(kLog2e), _mm256_set1_ps(0.5f)));
  __m256 s = _mm256_fmadd_ps(n, _mm256_set1_ps(kLn2High), m);
  s = _mm256_fmadd_ps(n, _mm256_set1_ps(kLn2Low), s);
  __m256 z = _mm256_mul_ps(s, s);
  __m256 y = _mm256_set1_ps(kExpP0);
  for (float c : {kExpP1, kExpP2, kExpP3, kExpP4, kExpP5})
    y = _mm256_fnmadd_ps(y, s, _mm256_set1_ps(c));
  y = _mm256_fmsub_ps(y, z, s);
  y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
  __m256i bits = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(bits));
}

/// sigmoidVector's bits in lanes that are not NaN (a NaN lane's result is
/// not promised): for loops that check their inputs for NaNs once.
__attribute__((target("avx2,fma"))) inline __m256 sigmoidOfFinite(__m256 x) {
  __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, expOfNegatedAvx2(x)));
}

__attribute__((target("avx2,fma"))) inline __m256 sigmoidVector(__m256 x) {
  return keepNan(x, sigmoidOfFinite(x));
}

/// tanhVector's bits in lanes that are not NaN (as sigmoidOfFinite).
__attribute__((target("avx2,fma"))) inline __m256 tanhOfFinite(__m256 x) {
  __m256 signMask = _mm256_set1_ps(-0.0f);
  __m256 magnitude =
      _mm256_min_ps(_mm256_andnot_ps(signMask, x), _mm256_set1_ps(kTanhClamp));
  __m256 z = _mm256_mul_ps(magnitude, magnitude);
  __m256 p = _mm256_set1_ps(kTanhP[5]);
  for (int k = 4; k >= 0; --k)
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(kTanhP[k]));
  __m256 q = _mm256_set1_ps(kTanhQ[4]);
  for (int k = 3; k >= 0; --k)
    q = _mm256_fmadd_ps(q, z, _mm256_set1_ps(kTanhQ[k]));
  __m256 result = _mm256_min_ps(_mm256_div_ps(_mm256_mul_ps(magnitude, p), q),
                                _mm256_set1_ps(1.0f));
  return _mm256_or_ps(result, _mm256_and_ps(signMask, x));
}

__attribute__((target("avx2,fma"))) inline __m256 tanhVector(__m256 x) {
  return keepNan(x, tanhOfFinite(x));
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
  __m512 magnitude =
      _mm512_min_ps(_mm512_castsi512_ps(_mm512_andnot_si512(signMask, xBits)),
                    _mm512_set1_ps(kTanhClamp));
  __m512 z = _mm512_mul_ps(magnitude, magnitude);
  __m512 p = _mm512_set1_ps(kTanhP[5]);
  for (int k = 4; k >= 0; --k)
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(kTanhP[k]));
  __m512 q = _mm512_set1_ps(kTanhQ[4]);
  for (int k = 3; k >= 0; --k)
    q = _mm512_fmadd_ps(q, z, _mm512_set1_ps(kTanhQ[k]));
  __m512 result = _mm512_min_ps(_mm512_div_ps(_mm512_mul_ps(magnitude, p), q),
                                _mm512_set1_ps(1.0f));
  // result | (x & sign): the magnitude given x's sign, in one instruction.
  __m512i withSign = _mm512_ternarylogic_epi32(_mm512_castps_si512(result),
                                               xBits, signMask, 0xF8);
  return keepNan(x, _mm512_castsi512_ps(withSign));
}

#endif
} // namespace cellrun::cpu::detail::vectors

#endif // CELLRUN_BACKEND_CPU_VECTORMATHINLINE_H
