//===- Executor.h - Batched tasks of a cell over state pools ---*- C++ -*-===//
//
// Internal to the runtime (its tests and benchmarks use it too).
//
// The layer under the scheduler: "run this cell type for these n rows".
// The executor owns one SlotPool per row type of the artifact (element type
// and row size), shared by every cell input and output of that type, so the
// row one cell writes is the row the next cell reads, in place. A task runs
// with the smallest supported batch size >= n; the padding rows of the
// batch are never read or written.
//
// Two backends behind one interface (backend/Backend.h): cpu (pools in host
// memory, tasks run when submitted) and cuda (pools on the device, tasks
// enqueued on a stream with up to `tasksInFlight` in flight; see
// backend/cuda/CudaBackend.h), which a build without CUDA
// (CELL_ENABLE_CUDA=OFF) does not have. The host moves request data in and
// results out with writeRow/readRow either way.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_EXECUTOR_H
#define CELLRUN_EXECUTOR_H

#include "artifact/Artifact.h"
#include "cellrun/Device.h"
#include "exec/SlotPool.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace cellrun {
class Backend;

/// Where a test may make the executor fail (fault injection): taking a pool
/// row (an allocation), moving a task's data (a transfer), running a task's
/// kernels (the task is issued, and its wait reports the error), the device
/// itself (checked as each task is submitted: from then on the executor is
/// lost, like a GPU after a sticky error, and fails every task).
enum class FaultPoint : uint8_t { Allocate, Transfer, Kernel, Device };
/// Called at every fault point when set; a status that is not Ok is the
/// fault, returned where the operation would have failed. Tests only: the
/// engine's tests pass one through createEngineForTesting
/// (sched/EngineTesting.h).
using FaultInjector = std::function<Status(FaultPoint)>;

class Executor {
public:
  /// Pools of `rowsPerPool` rows for every row type of `artifact`, and
  /// every batch plan prepared (on the cpu backend: each kernel region
  /// checked against its values and its GEMM weights packed; on cuda:
  /// kernels loaded and weights uploaded), so that an inconsistent plan is
  /// an error here, before any task.
  /// `injectFault`: faults to inject (tests; none when empty).
  static Result<std::unique_ptr<Executor>>
  create(std::shared_ptr<const LoadedArtifact> artifact, uint32_t rowsPerPool,
         const ExecutorOptions &options, FaultInjector injectFault = {});
  /// The cpu backend with `threads` workers per task (0: one per core).
  static Result<std::unique_ptr<Executor>>
  create(std::shared_ptr<const LoadedArtifact> artifact, uint32_t rowsPerPool,
         unsigned threads = 0);
  ~Executor();

  const LoadedArtifact &artifact() const { return *artifact_; }
  DeviceKind device() const { return device_; }
  /// "cpu (1 thread)" or the CUDA device's description.
  std::string describe() const;

  /// The pool that holds input (`isOutput` false) or output `index` of
  /// `cell`.
  SlotPool &pool(const cellpack::CellType &cell, bool isOutput, uint32_t index);
  /// Rows acquired in all pools (leak checks).
  uint32_t rowsInUse() const;

  /// Copies one row between host memory and a pool. The row must not be in
  /// use by a task in flight (writeRow), and the task that wrote it must
  /// have been waited for (readRow). Rows in device memory are copied in
  /// stream order (readRow waits for the stream); rows in host-visible
  /// memory (mapped pools of the cuda backend, every cpu pool) are copied
  /// at once.
  Status writeRow(SlotPool &pool, uint32_t row, const void *bytes);
  Status readRow(SlotPool &pool, uint32_t row, void *bytes);

