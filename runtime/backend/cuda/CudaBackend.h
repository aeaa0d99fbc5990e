//===- CudaBackend.h - Tasks of an artifact on one CUDA device -*- C++ -*-===//
//
// One device, one stream, and a ring of `tasksInFlight` staging slots. A
// task's small host inputs (its row indices and a ticket number) are packed
// into the slot's pinned buffer and moved in one host-to-device copy; then
// the plan's GEMMs and kernels are enqueued; then one device-to-host copy
// writes the ticket into a completion counter in pinned host memory. Tasks
// complete in stream order, so the counter is the last finished ticket: the
// host learns completion by reading it (no callbacks, no events), and a slot
// is reused only once the task that last used it is done. Task runners (one
// per cell type and batch size, with their cuBLASLt algorithm choices) and
// the cells' code and weights are prepared on first use and cached.
//
// Pools of integer rows (token ids, flags) are in mapped pinned memory: the
// kernels read and write them in place and the host reads results there
// without a copy. Pools of floating-point rows are device memory.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CUDA_CUDABACKEND_H
#define CELLRUN_BACKEND_CUDA_CUDABACKEND_H

#include "CudaTaskRunner.h"

#include "cellrun/Device.h"

#include <memory>
#include <unordered_map>
#include <vector>

namespace cellrun::cuda {

struct CudaBackendOptions {
  int device = 0;
  unsigned tasksInFlight = 4;
  size_t gemmWorkspaceBytes = 32u << 20;
};

/// Memory of one pool: `device` is what kernels use; `host` is non-null
/// when the host can read and write it directly (mapped pinned memory).
struct PoolMemory {
  void *device = nullptr;
  void *host = nullptr;
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

  /// The runner of `plan` of `cell`, prepared on first use.
  Result<const CudaTaskRunner *> runner(const cellpack::CellType &cell,
                                        const cellpack::BatchPlan &plan);

  /// Enqueues one task of `plan`: rows[i][r] is the pool row of cell input
  /// i (then, after the inputs, output i) for the task's row r. Returns its
  /// ticket; waits only when every staging slot is in use.
  Result<uint64_t>
  submit(const cellpack::CellType &cell, const cellpack::BatchPlan &plan,
         uint32_t rows, const std::vector<void *> &inputPools,
         const std::vector<void *> &outputPools,
         const std::vector<const std::vector<int32_t> *> &rowIndices);
  /// The last finished ticket (tickets start at 1).
  uint64_t completed() const;
  /// Waits until `ticket` has finished, or the stream reports an error.
  Status wait(uint64_t ticket);
  /// Waits for every task submitted so far.
  Status waitAll() {
    return nextTicket_ > 1 ? wait(nextTicket_ - 1) : Status::ok();
  }

private:
  CudaBackend() = default;
  Status waitForSlot(uint64_t ticket);

  std::shared_ptr<const LoadedArtifact> artifact_;
  CudaDeviceInfo device_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t blas_ = nullptr;
  DeviceBuffer gemmWorkspace_;
  size_t slotBytes_ = 0;
  unsigned slots_ = 0;
  PinnedBuffer hostStaging_;   // slots_ * slotBytes_
  DeviceBuffer deviceStaging_; // the same layout on the device
  PinnedBuffer counter_;       // one uint64_t: the last finished ticket
  uint64_t nextTicket_ = 1;
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
