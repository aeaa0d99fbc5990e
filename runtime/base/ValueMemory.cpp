//===- ValueMemory.cpp - The installed value memory, else the heap --------===//
#include "base/ValueMemory.h"

#include "cellrun/Request.h"

#include <atomic>
#include <mutex>
#include <new>

using namespace cellrun;

namespace {
constexpr std::align_val_t kValueAlignment{64};
std::atomic<ValueMemory *> installed{nullptr};
} // namespace

ValueMemory &cellrun::installValueMemory(std::unique_ptr<ValueMemory> memory) {
  static std::mutex installing;
  std::lock_guard<std::mutex> lock(installing);
  if (ValueMemory *present = installed.load(std::memory_order_acquire))
    return *present;
  ValueMemory *kept = memory.release(); // for the process's whole life
  installed.store(kept, std::memory_order_release);
  return *kept;
}

ValueMemory *cellrun::installedValueMemory() noexcept {
  return installed.load(std::memory_order_acquire);
}

void *cellrun::detail::allocateValues(size_t bytes) {
  if (ValueMemory *memory = installed.load(std::memory_order_acquire))
    if (void *values = memory->allocate(bytes > 0 ? bytes : 1))
      return values;
  return ::operator new(bytes, kValueAlignment);
}

void cellrun::detail::freeValues(void *values, size_t bytes) noexcept {
  if (!values)
    return;
  if (ValueMemory *memory = installed.load(std::memory_order_acquire))
    if (memory->owns(values)) {
      memory->free(values, bytes > 0 ? bytes : 1);
      return;
    }
  ::operator delete(values, kValueAlignment);
}