  /// Host data a task writes into an input row before it runs: input
  /// `input` of task row `row` (its pool row must be one of the task's
  /// inputRows) gets the pool's row bytes at `bytes`, which are copied when
  /// the task is submitted. `onlyThisTask`: nothing reads that pool row
  /// after this task (a chain step's own data), so a backend in host
  /// memory may read the bytes where they lie instead of copying them.
  struct RowWrite {
    uint32_t input;
    uint32_t row;
    const void *bytes;
    bool onlyThisTask = false;
  };
  /// A row the host reads once the task has finished: output `output` of
  /// task row `row`, copied to `destination` (the pool's row bytes).
  struct RowRead {
    uint32_t output;
    uint32_t row;
    void *destination;
  };
  /// Bytes moved between pool rows where the pools are (on the device, for
  /// cuda), after the task's kernels and before its reads: `bytes` of row
  /// `fromRow` of `from` (its whole row: `bytes` must be its row size) to
  /// row `toRow` of `to`, from byte `offset` on; with `from` null, zeros.
  /// All zeroing places of a task run before its copying ones, and copies
  /// of one task must not overlap. A seq2seq encoder's step places its
  /// output in the decoder's memory this way, so the memory never goes
  /// through the host.
  struct RowPlace {
    SlotPool *from = nullptr;
    int32_t fromRow = 0;
    SlotPool *to = nullptr;
    int32_t toRow = 0;
    uint32_t offset = 0;
    uint32_t bytes = 0;
  };
  /// Writes of one input for every row of the task, each for this task
  /// only: row r reads the pool's row bytes at bytes[r] (a RowWrite with
  /// onlyThisTask of each). The cpu backend hands the array to the task's
  /// steps as it is where they read the input row by row (else it copies
  /// the rows into the pool); the cuda backend stages the rows as they
  /// are.
  struct WriteColumn {
    uint32_t input = 0;
    std::vector<const void *> bytes; // one a task row, none null
    /// Its rows as single writes, appended to `writes`.
    void appendTo(std::vector<RowWrite> &writes) const {
      for (uint32_t r = 0; r < bytes.size(); ++r)
        writes.push_back({input, r, bytes[r], true});
    }
  };
  /// Reads of one output: row r's bytes to to[r] once the task has finished,
  /// none where to[r] is null (a RowRead of each). Where the cpu backend's
  /// step that makes the output can, it writes them there as it stores the
  /// rows; else they are copied after the task.
  struct ReadColumn {
    uint32_t output = 0;
    std::vector<void *> to; // one a task row
    /// Its rows as single reads (those with a place), appended to `reads`.
    void appendTo(std::vector<RowRead> &reads) const {
      for (uint32_t r = 0; r < to.size(); ++r)
        if (to[r])
          reads.push_back({output, r, to[r]});
    }
  };
  /// The small host inputs and results of a task, moved with it: on cuda
  /// the writes go in the task's one host-to-device copy and the reads come
  /// back gathered in one device-to-host copy.
  struct TaskIO {
    std::vector<RowWrite> writes;
    std::vector<RowRead> reads;
    std::vector<RowPlace> places;
    /// The engine's chain batch: writes and reads by the column, none of
    /// whose rows is also in `writes` or `reads` (other rows of the same
    /// input or output may be: the cpu backend then copies them all).
    std::vector<WriteColumn> writeColumns;
    std::vector<ReadColumn> readColumns;
  };

  /// Runs one task of `cell` for `rows` rows: inputRows[i][r] is the pool
  /// row of input i for the task's row r, outputRows likewise. No output
  /// row of a task may be a row any of its inputs reads (the engine's rows
  /// go back only after the task that last reads them is submitted): the
  /// CUDA backend's GEMM-and-epilogue kernels write outputs while other
  /// blocks still read inputs. Returns the batch size it ran at, once the
  /// task has finished.
  Result<uint32_t> run(const cellpack::CellType &cell, uint32_t rows,
                       const std::vector<std::vector<int32_t>> &inputRows,
                       const std::vector<std::vector<int32_t>> &outputRows,
                       const TaskIO &io = {});

