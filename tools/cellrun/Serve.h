//===- Serve.h - `cellrun serve` --------------------------------*- C++ -*-===//
#ifndef CELLRUN_TOOLS_SERVE_H
#define CELLRUN_TOOLS_SERVE_H

#include "CommandLine.h"

namespace cellrun::tool {

int runServe(const std::vector<std::string> &args);

} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_SERVE_H
