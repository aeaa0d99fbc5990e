//===- RequestReader.cpp - `cellrun run`'s requests, read ahead ----------===//
#include "RequestReader.h"
#include "Shares.h"

#include "JsonReader.h"

#include <chrono>
#include <vector>

namespace cellrun::tool {

/// Lines parsed together while serving (all cores share a run).
static constexpr size_t kRun = 1024;

RequestReader::RequestReader(std::istream &input, const RequestParser &parser,
                             size_t readAheadBytes, bool fillFirst)
    : input_(input), parser_(parser),
      readAheadBytes_(std::max<size_t>(readAheadBytes, 1)),
      fillFirst_(fillFirst) {
  thread_ = std::thread([this] { readLines(); });
}

RequestReader::~RequestReader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  tookSome_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

void RequestReader::readLines() {
  std::string text;
  size_t lineNumber = 0;
  bool failed = false;
  try {
    while (true) {
      {
        // Room for a line: the text held stays within the budget.
        std::unique_lock<std::mutex> lock(mutex_);
        tookSome_.wait(
            lock, [&] { return stopping_ || heldBytes_ < readAheadBytes_; });
        if (stopping_)
          break;
      }
      if (!std::getline(input_, text))
        break;
      ++lineNumber;
      if (text.find_first_not_of(" \t\r") == std::string::npos)
        continue;
      std::lock_guard<std::mutex> lock(mutex_);
      heldBytes_ += text.size() + 1;
      unparsed_.emplace_back(std::move(text), lineNumber);
      // Wake the caller only when it waits for any line or for the budget.
      if (wantsAny_ || heldBytes_ >= readAheadBytes_)
        readSome_.notify_one();
    }
  } catch (const std::exception &) {
    failed = true; // e.g. no memory for a line: the reading stops here
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ended_ = true;
  failed_ = failed || input_.bad();
  readSome_.notify_one();
}

void RequestReader::fill() {
  if (!fillFirst_)
    return;
  auto start = std::chrono::steady_clock::now();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    readSome_.wait(lock,
                   [&] { return ended_ || heldBytes_ >= readAheadBytes_; });
  }
  parseSeconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  parseAtHand(SIZE_MAX);
}

bool RequestReader::next(InputLine &line) {
  if (parsed_.empty()) {
    releaseTaken();
    parseAtHand(kRun);
  }
  if (parsed_.empty())
    return false;
  line = std::move(parsed_.front().first);
  takenBytes_ += parsed_.front().second;
  parsed_.pop_front();
  taken_ = true;
  ++linesTaken_;
  // The budget's room comes back in sixteenths, not a lock a line.
  if (takenBytes_ >= readAheadBytes_ / 16)
    releaseTaken();
  return true;
}

void RequestReader::releaseTaken() {
  if (takenBytes_ == 0)
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    heldBytes_ -= takenBytes_;
  }
  takenBytes_ = 0;
  tookSome_.notify_one();
}

void RequestReader::parseAtHand(size_t most) {
  std::vector<std::pair<std::string, size_t>> run; // (text, line number)
  {
    std::unique_lock<std::mutex> lock(mutex_);
    wantsAny_ = true;
    readSome_.wait(lock, [&] { return ended_ || !unparsed_.empty(); });
    wantsAny_ = false;
    while (!unparsed_.empty() && run.size() < most) {
      run.push_back(std::move(unparsed_.front()));
      unparsed_.pop_front();
    }
  }
  if (run.empty())
    return;
  auto start = std::chrono::steady_clock::now();
  size_t first = parsed_.size();
  parsed_.resize(first + run.size());
  auto parseLines = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      auto &[text, number] = run[i];
      std::string fallback = "line " + std::to_string(number);
      auto request = parser_.parse(text, fallback, serve::readRequestJsonFast);
      auto &[parsed, bytes] = parsed_[first + i];
      bytes = text.size() + 1;
      if (request.ok()) {
        parsed.request = std::move(request).value();
      } else {
        parsed.refused.id = RequestParser::requestId(text, fallback);
        parsed.refused.status = request.status();
      }
    }
  };
  // A thread for every 16 lines at most.
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  runInShares(run.size(), std::min<size_t>(cores, (run.size() + 15) / 16),
              parseLines);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  parseSeconds_ += seconds;
  if (taken_)
    parseSecondsAfterFirst_ += seconds;
}

} // namespace cellrun::tool
