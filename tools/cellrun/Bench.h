//===- Bench.h - `cellrun bench` --------------------------------*- C++ -*-===//
//
// The open-loop benchmark subcommand (Bench.cpp; its pieces are in bench/).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_BENCH_H
#define CELLRUN_TOOLS_BENCH_H

#include "CommandLine.h"

namespace cellrun::tool {

int runBench(const std::vector<std::string> &args);

} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_BENCH_H
