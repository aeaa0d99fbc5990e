//===- ElementLoops.h - Element-wise loops for the CPU's vectors -*- C++
//-*-===//
//
// The region interpreter's arithmetic loops (a op b over arrays, an array
// against a number) and the GEMM epilogue's scale-and-bias, compiled three
// times: for baseline x86-64 (SSE2: what the library is built for), for
// AVX2 and for AVX-512 F, and picked once by detectCpuIsa(). Each element is
// one IEEE operation in every version (the library is built with
// -ffp-contract=off), so the versions give the same bits; wider vectors only
// do more elements an instruction. The loops over rows wherever they lie
// are explicit vectors on AVX2 and AVX-512 (a row's tail one masked vector).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_ELEMENTLOOPS_H
#define CELLRUN_BACKEND_CPU_ELEMENTLOOPS_H

#include "CpuIsa.h"

#include <cstdint>

namespace cellrun::cpu {

enum class ElementOp { Add, Sub, Mul, Div };

/// out[k] = a[k] op b[k] for k < count.
void elementArrays(ElementOp op, const float *a, const float *b, float *out,
                   int64_t count, CpuIsa isa = detectCpuIsa());

/// Row r of `out` (rows of `count` floats, one after another) is row a[r]
/// op row b[r], each operand row wherever its pointer says (a split part, a
/// gathered table row, a pool row read in place): the same bits as
/// elementArrays over rows copied together first.
void elementRows(ElementOp op, const float *const *a, const float *const *b,
                 float *out, int64_t rows, int64_t count,
                 CpuIsa isa = detectCpuIsa());

/// out[k] = a[k] op b[0] when `runOfA`, else a[0] op b[k], for k < count.
void elementRunAndNumber(ElementOp op, const float *a, bool runOfA,
                         const float *b, float *out, int64_t count,
                         CpuIsa isa = detectCpuIsa());

/// For rows i < m of d (row stride ldd) and columns [begin, end):
/// d = alpha * d, then + beta * bias[i * biasStride + j] when there is a
/// bias (the GEMM's epilogue, in that order).
void scaleRowsAddBias(int64_t m, float *d, int64_t ldd, int64_t begin,
                      int64_t end, float alpha, float beta, const float *bias,
                      int64_t biasStride, CpuIsa isa = detectCpuIsa());

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_ELEMENTLOOPS_H
