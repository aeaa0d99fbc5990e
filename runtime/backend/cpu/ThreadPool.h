//===- ThreadPool.h - Workers for the CPU backend --------------*- C++ -*-===//
//
// A fixed set of threads that split the rows of a kernel step among
// themselves. parallelFor hands chunk w of the range to worker w (the caller
// is worker 0) and returns when every chunk is done; no allocation per call.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_THREADPOOL_H
#define CELLRUN_BACKEND_CPU_THREADPOOL_H

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
  /// in parallel. Not reentrant: one parallelFor at a time per pool.
  void parallelFor(int64_t count, const Chunk &chunk);

private:
  void workerLoop(unsigned worker);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const Chunk *chunk_ = nullptr;
  int64_t count_ = 0;
  uint64_t generation_ = 0;
  unsigned pending_ = 0;
  bool stopping_ = false;
};

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_THREADPOOL_H
