//===- ResultWriter.cpp - `cellrun run`'s results, in input order ---------===//
#include "ResultWriter.h"
#include "RunReport.h"
#include "Shares.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <optional>

namespace cellrun::tool {

static size_t dataBytes(const RequestResult &result) {
  size_t bytes = sizeof(RequestResult);
  for (const OutputTensor &tensor : result.outputs)
    bytes += tensor.floats.size() * sizeof(float) +
             tensor.integers.size() * sizeof(int64_t);
  return bytes;
}

size_t ResultWriter::keptBytes(const RequestResult &result) const {
  return out_ ? dataBytes(result) : sizeof(RequestResult);
}

ResultWriter::ResultWriter(std::ostream *out, size_t budgetBytes,
                           bool flushWhenCaughtUp)
    : out_(out), budgetBytes_(budgetBytes),
      flushWhenCaughtUp_(flushWhenCaughtUp) {
  thread_ = std::thread([this] {
    // Serving comes first: on a busy machine the engine's and the
    // submitting threads get the cores, and this one what they leave. Its
    // mutex is held only to swap the inbox: a thread that waits for it
    // sleeps and frees a core for this one. Where the system refuses (it
    // never refuses a lower priority), the thread stays as it was.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)),
                kWriterNice);
    writeAll();
  });
}

ResultWriter::~ResultWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Without expectTotal (serving stopped early), what is in order is
    // written; the caller stops the engine first, so no result comes later.
    if (total_ == SIZE_MAX)
      abandoned_ = true;
  }
  arrivedOne_.notify_one();
  finish();
}

void ResultWriter::put(size_t index, RequestResult result) {
  // The caller is the engine's thread: it only appends the result (its
  // memory goes with it), and wakes the writing thread when needed (below).
  // Without an output the data is not kept: the writing thread frees it as
  // soon as it takes it, not in its turn (results held behind a long request
  // made the threads that allocate results fault in fresh pages: 11k a
  // 20000-request run), so only the record counts.
  // Without an output, the data only decides when the writing thread takes
  // the inbox (kDrainBytes), so it is counted at the mean of the results
  // taken so far (each counted until one is): the result's tensor records
  // were made on the submitting thread, and reading their sizes here cost
  // the engine's thread a cache miss a request (9 ns a row-step of the
  // hidden-16 LSTM). With an output, it counts against the budget: exact.
  size_t mean = meanDataBytes_.load(std::memory_order_relaxed);
  size_t data = !out_ && mean > 0 ? mean : dataBytes(result);
  size_t bytes = out_ ? data : sizeof(RequestResult);
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    inbox_.push_back({index, std::move(result)});
    bool drain =
        inbox_.size() == kDrainEvery ||
        (inboxBytes_ < kDrainBytes && inboxBytes_ + data >= kDrainBytes);
    inboxBytes_ += data;
    pendingBytes_ += bytes;
    ++arrived_;
    bool next = index == taken_;
    nextArrived_ |= next;
    // With an output the writing thread waits for this very result (a
    // pipe's reader sees it at once). Without one it only counts, so it is
    // woken to take the inbox (kDrainEvery), for the last result (or any
    // after it: a result put twice counts as arrived), and while the caller
    // may wait for room.
    wake = out_ ? next
                : drain || arrived_ >= total_ || pendingBytes_ > budgetBytes_;
  }
  if (wake)
    arrivedOne_.notify_one();
}

void ResultWriter::expectTotal(size_t total) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    total_ = total;
  }
  arrivedOne_.notify_one();
}

void ResultWriter::waitForRoom() {
  std::unique_lock<std::mutex> lock(mutex_);
  wroteSome_.wait(lock, [&] { return pendingBytes_ <= budgetBytes_; });
}

size_t ResultWriter::arrived() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return arrived_;
}

bool ResultWriter::finish() {
  if (thread_.joinable())
    thread_.join();
  return !out_ || out_->good();
}

