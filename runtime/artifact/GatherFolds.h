//===- GatherFolds.h - Gathers a GEMM could read in place ------*- C++ -*-===//
//
// In a plan, a kernel step that only copies rows of a state pool (its one
// op an identity, its input gathered by row index) into the dense A of the
// GEMM step right after it can be left out when the GEMM reads those rows
// where they lie: the CUDA backend's skinny GEMM kernels that gather A
// (SkinnyGemmKernel.h) do. This finds such pairs; the backend decides
// whether to fold each one from the kernel its GEMM chose.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_ARTIFACT_GATHERFOLDS_H
#define CELLRUN_ARTIFACT_GATHERFOLDS_H

#include "cellpack_generated.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cellrun {

struct GatherFold {
  size_t gatherStep;  // the kernel step that would be left out
  size_t gemmStep;    // the GEMM right after it, whose A it writes
  uint32_t cellInput; // the cell input whose pool rows A is
};

/// Every gather of `plan` its GEMM could read in place: the kernel step's
/// only op is an identity of its only input, fp32 rows of a cell input's
/// pool (gathered) written dense to the workspace value that is the next
/// step's GEMM's A (not transposed, the same shape), and no other step
/// reads any byte of that value.
std::vector<GatherFold> gatherFolds(const cellpack::BatchPlan &plan);

} // namespace cellrun

#endif // CELLRUN_ARTIFACT_GATHERFOLDS_H
