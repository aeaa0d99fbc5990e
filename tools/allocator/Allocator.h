//===- Allocator.h - Which malloc a program runs on -------------*- C++ -*-===//
//
// cellrun and the host-path benchmark link mimalloc (tools/allocator): a
// request's result and records are a few allocations each, which glibc's
// malloc serves at several hundred instructions apiece under the engine's
// allocate-many, free-many pattern. Programs print the allocator with their
// measurements.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_ALLOCATOR_H
#define CELLRUN_TOOLS_ALLOCATOR_H

#include <string>

namespace cellrun::tool {

/// "mimalloc 2.0.9", or "glibc malloc" when built without it.
std::string allocatorName();

} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_ALLOCATOR_H
