//===- RequestReader.cpp - `cellrun run`'s requests, read ahead ----------===//
#include "RequestReader.h"
#include "Shares.h"

#include "JsonReader.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace cellrun::tool {

RequestReader::RequestReader(std::istream &input, const RequestParser &parser,
                             size_t readAheadBytes)
    : input_(input), parser_(parser),
      readAheadBytes_(std::max<size_t>(readAheadBytes, 1)) {}

void RequestReader::fill() { readUpTo(readAheadBytes_); }

bool RequestReader::next(InputLine &line) {
  if (!ended_ && bufferedBytes_ < readAheadBytes_ / 2)
    fill();
  if (buffered_.empty())
    return false;
  line = std::move(buffered_.front().first);
  bufferedBytes_ -= buffered_.front().second;
  buffered_.pop_front();
  taken_ = true;
  return true;
}

void RequestReader::readUpTo(size_t budget) {
  // Lines are parsed in runs, each run on all cores.
  constexpr size_t kRun = 1024;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, size_t>> run; // (text, line number)
  std::string text;
  while (!ended_ && bufferedBytes_ < budget) {
    size_t runBytes = 0;
    while (run.size() < kRun && bufferedBytes_ + runBytes < budget) {
      if (!std::getline(input_, text)) {
        ended_ = true;
        break;
      }
      ++lineNumber_;
      if (text.find_first_not_of(" \t\r") == std::string::npos)
        continue;
      runBytes += text.size() + 1;
      run.emplace_back(std::move(text), lineNumber_);
    }
    size_t first = buffered_.size();
    buffered_.resize(first + run.size());
    auto parseLines = [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        auto &[lineText, number] = run[i];
        std::string fallback = "line " + std::to_string(number);
        auto request =
            parser_.parse(lineText, fallback, serve::readRequestJsonFast);
        auto &[parsed, bytes] = buffered_[first + i];
        bytes = lineText.size() + 1;
        if (request.ok()) {
          parsed.request = std::move(request).value();
        } else {
          parsed.refused.id = RequestParser::requestId(lineText, fallback);
          parsed.refused.status = request.status();
        }
      }
    };
    runInShares(run.size(), cores, parseLines);
    bufferedBytes_ += runBytes;
    linesRead_ += run.size();
    run.clear();
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  parseSeconds_ += seconds;
  if (taken_)
    parseSecondsAfterFirst_ += seconds;
}

} // namespace cellrun::tool
