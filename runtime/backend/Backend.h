//===- Backend.h - What the executor asks of a device ----------*- C++ -*-===//
//
// The executor (cellrun/Executor.h) checks a task, injects faults and owns
// the pools; a backend owns a device: the memory of the pools, the copies
// between host and pool rows, and running or enqueueing a checked task. Two
// backends implement it: cpu (backend/cpu/CpuBackend.cpp, always built) and
// cuda (backend/cuda/CudaExecutorBackend.cpp, built with CELL_ENABLE_CUDA;
// without it, backend/NoCuda.cpp says so).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_BACKEND_H
#define CELLRUN_BACKEND_BACKEND_H

#include "exec/Executor.h"

#include <memory>
#include <string>
#include <vector>

namespace cellrun {

/// One checked task: `rows` rows of `plan` of `cell`; inputRows[i][r] is
/// the row of input i's pool for task row r (outputs likewise); `io` the
/// host rows written before it and read after it.
struct BackendTask {
  const cellpack::CellType *cell = nullptr;
  const cellpack::BatchPlan *plan = nullptr;
  uint32_t rows = 0;
  const std::vector<std::vector<int32_t>> *inputRows = nullptr;
  const std::vector<std::vector<int32_t>> *outputRows = nullptr;
  const std::vector<SlotPool *> *inputPools = nullptr;
  const std::vector<SlotPool *> *outputPools = nullptr;
  const Executor::TaskIO *io = nullptr;
};

class Backend {
public:
  virtual ~Backend() = default;
  /// "cpu (2 threads)" or the device's description.
  virtual std::string describe() const = 0;
  /// True when tasks run after submit returns.
  virtual bool asynchronous() const = 0;
  /// A zeroed pool of `rows` rows of `rowBytes`; `hostVisible` asks for
  /// memory the host reads and writes directly (integer rows on a GPU).
  virtual Result<std::unique_ptr<SlotPool>>
  createPool(size_t rowBytes, uint32_t rows, bool hostVisible) = 0;
  /// Copies between host memory and pool memory that is not host-visible
  /// (stream-ordered; copyOut waits for what was enqueued before it).
  virtual Status copyIn(void *pool, const void *host, size_t bytes) = 0;
  virtual Status copyOut(void *host, const void *pool, size_t bytes) = 0;
  /// Runs (or enqueues) a checked task, its writes and reads single ones
  /// and by the column (Executor::TaskIO); returns its ticket.
  virtual Result<uint64_t> submit(const BackendTask &task) = 0;
  /// Waits for `ticket` and every ticket before it.
  virtual Status wait(uint64_t ticket) = 0;
  /// Executor::times.
  virtual Executor::Times times() const = 0;
};

/// The cpu backend for every plan of `artifact`, as `options` say: its
/// threads a task (0: one per core), nullTasks (rows moved, nothing
/// computed), readsAtWait (a task's reads delivered at wait) and
/// sharedCopyBytes.
Result<std::unique_ptr<Backend>>
makeCpuBackend(std::shared_ptr<const LoadedArtifact> artifact,
               const ExecutorOptions &options);

/// The cuda backend on `options.cudaDevice`; Unavailable when there is no
/// usable device, or when this build has none (CELL_ENABLE_CUDA=OFF).
Result<std::unique_ptr<Backend>>
makeCudaBackend(std::shared_ptr<const LoadedArtifact> artifact,
                const ExecutorOptions &options);

} // namespace cellrun

#endif // CELLRUN_BACKEND_BACKEND_H
