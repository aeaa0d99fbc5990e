//===- Run.h - `cellrun run`: offline inference -----------------*- C++ -*-===//
#ifndef CELLRUN_TOOLS_RUN_H
#define CELLRUN_TOOLS_RUN_H

#include "CommandLine.h"

namespace cellrun::tool {
int runRun(const std::vector<std::string> &args);
} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_RUN_H