  /// The same without waiting: a ticket for wait() (the cpu backend has
  /// finished the task, writes and reads included, when submit returns).
  Result<uint64_t> submit(const cellpack::CellType &cell, uint32_t rows,
                          const std::vector<std::vector<int32_t>> &inputRows,
                          const std::vector<std::vector<int32_t>> &outputRows,
                          uint32_t *batchSize = nullptr, const TaskIO &io = {});
  /// Waits for the task of `ticket` (and every task before it); when it
  /// returns Ok, the task's reads are in their destinations.
  Status wait(uint64_t ticket);
  /// True when tasks run after submit returns (cuda), so the caller can
  /// submit more before waiting.
  bool asynchronous() const;
  /// Where an asynchronous backend's submit and wait calls spent their
  /// time, since the executor was made: blocked until the device had
  /// finished the tasks waited for (or freed a staging slot), and copying
  /// finished tasks' rows out to their destinations. The cpu backend counts
  /// its deliveries at wait (ExecutorOptions::readsAtWait) and never blocks.
  /// The rows read back: copied out by the host (cuda: from the staging
  /// slot), and written by the device straight into the results (cuda,
  /// ExecutorOptions::pinnedResults).
  struct Times {
    double blockedSeconds = 0, deliverSeconds = 0;
    uint64_t deliveredRows = 0, deviceWrittenRows = 0;
    /// cuda (ExecutorOptions::cudaGraphs): task plans launched as a CUDA
    /// graph, graphs captured, plans launched kernel by kernel as the first
    /// task of their rows (before their capture), and the other plans
    /// launched kernel by kernel (past the limit, or graphs turned off).
    uint64_t planGraphLaunches = 0, planGraphCaptures = 0, planFirstRuns = 0,
             plansLaunchedDirectly = 0;
    /// cuda (ExecutorOptions::timeDevice): the finished tasks' spans on
    /// the stream, summed, and how many were timed.
    double deviceSeconds = 0;
    uint64_t deviceTimedTasks = 0;
  };
  Times times() const;
  /// Ok while the executor can run tasks; once its device is lost (a sticky
  /// CUDA error such as an illegal address, or an injected Device fault),
  /// the error that lost it: every later submit and wait returns it, and
  /// only a new executor (a new process, for a GPU) can serve again.
  const Status &lost() const { return lost_; }
  /// submit with a given plan of `cell` (its batch size must be >= rows):
  /// tests run every batch size this way.
  Result<uint64_t>
  submitWithPlan(const cellpack::CellType &cell,
                 const cellpack::BatchPlan &plan, uint32_t rows,
                 const std::vector<std::vector<int32_t>> &inputRows,
                 const std::vector<std::vector<int32_t>> &outputRows,
                 const TaskIO &io = {});

private:
  explicit Executor(std::shared_ptr<const LoadedArtifact> artifact);
  Status checkRows(const cellpack::CellType &cell, uint32_t rows,
                   const std::vector<std::vector<int32_t>> &taskRows,
                   bool isOutput);
  Status checkPlaces(const std::vector<RowPlace> &places) const;
  Status checkIO(const cellpack::CellType &cell, uint32_t rows,
                 const TaskIO &io);
  Status checkColumns(uint32_t inputs, uint32_t outputs, uint32_t rows,
                      const TaskIO &io);
  /// Runs (cpu) or enqueues (cuda) a checked task.
  Result<uint64_t> issue(const cellpack::CellType &cell,
                         const cellpack::BatchPlan &plan, uint32_t rows,
                         const std::vector<std::vector<int32_t>> &inputRows,
                         const std::vector<std::vector<int32_t>> &outputRows,
                         const TaskIO &io);
  Status createPools(uint32_t rowsPerPool);

  std::shared_ptr<const LoadedArtifact> artifact_;
  DeviceKind device_ = DeviceKind::Cpu;
  std::unique_ptr<Backend> backend_;
  FaultInjector injectFault_;
  /// Tickets of issued tasks whose kernels failed (injected), until waited.
  std::map<uint64_t, Status> failedTickets_;
  /// Set once the device is lost (see lost()).
  Status lost_;
  /// Records `status` as the loss of the device when it says so
  /// (Unavailable); returns it.
  Status noteLoss(Status status);
  /// (element type, row bytes) -> pool.
  std::map<std::pair<int, size_t>, std::unique_ptr<SlotPool>> pools_;
  /// Per cell, the pool of each input and output (found once, not per row).
  struct CellPools {
    std::vector<SlotPool *> inputs, outputs;
  };
  std::unordered_map<const cellpack::CellType *, CellPools> cellPools_;
  const CellPools &poolsOf(const cellpack::CellType &cell);
};

} // namespace cellrun

#endif // CELLRUN_EXECUTOR_H
