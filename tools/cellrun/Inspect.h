//===- Inspect.h - `cellrun inspect` ----------------------------*- C++ -*-===//
#ifndef CELLRUN_TOOLS_INSPECT_H
#define CELLRUN_TOOLS_INSPECT_H

#include "CommandLine.h"

namespace cellrun::tool {

/// `cellrun inspect [--summary] FILE`: the artifact as JSON on stdout, or a
/// short table with --summary. Exit 1 when the artifact does not load.
int runInspect(const std::vector<std::string> &args);

} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_INSPECT_H
