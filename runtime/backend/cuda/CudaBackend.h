//===- CudaBackend.h - Tasks of an artifact on one CUDA device -*- C++ -*-===//
//
// One device, one stream, and a ring of `tasksInFlight` staging slots on the
// host (one area on the device serves them all, in stream order). A task's
// small host inputs (its row indices, the rows of request data it
// writes into pools, the indices of the rows the host reads back, and a
// ticket number) are packed into the slot's pinned buffer and moved in one
// host-to-device copy; the data rows are scattered into their pools; the
// plan's GEMMs and kernels run (launched one by one, or as one CUDA graph:
// CudaPlanGraphs.h); the rows the host reads are gathered into
// the slot and come back in one device-to-host copy (rows whose destination
// is page-locked value memory, CudaBackendOptions::pinnedResults, are
// written there by a kernel instead); then one more copy
// writes the ticket into a completion counter in pinned host memory. Tasks
// complete in stream order, so the counter is the last finished ticket: the
// host learns completion by reading it (no callbacks, no events), copies a
// finished task's rows to where the caller wants them, and reuses a slot
// only once the task that last used it is done. Every cell's code, weights
// and task runners (one per batch size, with their cuBLASLt algorithm
// choices) are prepared when the backend is created.
//
// Pools of integer rows (token ids, flags) are in mapped pinned memory, the
// kernels read and write them in place; pools of floating-point rows are
// device memory. Either way a task's data and results go through its slot
// (results not, where the device writes them in place).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CUDA_CUDABACKEND_H
#define CELLRUN_BACKEND_CUDA_CUDABACKEND_H

#include "CudaPlanGraphs.h"
#include "CudaSlotLayout.h"
#include "CudaTaskRunner.h"

#include "backend/cpu/ThreadPool.h"
#include "cellrun/Device.h"
#include "exec/Executor.h"

#include <memory>
#include <unordered_map>
#include <vector>

namespace cellrun::cuda {

struct CudaBackendOptions {
  int device = 0;
  unsigned tasksInFlight = 4;
  size_t gemmWorkspaceBytes = 32u << 20;
  /// Threads copying a finished task's rows out of its staging slot
  /// (ExecutorOptions::copyThreads, resolved: at least 1).
  unsigned copyThreads = 1;
  /// ExecutorOptions::pinnedResults: request and result values in
  /// page-locked host memory the device writes directly.
  bool pinnedResults = false;
  /// ExecutorOptions::cudaGraphs: a task's plan launched as a CUDA graph
  /// (CudaPlanGraphs.h), at most `graphLimit` of them kept.
  bool graphs = false;
  size_t graphLimit = 2048;
  /// ExecutorOptions::timeDevice: each task's span on the stream timed by
  /// two events (Executor::Times::deviceSeconds).
  bool timeSpans = false;
};

/// Memory of one pool: `device` is what kernels use; `host` is non-null
/// when the host can read and write it directly (mapped pinned memory).
struct PoolMemory {
  void *device = nullptr;
  void *host = nullptr;
};

/// The rows a task moves between the host and its pools (read during
/// CudaBackend::submit only).
struct TaskTransfers {
  /// Request data written into input rows before the task's kernels, and
  /// output rows read back after them: the executor's, single ones and
  /// columns as they are (it has checked that each names an input or output
  /// and a row of the task).
  RowMoves moves;
  /// Per cell input, and per cell output: its pool (where writes and reads
  /// are, there is one for every input and output).
  std::vector<PoolRef> inputs, outputs;
  /// Bytes moved between pools on the device after the kernels, before
  /// the reads (Executor::RowPlace): `bytes` of row `fromRow` of `from`
  /// (null: zeros) to row `toRow` of `to` (rows of `toRowBytes`) from byte
  /// `offset` on. Zeros first, then the copies.
  struct Place {
    const void *from = nullptr;
    int32_t fromRow = 0;
    void *to = nullptr;
    size_t toRowBytes = 0;
    int32_t toRow = 0;
    uint32_t offset = 0, bytes = 0;
  };
  std::vector<Place> places;
};

class CudaBackend {
public:
  /// Unavailable "no CUDA device: ..." when there is no usable device.
  static Result<std::unique_ptr<CudaBackend>>
  create(std::shared_ptr<const LoadedArtifact> artifact,
         const CudaBackendOptions &options);
  ~CudaBackend();

  const CudaDeviceInfo &device() const { return device_; }

  /// `bytes` of zeroed pool memory, host-visible when asked for.
  Result<PoolMemory> allocatePool(size_t bytes, bool hostVisible);
  /// Stream-ordered copies between host memory and device pool memory
  /// (copyOut waits for everything enqueued before it).
  Status copyIn(void *device, const void *host, size_t bytes);
  Status copyOut(void *host, const void *device, size_t bytes);

  /// The runner of `plan` of `cell` (prepared at creation).
  Result<const CudaTaskRunner *> runner(const cellpack::CellType &cell,
                                        const cellpack::BatchPlan &plan);

