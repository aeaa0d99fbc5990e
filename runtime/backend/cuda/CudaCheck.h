//===- CudaCheck.h - CUDA and cuBLASLt errors as Status ---------*- C++ -*-===//
//
// Every CUDA runtime and cuBLASLt call of the CUDA backend goes through
// CELL_CUDA_TRY / CELL_CUBLAS_TRY, which turn a failure into a Status naming
// the call, the error and the file and line, and return it.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CUDA_CUDACHECK_H
#define CELLRUN_BACKEND_CUDA_CUDACHECK_H

#include "CublasLtLibrary.h"
#include "cellrun/Status.h"

#include <cuda_runtime_api.h>

#include <string>

namespace cellrun::cuda {

/// Errors after which the CUDA context is unusable until the process ends
/// (every later call returns them): the executor is lost.
inline bool isStickyCudaError(cudaError_t error) {
  switch (error) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorLaunchTimeout:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorAssert:
  case cudaErrorECCUncorrectable:
#if CUDART_VERSION >= 12000
  case cudaErrorContained:
  case cudaErrorExternalDevice:
#endif
    return true;
  default:
    return false;
  }
}

inline Status cudaFailure(cudaError_t error, const char *call, const char *file,
                          int line) {
  cudaGetLastError(); // clear a non-sticky error so later calls can go on
  std::string where = std::string(file) + ":" + std::to_string(line);
  size_t slash = where.find_last_of('/');
  if (slash != std::string::npos)
    where = where.substr(slash + 1);
  bool sticky = isStickyCudaError(error);
  StatusCode code = error == cudaErrorMemoryAllocation
                        ? StatusCode::ResourceExhausted
                    : sticky || error == cudaErrorNoDevice ||
                            error == cudaErrorInsufficientDriver
                        ? StatusCode::Unavailable
                        : StatusCode::Internal;
  return Status(code, std::string(call) +
                          " failed: " + cudaGetErrorName(error) + " (" +
                          cudaGetErrorString(error) + ") at " + where +
                          (sticky ? "; the device is lost until the process "
                                    "restarts"
                                  : ""));
}

inline Status cublasFailure(cublasStatus_t error, const char *call,
                            const char *file, int line) {
  std::string where = std::string(file) + ":" + std::to_string(line);
  size_t slash = where.find_last_of('/');
  if (slash != std::string::npos)
    where = where.substr(slash + 1);
  StatusCode code =
      error == CUBLAS_STATUS_NOT_SUPPORTED  ? StatusCode::Unsupported
      : error == CUBLAS_STATUS_ALLOC_FAILED ? StatusCode::ResourceExhausted
                                            : StatusCode::Internal;
  std::string name = call;
  if (name.rfind("lt().", 0) == 0)
    name = name.substr(5); // called through the loaded table
  return Status(code, name + " failed: " + lt().cublasLtGetStatusName(error) +
                          " (" + lt().cublasLtGetStatusString(error) + ") at " +
                          where);
}

} // namespace cellrun::cuda

#define CELL_CUDA_TRY(call)                                                    \
  do {                                                                         \
    cudaError_t cellCudaError_ = (call);                                       \
    if (cellCudaError_ != cudaSuccess)                                         \
      return ::cellrun::cuda::cudaFailure(cellCudaError_, #call, __FILE__,     \
                                          __LINE__);                           \
  } while (false)

#define CELL_CUBLAS_TRY(call)                                                  \
  do {                                                                         \
    cublasStatus_t cellCublasError_ = (call);                                  \
    if (cellCublasError_ != CUBLAS_STATUS_SUCCESS)                             \
      return ::cellrun::cuda::cublasFailure(cellCublasError_, #call, __FILE__, \
                                            __LINE__);                         \
  } while (false)

/// For functions returning Result<T>: a failed Status converts implicitly.
#define CELL_TRY(expression)                                                   \
  do {                                                                         \
    ::cellrun::Status cellStatus_ = (expression);                              \
    if (!cellStatus_.isOk())                                                   \
      return cellStatus_;                                                      \
  } while (false)

#endif // CELLRUN_BACKEND_CUDA_CUDACHECK_H
