//===- Executor.h - Batched tasks of a cell over state pools ---*- C++ -*-===//
//
// The layer under the scheduler: "run this cell type for these n rows".
// The executor owns one SlotPool per row type of the artifact (element type
// and row size), shared by every cell input and output of that type, so the
// row one cell writes is the row the next cell reads, in place. A task runs
// with the smallest supported batch size >= n; the padding rows of the
// batch are never read or written.
//
// Two backends: cpu (pools in host memory, tasks run when submitted) and
// cuda (pools on the device, tasks enqueued on a stream with up to
// `tasksInFlight` in flight; see backend/cuda/CudaBackend.h). The host moves
// request data in and results out with writeRow/readRow either way.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_EXECUTOR_H
#define CELLRUN_EXECUTOR_H

#include "cellrun/Artifact.h"
#include "cellrun/Device.h"
#include "cellrun/SlotPool.h"

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace cellrun {
namespace cpu {
class CpuTaskRunner;
class ThreadPool;
} // namespace cpu
namespace cuda {
class CudaBackend;
} // namespace cuda

struct ExecutorOptions {
  DeviceKind device = DeviceKind::Cpu;
  /// cpu: workers that share a kernel step's rows.
  unsigned threads = 1;
  /// cuda: the device index and how many tasks may be in flight.
  int cudaDevice = 0;
  unsigned tasksInFlight = 4;
};

class Executor {
public:
  /// Pools of `rowsPerPool` rows for every row type of `artifact`.
  static Result<std::unique_ptr<Executor>>
  create(std::shared_ptr<const LoadedArtifact> artifact, uint32_t rowsPerPool,
         const ExecutorOptions &options);
  /// The cpu backend with `threads` workers per kernel step.
  static Result<std::unique_ptr<Executor>>
  create(std::shared_ptr<const LoadedArtifact> artifact, uint32_t rowsPerPool,
         unsigned threads = 1);
  ~Executor();

  const LoadedArtifact &artifact() const { return *artifact_; }
  DeviceKind device() const { return device_; }
  /// "cpu (1 thread)" or the CUDA device's description.
  std::string describe() const;

  /// The pool that holds input (`isOutput` false) or output `index` of
  /// `cell`.
  SlotPool &pool(const cellpack::CellType &cell, bool isOutput, uint32_t index);

  /// Copies one row between host memory and a pool. The row must not be in
  /// use by a task in flight (writeRow), and the task that wrote it must
  /// have been waited for (readRow). Rows in device memory are copied in
  /// stream order (readRow waits for the stream); rows in host-visible
  /// memory (mapped pools of the cuda backend, every cpu pool) are copied
  /// at once.
  Status writeRow(SlotPool &pool, uint32_t row, const void *bytes);
  Status readRow(SlotPool &pool, uint32_t row, void *bytes);

  /// Runs one task of `cell` for `rows` rows: inputRows[i][r] is the pool
  /// row of input i for the task's row r, outputRows likewise. Returns the
  /// batch size it ran at, once the task has finished.
  Result<uint32_t> run(const cellpack::CellType &cell, uint32_t rows,
                       const std::vector<std::vector<int32_t>> &inputRows,
                       const std::vector<std::vector<int32_t>> &outputRows);

  /// The same without waiting: a ticket for wait() (the cpu backend has
  /// finished the task when submit returns).
  Result<uint64_t> submit(const cellpack::CellType &cell, uint32_t rows,
                          const std::vector<std::vector<int32_t>> &inputRows,
                          const std::vector<std::vector<int32_t>> &outputRows,
                          uint32_t *batchSize = nullptr);
  Status wait(uint64_t ticket);
  /// submit with a given plan of `cell` (its batch size must be >= rows):
  /// tests run every batch size this way.
  Result<uint64_t>
  submitWithPlan(const cellpack::CellType &cell,
                 const cellpack::BatchPlan &plan, uint32_t rows,
                 const std::vector<std::vector<int32_t>> &inputRows,
                 const std::vector<std::vector<int32_t>> &outputRows);

private:
  explicit Executor(std::shared_ptr<const LoadedArtifact> artifact);
  Status checkRows(const cellpack::CellType &cell, uint32_t rows,
                   const std::vector<std::vector<int32_t>> &taskRows,
                   bool isOutput);
  Status createPools(uint32_t rowsPerPool);

  std::shared_ptr<const LoadedArtifact> artifact_;
  DeviceKind device_ = DeviceKind::Cpu;
  unsigned threadCount_ = 1;
  std::unique_ptr<cpu::ThreadPool> threads_;
  std::unique_ptr<cuda::CudaBackend> cuda_;
  uint64_t cpuTickets_ = 0;
  /// (element type, row bytes) -> pool.
  std::map<std::pair<int, size_t>, std::unique_ptr<SlotPool>> pools_;
  std::unordered_map<const cellpack::BatchPlan *,
                     std::unique_ptr<cpu::CpuTaskRunner>>
      runners_;
};

} // namespace cellrun

#endif // CELLRUN_EXECUTOR_H
