//===- BenchCommon.h - Helpers shared by the benchmark programs -*- C++ -*-===//
//
// Median timing over repetitions, the bytes of a tensor row, and the largest
// GEMM a batch plan performs (the shape of the floors the tasks are compared
// with).
//
//===----------------------------------------------------------------------===//
#ifndef CELL_BENCH_BENCHCOMMON_H
#define CELL_BENCH_BENCHCOMMON_H

#include "BenchTiming.h"
#include "artifact/Artifact.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace cellbench {
using namespace cellrun;
using Clock = std::chrono::steady_clock;

/// Median seconds of `run` over repetitions lasting at least `minSeconds`.
template <typename Run>
inline double medianSeconds(Run run, double minSeconds) {
  return timeCalls(run, minSeconds).median;
}

inline size_t rowBytes(const cellpack::TensorSpec &spec) {
  size_t bytes = dtypeSize(spec.dtype());
  if (spec.row_shape())
    for (int64_t dim : *spec.row_shape())
      bytes *= static_cast<size_t>(dim);
  return bytes;
}

/// The largest GEMM of a plan (m, n, k), from its GEMM steps or, for a
/// single-kernel step, from the Gemm ops of its region.
inline void largestGemm(const cellpack::BatchPlan &plan, int64_t &m, int64_t &n,
                        int64_t &k) {
  m = n = k = 0;
  auto consider = [&](int64_t gm, int64_t gn, int64_t gk) {
    if (gm * gn * gk > m * n * k) {
      m = gm;
      n = gn;
      k = gk;
    }
  };
  for (const cellpack::TaskStep *step : *plan.steps()) {
    if (const auto *gemm = step->step_as_GemmStep())
      consider(gemm->m(), gemm->n(), gemm->k());
    if (const auto *kernel = step->step_as_KernelStep())
      for (const cellpack::PortableOp *op : *kernel->region()->ops())
        if (op->opcode() == cellpack::OpCode::Gemm) {
          const auto *values = kernel->region()->values();
          const auto *b = values->Get(op->operands()->Get(1))->shape();
          consider(plan.batch_size(), b->Get(op->trans_b() ? 0 : 1),
                   b->Get(op->trans_b() ? 1 : 0));
        }
  }
}

} // namespace cellbench

#endif // CELL_BENCH_BENCHCOMMON_H
