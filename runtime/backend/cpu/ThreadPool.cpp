//===- ThreadPool.cpp - Workers for the CPU backend ----------------------===//
#include "ThreadPool.h"

#include "StreamingCopy.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CELL_PAUSE() _mm_pause()
#else
#define CELL_PAUSE() std::this_thread::yield()
#endif

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
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
}

void ThreadPool::workerLoop(unsigned worker) {
  uint64_t seen = 0;
  for (;;) {
    // Poll for a while, then sleep until the next call (or the end).
    auto spinUntil = std::chrono::steady_clock::now() +
                     std::chrono::microseconds(kSpinMicroseconds);
    while (generation_.load(std::memory_order_acquire) == seen &&
           std::chrono::steady_clock::now() < spinUntil)
      for (int i = 0; i < 64; ++i)
        CELL_PAUSE();
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      ++sleeping_;
      start_.wait(lock, [&] {
        return generation_.load(std::memory_order_acquire) != seen;
      });
      --sleeping_;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_)
        return;
    }
    seen = generation_.load(std::memory_order_acquire);
    runShare(worker);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::runShare(unsigned worker) {
  if (grain_ > 0) {
    // Guided: a take is a share of what is left (whole grains), down to
    // one grain at the end, so the workers finish close together.
    int64_t begin = next_.load(std::memory_order_relaxed);
    for (;;) {
      if (begin >= count_)
        return;
      int64_t share = (count_ - begin) / (2 * int64_t(size()));
      int64_t take = std::max(grain_, share / grain_ * grain_);
      if (!next_.compare_exchange_weak(begin, begin + take,
                                       std::memory_order_relaxed))
        continue; // begin is now what another worker left
      (*chunk_)(worker, begin, std::min(count_, begin + take));
      begin = next_.load(std::memory_order_relaxed);
    }
  }
  int64_t begin, end;
  chunkBounds(count_, size(), worker, begin, end);
  if (begin < end)
    (*chunk_)(worker, begin, end);
}

void ThreadPool::parallelFor(int64_t count, const Chunk &chunk, int64_t grain) {
  if (workers_.empty() || count <= 1) {
    if (count > 0)
      chunk(0, 0, count);
    return;
  }
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    chunk_ = &chunk;
    count_ = count;
    grain_ = grain > 0 && grain < count ? grain : 0;
    next_.store(0, std::memory_order_relaxed);
    pending_.store(static_cast<unsigned>(workers_.size()),
                   std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    wake = sleeping_ > 0;
  }
  if (wake)
    start_.notify_all();
  runShare(0);
  while (pending_.load(std::memory_order_acquire) != 0)
    CELL_PAUSE();
}

void cellrun::cpu::copyRows(const std::vector<RowCopy> &rows, ThreadPool *pool,
                            size_t minBytes) {
  int64_t count = static_cast<int64_t>(rows.size());
  size_t bytes = 0;
  for (const RowCopy &row : rows)
    bytes += row.bytes;
  bool stream = streamsCopiesOf(bytes);
  auto copy = [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k)
      copyRow(rows[k].to, rows[k].from, rows[k].bytes, stream);
    if (stream)
      streamFence(); // before the worker reports its chunk done
  };
  if (!pool || pool->size() == 1 || bytes < minBytes) {
    copy(0, count);
    return;
  }
  // Guided chunks taken in turn: a worker on a busier core takes fewer.
  pool->parallelFor(
      count, [&](unsigned, int64_t begin, int64_t end) { copy(begin, end); },
      8);
}
