//===- GridDependency.h - Kernels that let the next start early -*- C++ -*-===//
//
// Part of the contract between cellc and cellrun, like RowCopyKernel.h:
// every kernel of a cell's CUDA program starts with
// cellrun_grid_dependency(), which waits until the grids before it in the
// stream have finished and their writes are visible (griddepcontrol.wait),
// then lets the next grid be scheduled (griddepcontrol.launch_dependents).
// Launched with cudaLaunchAttributeProgrammaticStreamSerialization
// (programmatic dependent launch, sm_90 on), a kernel's blocks are then
// resident and waiting while the kernel before it finishes, instead of being
// launched after it: the gap between a step's small kernels shrinks. Without
// that attribute, or before sm_90, both instructions do nothing, so the same
// code runs either way. Code built with it lists the marker kernel
// kGridDependencyMarkerName among its kernels; cellrun launches that way
// only code that lists it (older code could read a buffer before the kernel
// that writes it has finished), and not with CELLRUN_CUDA_PDL=0.
//
//===----------------------------------------------------------------------===//
#ifndef CELLPACK_GRIDDEPENDENCY_H
#define CELLPACK_GRIDDEPENDENCY_H

namespace cellpack {

constexpr const char *kGridDependencyMarkerName =
    "cellrun_waits_for_prior_grids";

constexpr const char *kGridDependencySource = R"cuda(
// Support (programmatic dependent launch): every kernel starts by waiting for
// the grids before it, then lets the next one be scheduled.
#ifndef CELLRUN_GRID_DEPENDENCY_DEFINED
#define CELLRUN_GRID_DEPENDENCY_DEFINED
static __device__ __forceinline__ void cellrun_grid_dependency() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// Listed among the code's kernels: its kernels all call the function above.
extern "C" __global__ void cellrun_waits_for_prior_grids() {}
#endif
)cuda";

} // namespace cellpack

#endif // CELLPACK_GRIDDEPENDENCY_H
