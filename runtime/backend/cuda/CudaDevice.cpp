//===- CudaDevice.cpp - Probing for a CUDA device ------------------------===//
//
// probeCudaDevice through the CUDA runtime (the rest of Device.h is
// backend/Device.cpp). A device counts once cuBLASLt, which every CUDA
// backend needs, has been opened too (CublasLtLibrary.h).
//
//===----------------------------------------------------------------------===//
#include "CublasLtLibrary.h"
#include "cellrun/Device.h"

#include <cuda_runtime_api.h>

using namespace cellrun;

Result<CudaDeviceInfo> cellrun::probeCudaDevice(int index) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError(); // clear the sticky error for later calls
    return Status(StatusCode::Unavailable,
                  std::string("no CUDA device: ") + cudaGetErrorString(error));
  }
  if (index < 0 || index >= count)
    return Status(StatusCode::Unavailable,
                  "no CUDA device: device " + std::to_string(index) +
                      " asked for, " + std::to_string(count) + " present");
  cudaDeviceProp properties;
  error = cudaGetDeviceProperties(&properties, index);
  if (error != cudaSuccess)
    return Status(StatusCode::Unavailable,
                  std::string("no CUDA device: cudaGetDeviceProperties: ") +
                      cudaGetErrorString(error));
  CudaDeviceInfo info;
  info.index = index;
  info.name = properties.name;
  info.computeCapability = properties.major * 10 + properties.minor;
  info.memoryBytes = properties.totalGlobalMem;
  info.multiprocessors = properties.multiProcessorCount;
  // Without cuBLASLt no backend can be made on it: auto takes the CPU.
  if (auto loaded = cuda::loadCublasLt(); !loaded.ok())
    return Status(StatusCode::Unavailable,
                  "no CUDA device: " + info.describe() + " is present, but " +
                      loaded.status().message());
  return info;
}
