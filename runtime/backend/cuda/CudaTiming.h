//===- CudaTiming.h - Mean time of work enqueued on a stream ---*- C++ -*-===//
//
// What the backend's contests time (cuBLASLt's proposals, the skinny GEMM
// kernels, a GEMM with its epilogue against the two launches): one warm-up,
// then a few back-to-back runs between two events on the stream; and the
// values their checks run on.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CUDA_CUDATIMING_H
#define CELLRUN_BACKEND_CUDA_CUDATIMING_H

#include "CudaCheck.h"

#include "base/FunctionRef.h"

namespace cellrun::cuda {

/// The mean time of `enqueue` (which enqueues one run on `stream`) over ten
/// runs after a warm-up (none with `warmUp` false: the caller has just run
/// it), in microseconds.
inline Result<float> timeEnqueuedMicros(cudaStream_t stream,
                                        FunctionRef<Status()> enqueue,
                                        bool warmUp = true) {
  constexpr int kRepetitions = 10;
  struct Events {
    cudaEvent_t start = nullptr, stop = nullptr;
    ~Events() {
      if (start)
        cudaEventDestroy(start);
      if (stop)
        cudaEventDestroy(stop);
    }
  } events;
  CELL_CUDA_TRY(cudaEventCreate(&events.start));
  CELL_CUDA_TRY(cudaEventCreate(&events.stop));
  if (warmUp)
    CELL_TRY(enqueue());
  CELL_CUDA_TRY(cudaEventRecord(events.start, stream));
  for (int r = 0; r < kRepetitions; ++r)
    CELL_TRY(enqueue());
  CELL_CUDA_TRY(cudaEventRecord(events.stop, stream));
  CELL_CUDA_TRY(cudaEventSynchronize(events.stop));
  float milliseconds = 0.0f;
  CELL_CUDA_TRY(cudaEventElapsedTime(&milliseconds, events.start, events.stop));
  return 1000.0f * milliseconds / kRepetitions;
}

/// The next of a fixed sequence of values in [-1, 1) (xorshift), which the
/// contests' checks run on (the same on every load).
inline float contestValue(uint32_t &state) {
  state ^= state << 13;
  state ^= state >> 17;
  state ^= state << 5;
  return static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
}

} // namespace cellrun::cuda

#endif // CELLRUN_BACKEND_CUDA_CUDATIMING_H
