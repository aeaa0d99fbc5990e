//===- ValueMemory.h - Where request and result values live ----*- C++ -*-===//
//
// Request tensors and results (cellrun/Request.h's FloatValues and
// IntegerValues) take their storage through detail::allocateValues. By
// default that is the heap; a backend whose device reads and writes host
// memory in place installs a ValueMemory once (the cuda backend's
// page-locked arena, HostArena.h), and every value vector allocated after
// that comes from it while it has room. It is never uninstalled: values may
// outlive every engine (a result handed to the caller).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BASE_VALUEMEMORY_H
#define CELLRUN_BASE_VALUEMEMORY_H

#include <cstddef>
#include <memory>

namespace cellrun {

class ValueMemory {
public:
  virtual ~ValueMemory() = default;
  /// `bytes` (more than 0) on a 64-byte line, or null when it has no room
  /// (the heap then serves).
  virtual void *allocate(size_t bytes) noexcept = 0;
  /// True for every address of storage it can hand out (and only those).
  virtual bool owns(const void *values) const noexcept = 0;
  /// Gives back what allocate(bytes) returned.
  virtual void free(void *values, size_t bytes) noexcept = 0;
};

/// Installs `memory` for every later allocation of values, for the rest of
/// the process; returns the one installed, which is the first one given
/// when one already was (`memory` is then destroyed).
ValueMemory &installValueMemory(std::unique_ptr<ValueMemory> memory);
/// The installed memory, or null.
ValueMemory *installedValueMemory() noexcept;

} // namespace cellrun

#endif // CELLRUN_BASE_VALUEMEMORY_H
