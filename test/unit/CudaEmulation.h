//===- CudaEmulation.h - Run generated CUDA kernels on the CPU --*- C++ -*-===//
//
// Force-included (-include) when the CUDA source cellc generates is compiled
// as C++ for tests: it supplies what the kernels use from CUDA (thread and
// block indices, __shared__, __syncthreads, warp shuffles, a few
// intrinsics) so that every thread of a launch runs on the CPU. Kernels
// without barriers run their threads one after another; kernels with
// barriers or shuffles get one std::thread per CUDA thread of a block, which
// runs that thread of every block. Blocks run one after another, which is
// why __shared__ can be a plain static.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_CUDAEMULATION_H
#define CELL_TEST_CUDAEMULATION_H

#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <math.h>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

struct dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}
struct uint4 {
  unsigned x, y, z, w;
};

inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float __int_as_float(unsigned bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
inline double __longlong_as_double(long long bits) {
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// Blocks run one after another and their threads share the CPU's
/// coherent memory: fences are no-ops, atomics are the compiler's.
inline void __threadfence() {}
inline unsigned atomicAdd(unsigned *address, unsigned value) {
  return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
}
template <typename T> T __ldcg(const T *address) { return *address; }
template <typename T> T __ldcs(const T *address) { return *address; }

/// A reusable barrier for the threads of one emulated block.
class CellEmulationBarrier {
public:
  explicit CellEmulationBarrier(unsigned threads) : threads_(threads) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    unsigned generation = generation_;
    if (++arrived_ == threads_) {
      arrived_ = 0;
      ++generation_;
      condition_.notify_all();
      return;
    }
    condition_.wait(lock, [&] { return generation != generation_; });
  }

private:
  std::mutex mutex_;
  std::condition_variable condition_;
  unsigned threads_, arrived_ = 0, generation_ = 0;
};
inline CellEmulationBarrier *cellEmulationBarrier = nullptr;
inline void __syncthreads() { cellEmulationBarrier->wait(); }

/// Warp shuffles: the calling thread's warp (its own barrier) exchanges
/// values through one slot a thread of the block. Every lane of the warp
/// must call it, as the full mask the kernels pass says.
inline thread_local CellEmulationBarrier *cellEmulationWarpBarrier = nullptr;
inline float *cellEmulationShuffleSlots = nullptr;
inline float __shfl_xor_sync(unsigned, float value, int laneMask) {
  unsigned thread = threadIdx.x;
  cellEmulationShuffleSlots[thread] = value;
  cellEmulationWarpBarrier->wait();
  float other =
      cellEmulationShuffleSlots[(thread & ~31u) |
                                ((thread & 31u) ^ unsigned(laneMask))];
  cellEmulationWarpBarrier->wait();
  return other;
}

/// Runs `kernel` (a call of the kernel with its arguments) for every thread
/// of `grid` blocks of `block` threads. With barriers, `block` std::threads
/// run every block in turn and meet between blocks (so that no thread starts
/// a block while another still uses the previous block's __shared__
/// statics): one thread per CUDA thread of a block, not per CUDA thread of
/// the grid.
template <typename Kernel>
void cellEmulateLaunch(unsigned grid, unsigned block, bool usesBarrier,
                       Kernel kernel) {
  blockDim.x = block;
  gridDim.x = grid;
  if (!usesBarrier) {
    for (unsigned b = 0; b < grid; ++b) {
      blockIdx.x = b;
      for (unsigned t = 0; t < block; ++t) {
        threadIdx.x = t;
        kernel();
      }
    }
    return;
  }
  CellEmulationBarrier barrier(block), blockEnd(block);
  cellEmulationBarrier = &barrier;
  std::vector<std::unique_ptr<CellEmulationBarrier>> warps;
  for (unsigned first = 0; first < block; first += 32)
    warps.push_back(std::make_unique<CellEmulationBarrier>(
        block - first < 32 ? block - first : 32));
  std::vector<float> slots(block);
  cellEmulationShuffleSlots = slots.data();
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < block; ++t)
    threads.emplace_back([&, t] {
      threadIdx.x = t;
      cellEmulationWarpBarrier = warps[t / 32].get();
      for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        kernel();
        blockEnd.wait();
      }
    });
  for (std::thread &thread : threads)
    thread.join();
}

#endif // CELL_TEST_CUDAEMULATION_H
