//===- CudaEmulation.h - Run generated CUDA kernels on the CPU --*- C++ -*-===//
//
// Force-included (-include) when the CUDA source cellc generates is compiled
// as C++ for tests: it supplies what the kernels use from CUDA (thread and
// block indices, __shared__, __syncthreads, warp shuffles, a few
// intrinsics) so that every thread of a launch runs on the CPU. Kernels
// without barriers run their threads one after another; kernels with
// barriers or shuffles run a block's threads as fibers on the launching
// thread, switching at every barrier. Blocks run one after another, which is
// why __shared__ can be a plain static.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_CUDAEMULATION_H
#define CELL_TEST_CUDAEMULATION_H

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <math.h>
#include <memory>
#include <sys/mman.h>
#include <ucontext.h>
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
inline void __threadfence_system() {}
inline unsigned atomicAdd(unsigned *address, unsigned value) {
  return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
}
template <typename T> T __ldcg(const T *address) { return *address; }
template <typename T> T __ldcs(const T *address) { return *address; }

/// The threads of an emulated block with barriers or shuffles: one fiber
/// (ucontext) each, all on the launching thread. A fiber runs until it
/// waits at a barrier or returns; when none can run, the scheduler releases
/// the barriers every waiting thread has reached (a warp's, when all of the
/// warp's live lanes wait there; the block's, when all live threads do).
/// Switching fibers costs far less than waking OS threads, which took most
/// of the emulation tests' time.
struct CellEmulationFibers {
  enum class State { Runnable, AtWarpBarrier, AtBlockBarrier, Finished };
  struct Fiber {
    ucontext_t context;
    State state = State::Runnable;
  };
  static constexpr size_t kStackBytes = 256 * 1024;

  std::function<void()> kernel;
  std::vector<Fiber> fibers;
  /// Each fiber's stack, a guard page below it; kept across launches.
  struct Stack {
    char *mapping = nullptr;
    Stack() {
      void *at =
          mmap(nullptr, kGuardBytes + kStackBytes, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (at == MAP_FAILED || mprotect(at, kGuardBytes, PROT_NONE) != 0)
        fail("no memory for a fiber's stack");
      mapping = static_cast<char *>(at);
    }
    ~Stack() { munmap(mapping, kGuardBytes + kStackBytes); }
    Stack(const Stack &) = delete;
    Stack &operator=(const Stack &) = delete;
    char *base() const { return mapping + kGuardBytes; }
  };
  static constexpr size_t kGuardBytes = 4096;
  std::vector<std::unique_ptr<Stack>> stacks;
  std::vector<float> shuffleSlots;
  ucontext_t scheduler;
  unsigned current = 0;

  static CellEmulationFibers &ofThisThread() {
    static thread_local CellEmulationFibers fibers;
    return fibers;
  }

  static void entry() {
    CellEmulationFibers &self = ofThisThread();
    self.kernel();
    self.fibers[self.current].state = State::Finished;
    // Returning resumes uc_link, the scheduler.
  }

  [[noreturn]] static void fail(const char *problem) {
    std::fprintf(stderr, "CUDA emulation: %s (block %u, thread %u)\n", problem,
                 blockIdx.x, threadIdx.x);
    std::abort();
  }

  /// Called by the running fiber: wait at a barrier until released.
  void wait(State barrier) {
    if (!kernel)
      fail("a barrier or shuffle outside a launch with barriers");
    fibers[current].state = barrier;
    swapcontext(&fibers[current].context, &scheduler);
  }

  /// Runs one block of `threads` threads to the end.
  void runBlock(unsigned threads) {
    fibers.assign(threads, Fiber());
    shuffleSlots.assign(threads, 0.0f);
    while (stacks.size() < threads)
      stacks.push_back(std::make_unique<Stack>());
    for (unsigned t = 0; t < threads; ++t) {
      Fiber &fiber = fibers[t];
      getcontext(&fiber.context);
      fiber.context.uc_stack.ss_sp = stacks[t]->base();
      fiber.context.uc_stack.ss_size = kStackBytes;
      fiber.context.uc_link = &scheduler;
      makecontext(&fiber.context, &CellEmulationFibers::entry, 0);
    }
    for (;;) {
      bool ran = false;
      for (unsigned t = 0; t < threads; ++t) {
        if (fibers[t].state != State::Runnable)
          continue;
        ran = true;
        current = t;
        threadIdx.x = t;
        swapcontext(&scheduler, &fibers[t].context);
      }
      if (ran)
        continue;
      if (!release(threads))
        return;
    }
  }

  /// Releases the barriers all waiting threads have reached; false when every
  /// thread has finished. A thread waiting for one that never comes aborts.
  bool release(unsigned threads) {
    bool live = false, released = false, allAtBlock = true;
    for (unsigned warp = 0; warp < threads; warp += 32) {
      unsigned end = warp + 32 < threads ? warp + 32 : threads;
      bool warpWaits = false, warpAll = true, warpFinished = false;
      for (unsigned t = warp; t < end; ++t) {
        State state = fibers[t].state;
        warpFinished |= state == State::Finished;
        if (state == State::Finished)
          continue;
        live = true;
        warpWaits |= state == State::AtWarpBarrier;
        warpAll &= state == State::AtWarpBarrier;
        allAtBlock &= state == State::AtBlockBarrier;
      }
      // A full-mask shuffle needs every lane of the warp; threads that
      // have returned do not count at the block's barriers, as in CUDA.
      if (warpWaits && warpFinished)
        fail("a warp shuffle some of whose lanes have returned");
      if (warpWaits && warpAll) {
        for (unsigned t = warp; t < end; ++t)
          if (fibers[t].state == State::AtWarpBarrier)
            fibers[t].state = State::Runnable;
        released = true;
      }
    }
    if (!live)
      return false;
    if (released)
      return true;
    if (allAtBlock) {
      for (Fiber &fiber : fibers)
        if (fiber.state == State::AtBlockBarrier)
          fiber.state = State::Runnable;
      return true;
    }
    fail("threads wait at barriers no other thread reaches");
  }
};

inline void __syncthreads() {
  CellEmulationFibers::ofThisThread().wait(
      CellEmulationFibers::State::AtBlockBarrier);
}

/// Warp shuffles: the calling thread's warp exchanges values through one
/// slot a thread of the block. Every lane of the warp must call it, as the
/// full mask the kernels pass says.
inline float __shfl_xor_sync(unsigned, float value, int laneMask) {
  CellEmulationFibers &fibers = CellEmulationFibers::ofThisThread();
  unsigned thread = threadIdx.x;
  fibers.shuffleSlots[thread] = value;
  fibers.wait(CellEmulationFibers::State::AtWarpBarrier);
  float other = fibers.shuffleSlots[(thread & ~31u) |
                                    ((thread & 31u) ^ unsigned(laneMask))];
  fibers.wait(CellEmulationFibers::State::AtWarpBarrier);
  return other;
}

/// Runs `kernel` (a call of the kernel with its arguments) for every thread
/// of `grid` blocks of `block` threads, one block after another: one thread
/// after another without barriers, else as fibers (CellEmulationFibers).
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
  CellEmulationFibers &fibers = CellEmulationFibers::ofThisThread();
  if (fibers.kernel)
    CellEmulationFibers::fail("a launch inside a launch");
  fibers.kernel = kernel;
  for (unsigned b = 0; b < grid; ++b) {
    blockIdx.x = b;
    fibers.runBlock(block);
  }
  fibers.kernel = nullptr;
}

#endif // CELL_TEST_CUDAEMULATION_H
