//===- LstmGates.h - An LSTM's element-wise step in one pass ----*- C++ -*-===//
//
// The element-wise part of an LSTM step as the region interpreter finds it
// in a kernel (RegionFusion.cpp): the pre-activations of the four gates
// (optionally the sum of two operands), sigmoid of the input, forget and
// output gates, tanh of the candidate, c' = f * c + i * g and
// h' = o * tanh(c'). Op by op, each of those passes over the block's rows
// through memory; here each row's gates stay in vector registers from its
// loads to its two stores. Every element is the same IEEE operations as the
// ops' (the same vector sigmoid and tanh, VectorMathInline.h; a sum or
// product of the same two floats), so the results are the same bits (a NaN
// where the ops give a NaN, its payload not promised).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_LSTMGATES_H
#define CELLRUN_BACKEND_CPU_LSTMGATES_H

#include "CpuIsa.h"

#include <cstdint>

namespace cellrun::cpu {
class PackedMatrix;

/// The pre-activations' addend `a` made in the loop rather than read
/// (LstmGateGemm.cpp): row r's is alpha * (rows[r] x weights), then
/// + beta * bias where there is a bias, as PackedGemm computes a row on the
/// same instruction set (PackedGemm.h), so the same bits as the GEMM step
/// it stands for. Rows of at most
/// kMaxGateGemmColumns, a multiple of 16.
struct GateGemm {
  const float *const *rows = nullptr; // the block's rows of A (k floats)
  const PackedMatrix *weights = nullptr;
  float alpha = 1.0f, beta = 0.0f;
  const float *bias = nullptr; // one a column, or none
};
constexpr int64_t kMaxGateGemmColumns = 128;

/// One block of rows: row r's pre-activations are a[r] (plus b[r] when b is
/// given), `4 * hidden` floats or more, the gate g's `hidden` of them
/// starting at offsets[g] (gates in the order input, forget, candidate,
/// output); its cell state c[r] (`hidden` floats). Row r of the results
/// goes to cOut and hOut at r * hidden, or to cOutRows[r] and hOutRows[r]. A
/// product or sum is the same number whichever way round the ops take its
/// operands (of two NaNs, which one's payload is passed on is not promised,
/// here or by the ops).
struct LstmGateRows {
  const float *const *a = nullptr;
  const float *const *b = nullptr;
  const float *const *c = nullptr;
  float *cOut = nullptr;
  float *hOut = nullptr;
  /// When given, row r's results go to cOutRows[r] and hOutRows[r] (the
  /// task's pool rows) instead.
  float *const *cOutRows = nullptr;
  float *const *hOutRows = nullptr;
  /// When given, row r's results are written to cCopyRows[r] and
  /// hCopyRows[r] too, where those are not null: a request's own results,
  /// the same floats as its pool rows, with no copy after the task. Where a
  /// row is one to four whole cache lines (hidden 16, 32, 48 or 64) and its
  /// copies start on a line, the vector loops write them with non-temporal
  /// stores (lines this core will not read soon, so not read in first: on
  /// an EPYC VM about 30 ns a row-step less in `cellrun run` than
  /// prefetching them); lstmGateRows ends with a store fence.
  float *const *cCopyRows = nullptr;
  float *const *hCopyRows = nullptr;
  int64_t rows = 0;
  int64_t hidden = 0;
  int64_t offsets[4] = {0, 0, 0, 0};
  /// When given, `a` is made in the loop (GateGemm), not read.
  const GateGemm *gemm = nullptr;
  /// Rows from the first whose data may be asked for ahead (0: `rows`): a
  /// part of a larger block prefetches into the rest of it.
  int64_t prefetchRows = 0;
};

void lstmGateRows(const LstmGateRows &block, CpuIsa isa = detectCpuIsa());

namespace detail {
/// Rows ahead whose gates and cell state the loop asks for before a row is
/// computed: a task's rows lie scattered over the pools and a table (not a
/// stream the processor would prefetch by itself), and one row's
/// activations take long enough to hide the next rows' loads. The
/// hidden-16 LSTM's tasks in `cellrun run` took 103 ns a row-step with 4 or
/// 8 rows ahead against 111 with none (median of 8 alternating runs).
constexpr int64_t kLstmRowsAhead = 8;
/// Rows ahead whose results' lines (LstmGateRows::hCopyRows) the loop asks
/// for: lines of the requests' results, cold, so further ahead.
constexpr int64_t kCopyRowsAhead = 16;
/// lstmGateRows of a block with a GateGemm, part by part: the GEMM's rows
/// (AVX-512 and AVX2: in registers, A's rows and the weights read in
/// place; the portable form: packedGemmGathered) into a small buffer, then
/// the gates.
void lstmGateRowsWithGemm(const LstmGateRows &block, CpuIsa isa);
/// lstmGateRows without its closing store fence (a part of a block).
void lstmGateRowsUnfenced(const LstmGateRows &block, CpuIsa isa);
} // namespace detail

namespace detail {
void lstmGateRowsAvx512(const LstmGateRows &block);
void lstmGateRowsAvx2(const LstmGateRows &block);
void lstmGateRowsGeneric(const LstmGateRows &block);
} // namespace detail

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_LSTMGATES_H
