//===- Shares.h - Work split among threads for cellrun ----------*- C++ -*-===//
//
// `cellrun run` parses its requests and formats its results on all cores:
// contiguous shares of a range, one a thread, the caller's thread taking
// the first. A share whose thread cannot be started runs on the caller's
// thread instead (the work is the same, only slower).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SHARES_H
#define CELLRUN_TOOLS_SHARES_H

#include <algorithm>
#include <cstddef>
#include <system_error>
#include <thread>
#include <vector>

namespace cellrun::tool {

/// Calls work(begin, end) over [0, count) in up to `parts` contiguous shares
/// and returns when all have run.
template <typename Work>
void runInShares(size_t count, size_t parts, const Work &work) {
  parts = std::max<size_t>(1, std::min(parts, count));
  size_t share = count == 0 ? 0 : (count + parts - 1) / parts;
  std::vector<std::thread> threads;
  for (size_t p = 1; p < parts; ++p) {
    size_t begin = std::min(count, p * share);
    size_t end = std::min(count, (p + 1) * share);
    try {
      threads.emplace_back(work, begin, end);
    } catch (const std::system_error &) {
      work(begin, end); // no thread to be had: here
    }
  }
  work(0, std::min(count, share));
  for (std::thread &thread : threads)
    thread.join();
}

} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_SHARES_H
