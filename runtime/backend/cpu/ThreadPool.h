//===- ThreadPool.h - Workers for the CPU backend --------------*- C++ -*-===//
//
// A fixed set of threads that split a task's work (GEMM panels, kernel rows)
// among themselves. parallelFor hands chunk w of the range to worker w (the
// caller is worker 0), or with a grain lets the workers take chunks in turn
// (guided: large first, one grain at the end), and returns when every chunk
// is done; no allocation per call. A task runs several parallelFor calls a few
// microseconds apart, so idle workers spin for a short while
// (kSpinMicroseconds) before they sleep on a condition variable: waking a
// sleeping thread costs tens of microseconds, as much as a whole small kernel.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_THREADPOOL_H
#define CELLRUN_BACKEND_CPU_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cellrun::cpu {

class ThreadPool {
public:
  /// `threads` >= 1 workers in all, the calling thread included.
  explicit ThreadPool(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

  using Chunk =
      std::function<void(unsigned worker, int64_t begin, int64_t end)>;
  /// Splits [0, count) into at most size() contiguous chunks and runs them
  /// in parallel. With a `grain`, the workers instead take chunks in turn
  /// until none is left (a worker on a slower or busier core, or still
  /// waking up, then takes fewer): each take a share of what is left in
  /// whole grains, down to one grain at the end, so that the workers
  /// finish close together; a grain not below `count` splits as without
  /// one. Not reentrant: one parallelFor at a time per pool.
  void parallelFor(int64_t count, const Chunk &chunk, int64_t grain = 0);

  /// How long an idle worker polls for the next call before sleeping.
  static constexpr int kSpinMicroseconds = 200;

private:
  void workerLoop(unsigned worker);
  /// Runs worker `worker`'s chunks of the current call.
  void runShare(unsigned worker);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  const Chunk *chunk_ = nullptr;
  int64_t count_ = 0, grain_ = 0;
  std::atomic<int64_t> next_{0}; // the next chunk taken, with a grain
  std::atomic<uint64_t> generation_{0};
  std::atomic<unsigned> pending_{0};
  unsigned sleeping_ = 0; // guarded by mutex_
  bool stopping_ = false; // guarded by mutex_
};

/// One row to copy: `bytes` from `from` to `to`.
struct RowCopy {
  const void *from;
  void *to;
  size_t bytes;
};

/// Copies every row, split among `pool`'s workers when they come to at
/// least `minBytes` in all (the rows a task reads back into the results: a
/// hidden-1024 step's 4 KB a row), else on the calling thread.
void copyRows(const std::vector<RowCopy> &rows, ThreadPool *pool,
              size_t minBytes = 256 * 1024);

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_THREADPOOL_H
