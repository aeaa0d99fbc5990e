//===- ArtifactChecks.h - Semantic checks of a cellpack Model ---*- C++ -*-===//
//
// The checks the loader runs after the FlatBuffers Verifier accepted the
// Model: everything the runtime later indexes or sizes with values from the
// file (weights, state pools, the workspace, kernel symbols, GEMM shapes)
// is checked here once, so that no later component reads out of bounds.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_ARTIFACT_ARTIFACTCHECKS_H
#define CELLRUN_ARTIFACT_ARTIFACTCHECKS_H

#include "cellrun/Status.h"

#include "cellpack_generated.h"

#include <string>
#include <string_view>
#include <unordered_set>

namespace cellrun::detail {

/// The first semantic problem of a structurally verified `model`, as a
/// DataLoss status whose message names the cell, batch size and step (but
/// not the file: the loader prefixes it), or Ok.
Status checkModelSemantics(const cellpack::Model &model);

/// The kernel symbols of one cell's code.
using KernelNameSet = std::unordered_set<std::string_view>;

/// The checks of the steps of `plan` (StepChecks.cpp), whose kernels must be
/// in `kernelNames`. Messages start with `where` ("cell 'c', batch size 8")
/// followed by ", step N".
Status checkPlanSteps(const cellpack::CellType &cell,
                      const cellpack::BatchPlan &plan,
                      const KernelNameSet &kernelNames,
                      const std::string &where);

} // namespace cellrun::detail

#endif // CELLRUN_ARTIFACT_ARTIFACTCHECKS_H
