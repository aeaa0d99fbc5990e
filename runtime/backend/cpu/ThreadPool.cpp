//===- ThreadPool.cpp - Workers for the CPU backend ----------------------===//
#include "ThreadPool.h"

using namespace cellrun::cpu;

/// The part of [0, count) that worker `w` of `workers` handles.
static void chunkBounds(int64_t count, unsigned workers, unsigned w,
                        int64_t &begin, int64_t &end) {
  int64_t size = (count + workers - 1) / workers;
  begin = std::min<int64_t>(count, size * w);
  end = std::min<int64_t>(count, begin + size);
}

ThreadPool::ThreadPool(unsigned threads) {
  for (unsigned w = 1; w < std::max(threads, 1u); ++w)
    workers_.emplace_back([this, w] { workerLoop(w); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
}

void ThreadPool::workerLoop(unsigned worker) {
  uint64_t seen = 0;
  for (;;) {
    const Chunk *chunk;
    int64_t count;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_)
        return;
      seen = generation_;
      chunk = chunk_;
      count = count_;
    }
    int64_t begin, end;
    chunkBounds(count, size(), worker, begin, end);
    if (begin < end)
      (*chunk)(worker, begin, end);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--pending_ == 0)
      done_.notify_one();
  }
}

void ThreadPool::parallelFor(int64_t count, const Chunk &chunk) {
  if (workers_.empty() || count <= 1) {
    if (count > 0)
      chunk(0, 0, count);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    chunk_ = &chunk;
    count_ = count;
    pending_ = static_cast<unsigned>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  int64_t begin, end;
  chunkBounds(count, size(), 0, begin, end);
  if (begin < end)
    chunk(0, begin, end);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
}
