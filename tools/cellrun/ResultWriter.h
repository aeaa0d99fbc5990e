//===- ResultWriter.h - `cellrun run`'s results, in input order -*- C++ -*-===//
//
// Results arrive from the engine in any order; a thread of their own writes
// them as result lines in input order as soon as the ones before them are
// in, and forgets each once written, so the whole result set is never held
// at once: the caller waits for room (waitForRoom) before it submits more
// when the results not yet written exceed a byte budget. How many results
// there are is told once the input has ended (expectTotal). The writing
// thread runs at a lower priority (nice 10): while the machine is busy the
// serving goes first. Once every result is in (serving is over), the lines
// are formatted on all cores, by threads that inherit that priority (they
// then have the machine to themselves). Without an output file, failed
// requests' messages go to stderr in input order. It keeps each successful
// request's latency for the summary.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_RESULTWRITER_H
#define CELLRUN_TOOLS_RESULTWRITER_H

#include "cellrun/Request.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

namespace cellrun::tool {

class ResultWriter {
public:
  /// Results written to `out` (null: none are written); `budgetBytes`:
  /// the output data that may wait to be written; `flushWhenCaughtUp`
  /// (a pipe's reader waits for each result): the stream is flushed
  /// whenever every result in is written.
  ResultWriter(std::ostream *out, size_t budgetBytes, bool flushWhenCaughtUp);
  /// Waits for the results still to come (after expectTotal; without it,
  /// those in order so far), then for the writing.
  ~ResultWriter();

  /// The result of input `index` (any thread, once per index; never waits).
  void put(size_t index, RequestResult result);
  /// There are `total` results (inputs 0..total-1): the writing ends once
  /// they are written.
  void expectTotal(size_t total);
  /// Waits while the results not yet written hold more than the budget.
  void waitForRoom();
  /// Results put so far.
  size_t arrived() const;
  /// True once writing to the output failed (e.g. no room left on disk).
  bool outputFailed() const { return outputFailed_.load(); }
  /// Waits until every result is written; true when the output stream
  /// stayed good.
  bool finish();

  /// After finish(): the successful requests' latencies (queue + compute),
  /// in milliseconds, and the number of failed requests.
  std::vector<double> latenciesMs;
  size_t failed = 0;

private:
  /// Without an output, results in the inbox are taken (and their data
  /// freed) once this many wait there, or once their data comes to
  /// kDrainBytes (estimated: meanDataBytes_ a result). Each take wakes this
  /// thread, about 8 us of the engine's thread on the 2-core VM (a futex call):
  /// taking every 64 results cost the hidden-16 LSTM 5 ns a row-step.
  static constexpr size_t kDrainEvery = 1024;
  static constexpr size_t kDrainBytes = size_t(4) << 20;
  /// The writing thread's nice value (Linux: a thread's own).
  static constexpr int kWriterNice = 10;
  void writeAll();
  /// What a result counts against the budget: its data when written, only
  /// its record otherwise (the data is freed when the writer takes it).
  size_t keptBytes(const RequestResult &result) const;

  std::ostream *out_;
  size_t budgetBytes_;
  bool flushWhenCaughtUp_;
  std::atomic<bool> outputFailed_{false};
  mutable std::mutex mutex_;
  std::condition_variable arrivedOne_, wroteSome_;
  /// Results put since the writing thread last took them (in any order):
  /// the engine's thread only appends one here, the writing thread sorts
  /// them into input order and frees what it does not write.
  struct Arrival {
    size_t index;
    RequestResult result;
  };
  std::vector<Arrival> inbox_;
  size_t inboxBytes_ = 0; // the data of the results in the inbox
  size_t arrived_ = 0;
  /// The input whose result is to be written next, and whether it has been
  /// put since the writing thread last looked (it then waits for no more).
  size_t taken_ = 0;
  bool nextArrived_ = false;
  size_t total_ = SIZE_MAX; // unknown until expectTotal
  bool abandoned_ = false;
  size_t pendingBytes_ = 0;
  /// Without an output: the mean data of the results taken so far (0: none
  /// yet), which put() counts towards kDrainBytes instead of reading a
  /// result's tensor sizes.
  std::atomic<size_t> meanDataBytes_{0};
  std::thread thread_;
};

} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_RESULTWRITER_H
