//===- RowReductions.h - A row's sum and largest element -------*- C++ -*-===//
//
// The region interpreter's reductions of a whole row into one value (a
// layer norm's means, a softmax's max and sum): in kRowLanes partial
// results, lane l taking the elements l mod kRowLanes in order, combined
// pairwise at the end. The order is fixed by the code (no reassociation, no
// contraction), so a row gets the same bits whatever its neighbours, its
// task's size and the CPU; and the lanes do not wait on each other, as one
// running sum waits on every add.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_ROWREDUCTIONS_H
#define CELLRUN_BACKEND_CPU_ROWREDUCTIONS_H

#include <cstdint>

namespace cellrun::cpu {

constexpr int64_t kRowLanes = 16;

/// The sum of `count` contiguous floats.
float rowSum(const float *x, int64_t count);
/// The largest of `count` (at least 1) contiguous floats; NaN when any is
/// NaN (as torch.max).
float rowMax(const float *x, int64_t count);

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_ROWREDUCTIONS_H
