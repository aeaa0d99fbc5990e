//===- NoCuda.cpp - A runtime built without CUDA --------------------------===//
//
// With CELL_ENABLE_CUDA=OFF the runtime has no CUDA backend and links no
// CUDA library: probing finds no device, and asking for the cuda backend
// says why, so `--device auto` runs on the CPU and `--device cuda` fails
// with a clear message.
//
//===----------------------------------------------------------------------===//
#include "Backend.h"

using namespace cellrun;

static Status noCudaInThisBuild() {
  return Status(StatusCode::Unavailable,
                "no CUDA device: this build of the runtime has no CUDA "
                "backend (configured with CELL_ENABLE_CUDA=OFF)");
}

Result<CudaDeviceInfo> cellrun::probeCudaDevice(int) {
  return noCudaInThisBuild();
}

Result<std::unique_ptr<Backend>>
cellrun::makeCudaBackend(std::shared_ptr<const LoadedArtifact>,
                         const ExecutorOptions &) {
  return noCudaInThisBuild();
}