  /// Enqueues one task of `plan`: rows[i][r] is the pool row of cell input
  /// i (then, after the inputs, output i) for the task's row r. Returns its
  /// ticket; waits only when every staging slot is in use. The read
  /// destinations must stay valid until the task has been waited for.
  Result<uint64_t>
  submit(const cellpack::CellType &cell, const cellpack::BatchPlan &plan,
         uint32_t rows, const std::vector<void *> &inputPools,
         const std::vector<void *> &outputPools,
         const std::vector<const std::vector<int32_t> *> &rowIndices,
         const TaskTransfers &transfers = {});
  /// The last finished ticket (tickets start at 1).
  uint64_t completed() const;
  /// Seconds blocked in wait (and waitForSlot) until tasks finished, and
  /// seconds copying finished tasks' rows out of their slots; the rows
  /// moved each way and how the plans were launched.
  Executor::Times times() const;
  /// Waits until `ticket` has finished, or the stream reports an error
  /// (which every later call then returns); the reads of every finished
  /// task are then in their destinations.
  Status wait(uint64_t ticket);
  /// Waits for every task submitted so far.
  Status waitAll() {
    return nextTicket_ > 1 ? wait(nextTicket_ - 1) : Status::ok();
  }

private:
  /// A finished task's row on its way to the caller: `bytes` from `from`
  /// (the slot's pinned read-back area) to `to`.
  using Delivery = cpu::RowCopy;
  struct Slot {
    std::vector<Delivery> deliveries;
    /// The task's span on the stream: recorded before its copy in and
    /// before its ticket's copy out (CudaBackendOptions::timeSpans; null
    /// otherwise).
    cudaEvent_t spanStart = nullptr, spanEnd = nullptr;
  };

  CudaBackend() = default;
  Status prepareAll();
  Status waitForSlot(uint64_t ticket);
  /// Copies the reads of every task finished since the last call (and
  /// adds their spans on the device, when timed).
  void deliverFinished();
  /// Adds the span of the finished task in `slot` to times_.
  void addSpan(const Slot &slot);
  Status
  enqueueTask(uint64_t ticket, const cellpack::CellType &cell,
              const CudaTaskRunner &runner, uint32_t rows,
              const std::vector<void *> &inputPools,
              const std::vector<void *> &outputPools,
              const std::vector<const std::vector<int32_t> *> &rowIndices,
              const TaskTransfers &transfers);
  /// A task's places as the staging slot holds them: copies grouped by
  /// pools and size, each group's row indices at an offset of the slot
  /// (CudaStaging.cpp).
  struct PlaceGroup {
    const void *from = nullptr;
    void *to = nullptr;
    uint32_t bytes = 0;
    uint32_t count = 0;
    size_t fromRows = 0, toRows = 0; // offsets in the slot
  };
  struct PlaceLayout {
    std::vector<const TaskTransfers::Place *> zeros;
    /// Copies whose target is not a whole number of their size into
    /// its row: one copy each.
    std::vector<const TaskTransfers::Place *> loose;
    std::vector<PlaceGroup> groups;
  };
  /// Lays the places out from slot offset `at` on (returned past them),
  /// their indices written into the slot's host area `host` when they end
  /// within `limit`.
  static size_t layOutPlaces(const std::vector<TaskTransfers::Place> &places,
                             uint8_t *host, size_t at, size_t limit,
                             PlaceLayout &layout);
  /// Enqueues the places of `layout`, whose indices are in the slot's
  /// device area `device`.
  Status enqueuePlaces(const cellpack::CellType &cell,
                       const PlaceLayout &layout, const uint8_t *device);
  Status copyRows(const cellpack::CellType &cell, const void *from,
                  const int32_t *fromRows, void *to, const int32_t *toRows,
                  size_t rowBytes, uint32_t count);
  /// Pool rows `fromRows` to the host addresses `to` (both lists in the
  /// slot's device area).
  Status copyRowsToAddresses(const cellpack::CellType &cell, const void *from,
                             const int32_t *fromRows, const uint64_t *to,
                             size_t rowBytes, uint32_t count);
  /// A launch of a row-copy kernel of `count` rows of `rowBytes`.
  Status launchRowCopy(const cellpack::CellType &cell, const char *name,
                       void **args, size_t rowBytes, uint32_t count);

  std::shared_ptr<const LoadedArtifact> artifact_;
  /// The page-locked value memory the device writes read rows into, when
  /// CudaBackendOptions::pinnedResults installed it (null otherwise).
  const ValueMemory *pinnedResults_ = nullptr;
  CudaDeviceInfo device_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t blas_ = nullptr;
  DeviceBuffer gemmWorkspace_;
  size_t slotBytes_ = 0;     // host-to-device area of a slot
  size_t readBackBytes_ = 0; // device-to-host area of a slot
  std::vector<Slot> slots_;
  PinnedBuffer hostStaging_;   // slots * slotBytes_
  DeviceBuffer deviceStaging_; // one slot's layout on the device, shared
  PinnedBuffer hostReadBack_;  // slots * readBackBytes_
  DeviceBuffer deviceReadBack_;
  PinnedBuffer counter_; // one uint64_t: the last finished ticket
  uint64_t nextTicket_ = 1;
  uint64_t delivered_ = 0; // the last ticket whose reads were copied
  Executor::Times times_;
  /// The task being enqueued, as its slot holds it (kept for its storage).
  SlotLayout layout_;
  /// Splits a finished task's copies out of its staging slot (null: the
  /// caller copies alone; CudaBackendOptions::copyThreads).
  std::unique_ptr<cpu::ThreadPool> copyPool_;
  /// The plans' CUDA graphs (CudaBackendOptions::graphs; null: none).
  std::unique_ptr<PlanGraphs> graphs_;
  /// Set when the stream failed: every later wait and submit returns it.
  Status failure_;
  std::vector<DeviceBuffer> devicePools_;
  std::vector<PinnedBuffer> hostPools_;
  std::unordered_map<const cellpack::CellType *, std::unique_ptr<CudaCell>>
      cells_;
  std::unordered_map<const cellpack::BatchPlan *,
                     std::unique_ptr<CudaTaskRunner>>
      runners_;
};

} // namespace cellrun::cuda

#endif // CELLRUN_BACKEND_CUDA_CUDABACKEND_H
