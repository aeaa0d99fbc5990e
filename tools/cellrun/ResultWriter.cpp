//===- ResultWriter.cpp - `cellrun run`'s results, in input order ---------===//
#include "ResultWriter.h"
#include "RunReport.h"

#include <iostream>

namespace cellrun::tool {

static size_t dataBytes(const RequestResult &result) {
  size_t bytes = sizeof(RequestResult);
  for (const OutputTensor &tensor : result.outputs)
    bytes += tensor.floats.size() * sizeof(float) +
             tensor.integers.size() * sizeof(int64_t);
  return bytes;
}

ResultWriter::ResultWriter(std::ostream *out, size_t count, size_t budgetBytes)
    : out_(out), budgetBytes_(budgetBytes), waiting_(count) {
  latenciesMs.reserve(count);
  thread_ = std::thread([this] { writeAll(); });
}

ResultWriter::~ResultWriter() { finish(); }

void ResultWriter::put(size_t index, RequestResult result) {
  // With nothing to write, only the status and times are kept: the data
  // is freed here, on the thread that made it, which then reuses the
  // memory (kept until its turn to be written, results held behind a long
  // request made the engine's thread fault in fresh pages: 11k a 20000-
  // request run).
  if (!out_)
    result.outputs = std::vector<OutputTensor>();
  auto owned = std::make_unique<RequestResult>(std::move(result));
  size_t bytes = dataBytes(*owned);
  std::lock_guard<std::mutex> lock(mutex_);
  waiting_[index] = std::move(owned);
  pendingBytes_ += bytes;
  ++arrived_;
  if (index == written_)
    arrivedOne_.notify_one();
}

void ResultWriter::waitForRoom() {
  std::unique_lock<std::mutex> lock(mutex_);
  wroteSome_.wait(lock, [&] {
    return pendingBytes_ <= budgetBytes_ || written_ == waiting_.size();
  });
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
  while (true) {
    std::unique_ptr<RequestResult> result;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (written_ == waiting_.size())
        return;
      arrivedOne_.wait(lock, [&] { return waiting_[written_] != nullptr; });
      result = std::move(waiting_[written_]);
    }
    if (result->status.isOk())
      latenciesMs.push_back((result->queueMicros + result->computeMicros) /
                            1000);
    else
      ++failed;
    if (out_)
      *out_ << resultLine(*result) << '\n';
    else if (!result->status.isOk())
      std::cerr << "cellrun: " << result->status.message() << "\n";
    size_t bytes = dataBytes(*result);
    result.reset(); // forgotten before the next is taken
    std::lock_guard<std::mutex> lock(mutex_);
    ++written_;
    pendingBytes_ -= bytes;
    wroteSome_.notify_all();
  }
}

} // namespace cellrun::tool
