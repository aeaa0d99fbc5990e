//===- CudaLaunch.h - Kernel launches, programmatic or plain ---*- C++ -*-===//
//
// Every kernel of a cell's code goes through launchKernel. With
// `programmatic`, it is a programmatic dependent launch
// (cudaLaunchAttributeProgrammaticStreamSerialization): its blocks may be
// scheduled while the kernel before it in the stream finishes, which is
// safe only for code whose kernels wait for the grids before them
// (GridDependency.h: CudaCell::launchesProgrammatically). On by default since
// it was measured on an H200 (up to 1.3 us less a step of the hidden-1024
// LSTM, never more); CELLRUN_CUDA_PDL=0 turns it off
// (programmaticLaunchRequested).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CUDA_CUDALAUNCH_H
#define CELLRUN_BACKEND_CUDA_CUDALAUNCH_H

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>

namespace cellrun::cuda {

/// True unless CELLRUN_CUDA_PDL=0 in the environment (read once).
inline bool programmaticLaunchRequested() {
  static const bool requested = [] {
    const char *value = std::getenv("CELLRUN_CUDA_PDL");
    return !(value && std::strcmp(value, "0") == 0);
  }();
  return requested;
}

/// Launches `kernel` with `args` (one pointer to each parameter's value)
/// on `stream`, as a programmatic dependent launch when `programmatic`.
inline cudaError_t launchKernel(cudaKernel_t kernel, dim3 grid, dim3 block,
                                void **args, cudaStream_t stream,
                                bool programmatic) {
  const void *function = reinterpret_cast<const void *>(kernel);
  if (!programmatic)
    return cudaLaunchKernel(function, grid, block, args, 0, stream);
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelExC(&config, function, args);
}

} // namespace cellrun::cuda

#endif // CELLRUN_BACKEND_CUDA_CUDALAUNCH_H
