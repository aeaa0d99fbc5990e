//===- GruGates.h - A GRU's element-wise step in one pass -------*- C++ -*-===//
//
// The element-wise part of a GRU step as the region interpreter finds it in
// a kernel (RegionFusionGru.cpp): the input's and the hidden state's
// projections a and b, each split three ways (reset, update, new), then
//   r = sigmoid(a_r + b_r), z = sigmoid(a_z + b_z),
//   n = tanh(a_n + b_n * r), h' = (h - n) * z + n
// (or (n - h) * z + n, where the step subtracts the other way round). Op by
// op, each of those passes over the block's rows through memory; here a
// row's values stay in vector registers from its loads to its store. Every
// element is the same IEEE operations as the ops' (the vector sigmoid and
// tanh of VectorMathInline.h; a sum or product of the same two floats), so
// the results are the same bits (a NaN where the ops give a NaN, its
// payload not promised).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_GRUGATES_H
#define CELLRUN_BACKEND_CPU_GRUGATES_H

#include "CpuIsa.h"

#include <cstdint>

namespace cellrun::cpu {

/// One block of rows: row r's projections are a[r] and b[r] (at least
/// `3 * hidden` floats each), the part p (reset, update, new) of each
/// `hidden` floats from aOffsets[p] and bOffsets[p]; its state h[r]
/// (`hidden` floats). Row r of h' goes to out at r * hidden, or to
/// outRows[r] when that is given. With hFirst the step subtracts n from h,
/// otherwise h from n.
struct GruGateRows {
  const float *const *a = nullptr;
  const float *const *b = nullptr;
  const float *const *h = nullptr;
  float *out = nullptr;
  float *const *outRows = nullptr;
  int64_t rows = 0;
  int64_t hidden = 0;
  int64_t aOffsets[3] = {0, 0, 0};
  int64_t bOffsets[3] = {0, 0, 0};
  bool hFirst = true;
};

void gruGateRows(const GruGateRows &block, CpuIsa isa = detectCpuIsa());

namespace detail {
void gruGateRowsAvx512(const GruGateRows &block);
void gruGateRowsAvx2(const GruGateRows &block);
void gruGateRowsGeneric(const GruGateRows &block);
} // namespace detail

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_GRUGATES_H
