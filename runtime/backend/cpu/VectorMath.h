//===- VectorMath.h - Sigmoid, tanh and exp over arrays --------*- C++ -*-===//
//
// The activations (and exp) of fused regions on the CPU, eight lanes at a time
// where the processor has AVX2, sixteen where it has AVX-512. exp is Cephes'
// range reduction with a degree-6 polynomial (within 2 ulp); sigmoid is 1 / (1
// + exp(-x)); tanh is x P(x^2) / Q(x^2), a (5, 4) rational function fitted
// by scripts/fit-tanh.py, clamped at 9.02 (within 5.3 ulp). The vector and the portable
// versions do the same operations in the same order, the same ones fused
// (multiply-adds of the range reduction and the polynomials: std::fma in the
// portable version), so they give the same bits, and an element's result
// never depends on its neighbours. A vector loop's tail is one masked vector.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_VECTORMATH_H
#define CELLRUN_BACKEND_CPU_VECTORMATH_H

#include "CpuIsa.h"

#include <cstdint>

namespace cellrun::cpu {

/// out[i] = f(in[i]) for i < count; `in` and `out` may be the same array.
void sigmoidArray(const float *in, float *out, int64_t count,
                  CpuIsa isa = detectCpuIsa());
void tanhArray(const float *in, float *out, int64_t count,
               CpuIsa isa = detectCpuIsa());
/// The same over rows wherever they lie: row r of `out` (rows of `count`,
/// one after another) is f of the `count` floats at in[r].
void sigmoidRows(const float *const *in, float *out, int64_t rows,
                 int64_t count, CpuIsa isa = detectCpuIsa());
void tanhRows(const float *const *in, float *out, int64_t rows, int64_t count,
              CpuIsa isa = detectCpuIsa());
/// exp over the whole float range (the same polynomial, its scale applied in
/// two halves: subnormal results, +inf above ln(FLT_MAX), 0 below -104).
void expArray(const float *in, float *out, int64_t count,
              CpuIsa isa = detectCpuIsa());

/// One element, as the array functions compute it.
float sigmoidScalar(float x);
float tanhScalar(float x);

namespace detail {
void sigmoidAvx2(const float *in, float *out, int64_t count);
void tanhAvx2(const float *in, float *out, int64_t count);
void sigmoidAvx512(const float *in, float *out, int64_t count);
void tanhAvx512(const float *in, float *out, int64_t count);
void expAvx512(const float *in, float *out, int64_t count);
void sigmoidRowsAvx2(const float *const *in, float *out, int64_t rows,
                     int64_t count);
void tanhRowsAvx2(const float *const *in, float *out, int64_t rows,
                  int64_t count);
void sigmoidRowsAvx512(const float *const *in, float *out, int64_t rows,
                       int64_t count);
void tanhRowsAvx512(const float *const *in, float *out, int64_t rows,
                    int64_t count);
} // namespace detail

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_VECTORMATH_H
