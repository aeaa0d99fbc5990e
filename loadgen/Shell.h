//===- Shell.h - Quoting for the commands the benchmark runs ----*- C++ -*-===//
//
// The peer and gnuplot run through /bin/sh (popen, system): every path and
// argument that comes from the user is quoted with this.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_BENCH_SHELL_H
#define CELLRUN_TOOLS_BENCH_SHELL_H

#include <string>

namespace cellrun::loadgen {

/// `text` in single quotes for /bin/sh (a quote inside becomes '\'').
inline std::string shellQuoted(const std::string &text) {
  std::string quoted = "'";
  for (char c : text)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

} // namespace cellrun::loadgen

#endif // CELLRUN_TOOLS_BENCH_SHELL_H