void ResultWriter::writeAll() {
  // Results are taken in runs of those already in, in order. While the
  // engine serves, this thread formats them alone; once every result is
  // in (serving is over), the machine's cores share the formatting.
  constexpr size_t kRun = 256;
  // The data of a run's results, at most (their text is about 3x as much;
  // --result-buffer-mb counts the results still waiting only).
  constexpr size_t kRunBytes = size_t(16) << 20;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  // Results of inputs next, next + 1, ... (empty: not in yet).
  std::deque<std::optional<RequestResult>> waiting;
  size_t next = 0;
  std::vector<Arrival> taken;
  size_t duplicateBytes = 0; // of results put twice, not yet uncounted
  // For meanDataBytes_: results taken so far, and in the last take.
  size_t takenResults = 0, takenDataBytes = 0;
  std::vector<RequestResult> run;
  std::vector<std::string> lines;
  auto nextIn = [&] { return !waiting.empty() && waiting.front(); };
  while (true) {
    bool allArrived;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      bool inAlready = nextIn();
      arrivedOne_.wait(lock, [&] {
        return inAlready || nextArrived_ || next == total_ || abandoned_ ||
               (!out_ &&
                (inbox_.size() >= kDrainEvery || inboxBytes_ >= kDrainBytes));
      });
      nextArrived_ = false;
      pendingBytes_ -= duplicateBytes;
      duplicateBytes = 0;
      taken.swap(inbox_);
      inboxBytes_ = 0;
      allArrived = arrived_ == total_;
    }
    size_t takeResults = 0, takeDataBytes = 0;
    for (Arrival &arrival : taken) {
      size_t slot = arrival.index - next;
      if (arrival.index < next ||
          (slot < waiting.size() && waiting[slot])) { // put twice: ignored
        duplicateBytes += keptBytes(arrival.result);
        continue;
      }
      if (slot >= waiting.size())
        waiting.resize(slot + 1);
      if (!out_) {
        size_t data = dataBytes(arrival.result);
        ++takeResults;
        takeDataBytes += data;
        arrival.result.outputs = std::vector<OutputTensor>();
      }
      waiting[slot] = std::move(arrival.result);
    }
    // The mean so far, or the last take's when larger (results that grow,
    // e.g. inputs sorted by length, drain as soon as the next take shows it).
    takenResults += takeResults;
    takenDataBytes += takeDataBytes;
    if (takeResults > 0)
      meanDataBytes_.store(
          std::max(takenDataBytes / takenResults, takeDataBytes / takeResults),
          std::memory_order_relaxed);
    taken.clear();
    if (!nextIn()) {
      std::lock_guard<std::mutex> lock(mutex_);
      pendingBytes_ -= duplicateBytes;
      duplicateBytes = 0;
      if (next == total_ || (abandoned_ && inbox_.empty()))
        return; // all written, or abandoned with the next not in
      continue;
    }
    run.clear();
    size_t runBytes = 0;
    while (nextIn() && run.size() < kRun && runBytes < kRunBytes) {
      runBytes += dataBytes(*waiting.front());
      run.push_back(std::move(*waiting.front()));
      waiting.pop_front();
    }
    next += run.size();
    {
      // put() wakes this thread for input `next` from now on; one already
      // put and not yet taken counts as arrived.
      std::lock_guard<std::mutex> lock(mutex_);
      taken_ = next;
      for (const Arrival &arrival : inbox_)
        nextArrived_ |= arrival.index == next;
    }
    lines.resize(run.size());
    if (out_) {
      auto format = [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i)
          lines[i] = resultLine(run[i]);
      };
      // A thread for every 16 lines at most.
      runInShares(run.size(),
                  allArrived ? std::min<size_t>(cores, run.size() / 16) : 1,
                  format);
    }
    size_t bytes = 0;
    for (size_t i = 0; i < run.size(); ++i) {
      const RequestResult &result = run[i];
      if (result.status.isOk())
        latenciesMs.push_back((result.queueMicros + result.computeMicros) /
                              1000);
      else
        ++failed;
      if (out_) {
        *out_ << lines[i] << '\n';
        std::string().swap(lines[i]); // its memory too
      } else if (!result.status.isOk())
        std::cerr << "cellrun: " << result.status.message() << "\n";
      bytes += dataBytes(result);
      run[i] = RequestResult(); // forgotten once written
    }
    std::unique_lock<std::mutex> lock(mutex_);
    pendingBytes_ -= bytes;
    wroteSome_.notify_all();
    // Caught up with the serving: what is written reaches a pipe now (its
    // reader sees each result without waiting for the next).
    bool flush = flushWhenCaughtUp_ && out_ && !nextIn() && !nextArrived_;
    lock.unlock();
    if (flush)
      out_->flush();
    if (out_ && !out_->good())
      outputFailed_ = true;
  }
}

} // namespace cellrun::tool
