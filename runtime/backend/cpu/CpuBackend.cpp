//===- CpuBackend.cpp - The executor's cpu backend ------------------------===//
//
// Pools in host memory; a task runs when it is submitted, on the calling
// thread and the backend's ThreadPool: its row writes, its plan's runner
// (one prepared per plan of every cell when the backend is created), then
// its row reads (most of them written into the results by the step that
// makes the rows, as it stores them: cpu::PoolView::copyTo). A ticket is a
// count of tasks run.
//
//===----------------------------------------------------------------------===//
#include "../Backend.h"

#include "CpuTaskRunner.h"
#include "PackedGemmBf16.h"
#include "StreamingCopy.h"
#include "cellrun/Request.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <thread>
#include <unordered_map>

using namespace cellrun;

namespace {

/// Rows ahead whose places in the results a task's copies ask for: the
/// hidden-16 LSTM in `cellrun run` took 179 against 185.5 ns a row-step
/// with 16 (median of 10 alternating runs; 8 and 32 gained less then).
/// Once its tasks were shorter (the rational tanh), 32 took 162.5 against
/// 165 with 16 (16 alternating pairs; two runs of 8 before: -10 and -5);
/// 64 was level with 32.
constexpr size_t kResultPrefetchAhead = 32;

/// A row's bytes: the common small sizes (a token, a small state) as one
/// inlined copy, the rest through memcpy.
inline void copyPoolRow(void *to, const void *from, size_t bytes) {
  switch (bytes) {
  case 8:
    std::memcpy(to, from, 8);
    return;
  case 16:
    std::memcpy(to, from, 16);
    return;
  case 32:
    std::memcpy(to, from, 32);
    return;
  case 64:
    std::memcpy(to, from, 64);
    return;
  default:
    std::memcpy(to, from, bytes);
  }
}

class CpuBackend final : public Backend {
public:
  CpuBackend(std::shared_ptr<const LoadedArtifact> artifact, unsigned threads,
             const ExecutorOptions &options)
      : artifact_(std::move(artifact)), threadCount_(threads),
        nullTasks_(options.nullTasks), readsAtWait_(options.readsAtWait),
        sharedCopyBytes_(options.sharedCopyBytes),
        weights_(cpu::PackedWeightCache::forArtifact(artifact_.get())) {
    if (threadCount_ > 1)
      threads_ = std::make_unique<cpu::ThreadPool>(threadCount_);
  }

  /// A task runner for every plan of every cell.
  Status prepare() {
    for (const cellpack::CellType *cell : artifact_->cells()) {
      if (!cell->plans())
        continue;
      for (const cellpack::BatchPlan *plan : *cell->plans()) {
        auto created = cpu::CpuTaskRunner::create(
            *cell, *plan, {}, threads_.get(), weights_.get());
        if (!created.ok())
          return Status(created.status().code(),
                        artifact_->displayName() + ": cell '" +
                            cell->name()->str() + "', batch size " +
                            std::to_string(plan->batch_size()) + ": " +
                            created.status().message());
        runners_[plan] = std::move(created).value();
      }
    }
    return Status::ok();
  }

  std::string describe() const override {
    // The kernels this processor runs (CELLRUN_CPU_ISA, CELLRUN_CPU_AMX).
    return "cpu (" + std::to_string(threadCount_) +
           (threadCount_ == 1 ? " thread, " : " threads, ") +
           cpu::cpuIsaName(cpu::detectCpuIsa()) + ", bf16 products on " +
           cpu::bf16KernelsName() + ")";
  }
  bool asynchronous() const override { return false; }
  Executor::Times times() const override { return times_; }

  Result<std::unique_ptr<SlotPool>> createPool(size_t rowBytes, uint32_t rows,
                                               bool) override {
    auto pool = std::make_unique<SlotPool>(rowBytes, rows);
    if (!pool->allocated())
      return Status(StatusCode::ResourceExhausted,
                    "no memory for a pool of " + std::to_string(rows) +
                        " rows of " + std::to_string(rowBytes) + " bytes");
    return pool;
  }
  // Every pool is host memory: the executor copies its rows itself.
  Status copyIn(void *pool, const void *host, size_t bytes) override {
    std::memcpy(pool, host, bytes);
    return Status::ok();
  }
  Status copyOut(void *host, const void *pool, size_t bytes) override {
    std::memcpy(host, pool, bytes);
    return Status::ok();
  }

  Result<uint64_t> submit(const BackendTask &task) override {
    auto found = runners_.find(task.plan);
    if (found == runners_.end())
      return Status(StatusCode::Internal,
                    "cell '" + task.cell->name()->str() +
                        "': no prepared plan of " +
                        std::to_string(task.plan->batch_size()) + " rows");
    const auto &inputRows = *task.inputRows;
    const auto &outputRows = *task.outputRows;
    const auto &inputPools = *task.inputPools;
    const auto &outputPools = *task.outputPools;
    cpu::CpuTaskRunner &runner = *found->second;
    const std::vector<Executor::RowWrite> &writes = task.io->writes;
    // Host memory: the writes land before the task, the reads after it. An
    // input written for every row of the task, for this task only, is read
    // where the request's rows lie instead (when the plan's steps allow
    // it): nothing copied.
    size_t inputCount = inputRows.size();
    rowData_.resize(inputCount);
    inPlace_.assign(inputCount, 0);
    columnData_.assign(inputCount, nullptr);
    // A column (every row, this task only): read where it lies, else
    // copied below; an input with single writes too (for other rows) has
    // all its rows copied.
    for (const Executor::WriteColumn &column : task.io->writeColumns)
      if (runner.readsInPlace(column.input))
        columnData_[column.input] = column.bytes.data();
    for (const Executor::RowWrite &write : writes)
      columnData_[write.input] = nullptr;
    for (const Executor::WriteColumn &column : task.io->writeColumns)
      if (!columnData_[column.input])
        for (uint32_t r = 0; r < task.rows; ++r)
          copyInputRow(task, column.input, r, column.bytes[r]);
    for (const Executor::RowWrite &write : writes)
      if (write.onlyThisTask && runner.readsInPlace(write.input) &&
          !inPlace_[write.input]) {
        inPlace_[write.input] = 1;
        rowData_[write.input].assign(task.rows, nullptr);
      }
    for (const Executor::RowWrite &write : writes)
      if (inPlace_[write.input]) {
        if (!write.onlyThisTask)
          inPlace_[write.input] = 2; // some row is read later: copied
        rowData_[write.input][write.row] = write.bytes;
      }
    for (uint32_t i = 0; i < inputCount; ++i)
      if (inPlace_[i] == 2 ||
          (inPlace_[i] &&
           std::count(rowData_[i].begin(), rowData_[i].end(), nullptr) != 0))
        inPlace_[i] = 0; // not every row: copied as before
    for (const Executor::RowWrite &write : writes)
      if (!inPlace_[write.input])
        copyInputRow(task, write.input, write.row, write.bytes);
    inputs_.clear();
    outputs_.clear();
    for (uint32_t i = 0; i < inputCount; ++i)
      inputs_.push_back({inputPools[i]->data(), inputRows[i].data(),
                         columnData_[i] ? columnData_[i]
                         : inPlace_[i]  ? rowData_[i].data()
                                        : nullptr});
    // Rows read into the results the steps write there themselves as they
    // store them (cpu::PoolView::copyTo), when nothing else is to be done
    // with them after the task: no delivery later, no copies shared among
    // threads or streamed, no places that might change a pool row first.
    size_t readBytes = 0;
    for (const Executor::RowRead &read : task.io->reads)
      readBytes += outputPools[read.output]->rowBytes();
    for (const Executor::ReadColumn &column : task.io->readColumns)
      readBytes += outputPools[column.output]->rowBytes() *
                   (column.to.size() -
                    std::count(column.to.begin(), column.to.end(), nullptr));
    bool shared =
        !readsAtWait_ &&
        readBytes >= std::min(sharedCopyBytes_, cpu::kStreamingMinBytes);
    copies_.assign(outputRows.size(), 0);
    columnTo_.assign(outputRows.size(), nullptr);
    const std::vector<Executor::RowRead> &reads =
        !readsAtWait_ && !shared && task.io->places.empty() && !nullTasks_
            ? readsByStep(runner, task)
            : readsOneByOne(task);
    for (uint32_t i = 0; i < outputRows.size(); ++i)
      outputs_.push_back({outputPools[i]->data(), outputRows[i].data(), nullptr,
                          columnTo_[i] ? columnTo_[i]
                          : copies_[i] ? copyTo_[i].data()
                                       : nullptr});
    if (!nullTasks_)
      if (Status status = runner.run(task.rows, inputs_, outputs_);
          !status.isOk())
        return status;
    placeRows(task.io->places);
    Delivery *delivery = nullptr;
    if (readsAtWait_) { // taken now, delivered at wait (as on cuda)
      delivery = &deliveries_.emplace_back();
      // A delivered task's buffers, reused as a GPU's staging slots are.
      if (!spare_.empty()) {
        *delivery = std::move(spare_.back());
        spare_.pop_back();
        delivery->rows.clear();
      }
      delivery->ticket = tickets_ + 1;
      delivery->bytes.resize(readBytes); // sized first: copies point into it
    }
    size_t taken = 0;
    // Into the results: through copyRows when it may do more than memcpy
    // here, i.e. share the copies among the task's threads (from
    // sharedCopyBytes_: a first write into fresh result memory faults its
    // pages in, at hidden 1024 about as long as the copy again) or stream
    // them past the cache (from kStreamingMinBytes); it decides which.
    readCopies_.clear();
    // Copied here one by one, the rows' places in the results are asked for
    // (to write) kResultPrefetchAhead rows ahead: they are cold lines, each
    // a miss the copies would otherwise wait for in turn.
    bool prefetch = !delivery && !shared;
    for (size_t index = 0; index < reads.size(); ++index) {
      const Executor::RowRead &read = reads[index];
      if (prefetch && index + kResultPrefetchAhead < reads.size())
        __builtin_prefetch(reads[index + kResultPrefetchAhead].destination, 1);
      SlotPool &source = *outputPools[read.output];
      const uint8_t *row =
          static_cast<const uint8_t *>(source.hostData()) +
          static_cast<size_t>(outputRows[read.output][read.row]) *
              source.rowBytes();
      if (shared) {
        readCopies_.push_back({row, read.destination, source.rowBytes()});
        continue;
      }
      if (!delivery) {
        std::memcpy(read.destination, row, source.rowBytes());
        continue;
      }
      uint8_t *kept = delivery->bytes.data() + taken;
      std::memcpy(kept, row, source.rowBytes());
      delivery->rows.push_back({kept, read.destination, source.rowBytes()});
      taken += source.rowBytes();
    }
    if (shared)
      cpu::copyRows(readCopies_, threads_.get(), sharedCopyBytes_);
    return ++tickets_;
  }

  /// Sets copies_ and copyTo_ (single reads) or columnTo_ (a column's
  /// array) for the task's reads of outputs the runner's steps write into
  /// the results themselves (one destination a row), and returns the reads
  /// left to copy after the task.
  const std::vector<Executor::RowRead> &
  readsByStep(const cpu::CpuTaskRunner &runner, const BackendTask &task) {
    const auto &outputPools = *task.outputPools;
    size_t outputCount = outputPools.size();
    copyTo_.resize(outputCount);
    leftReads_.clear();
    // A column is the steps' array of places as it is.
    for (const Executor::ReadColumn &column : task.io->readColumns) {
      uint32_t output = column.output;
      if (runner.copyBytes(output) == outputPools[output]->rowBytes() &&
          !copies_[output]) {
        copies_[output] = 1;
        columnTo_[output] = column.to.data();
      } else {
        column.appendTo(leftReads_);
      }
    }
    for (const Executor::RowRead &read : task.io->reads) {
      uint32_t output = read.output;
      if (runner.copyBytes(output) != outputPools[output]->rowBytes() ||
          columnTo_[output]) {
        leftReads_.push_back(read);
        continue;
      }
      if (!copies_[output]) {
        copies_[output] = 1;
        copyTo_[output].assign(task.rows, nullptr);
      }
      void *&to = copyTo_[output][read.row];
      if (to)
        leftReads_.push_back(read); // a second place for the same row
      else
        to = read.destination;
    }
    return leftReads_;
  }

  /// The task's reads, its columns' among them, copied after it.
  const std::vector<Executor::RowRead> &readsOneByOne(const BackendTask &task) {
    if (task.io->readColumns.empty())
      return task.io->reads;
    leftReads_ = task.io->reads;
    for (const Executor::ReadColumn &column : task.io->readColumns)
      column.appendTo(leftReads_);
    return leftReads_;
  }

  /// Input `input` of task row `row` from `bytes`, into its pool row.
  static void copyInputRow(const BackendTask &task, uint32_t input,
                           uint32_t row, const void *bytes) {
    SlotPool &target = *(*task.inputPools)[input];
    copyPoolRow(static_cast<uint8_t *>(target.hostData()) +
                    static_cast<size_t>((*task.inputRows)[input][row]) *
                        target.rowBytes(),
                bytes, target.rowBytes());
  }

  /// The task's places: zeros first, then the copies.
  static void placeRows(const std::vector<Executor::RowPlace> &places) {
    auto target = [](const Executor::RowPlace &place) {
      return static_cast<uint8_t *>(place.to->hostData()) +
             static_cast<size_t>(place.toRow) * place.to->rowBytes() +
             place.offset;
    };
    for (const Executor::RowPlace &place : places)
      if (!place.from)
        std::memset(target(place), 0, place.bytes);
    for (const Executor::RowPlace &place : places)
      if (place.from)
        std::memcpy(target(place),
                    static_cast<const uint8_t *>(place.from->hostData()) +
                        static_cast<size_t>(place.fromRow) * place.bytes,
                    place.bytes);
  }

  Status wait(uint64_t ticket) override {
    if (ticket == 0 || ticket > tickets_)
      return Status(StatusCode::InvalidArgument,
                    "ticket " + std::to_string(ticket) + " was never issued");
    // Every task ran when it was submitted; with readsAtWait its rows reach
    // their destinations now (this task's and those of the tasks before).
    auto start = std::chrono::steady_clock::now();
    bool delivered = false;
    while (!deliveries_.empty() && deliveries_.front().ticket <= ticket) {
      delivered = true;
      // The task's threads are idle: they share the copies.
      cpu::copyRows(deliveries_.front().rows, threads_.get(), sharedCopyBytes_);
      times_.deliveredRows += deliveries_.front().rows.size();
      if (spare_.size() < kSpareDeliveries)
        spare_.push_back(std::move(deliveries_.front()));
      deliveries_.pop_front();
    }
    if (delivered)
      times_.deliverSeconds += std::chrono::duration<double>(
                                   std::chrono::steady_clock::now() - start)
                                   .count();
    return Status::ok();
  }

private:
  std::shared_ptr<const LoadedArtifact> artifact_;
  unsigned threadCount_ = 1;
  bool nullTasks_ = false, readsAtWait_ = false;
  size_t sharedCopyBytes_ = 0;
  Executor::Times times_;
  /// With readsAtWait: a task's rows read back, taken into `bytes` at
  /// submit and copied from there to their destinations when it (or a
  /// later task) is waited for.
  struct Delivery {
    uint64_t ticket = 0;
    std::vector<uint8_t, UninitializedAllocator<uint8_t>> bytes;
    std::vector<cpu::RowCopy> rows;
  };
  std::deque<Delivery> deliveries_;
  /// Delivered tasks' buffers kept for the next ones (a fresh buffer a task
  /// faulted its pages in: up to 2 MB a task of 512 rows of 4 KB).
  static constexpr size_t kSpareDeliveries = 8;
  std::vector<Delivery> spare_;
  std::unique_ptr<cpu::ThreadPool> threads_;
  /// Weights packed for the CPU GEMM, shared by every plan and by the
  /// other workers' backends over the same artifact.
  std::shared_ptr<cpu::PackedWeightCache> weights_;
  std::unordered_map<const cellpack::BatchPlan *,
                     std::unique_ptr<cpu::CpuTaskRunner>>
      runners_;
  uint64_t tickets_ = 0;
  /// The task's pool views (kept to reuse their storage).
  std::vector<cpu::PoolView> inputs_, outputs_;
  /// Per input, the rows a task reads where they lie (PoolView::rowData),
  /// and whether it does so this task.
  std::vector<std::vector<const void *>> rowData_;
  std::vector<uint8_t> inPlace_;
  std::vector<cpu::RowCopy> readCopies_; // a task's rows into the results
  /// Per output, where its steps write each task row into the results too
  /// (readsByStep; copies_ says which outputs have them this task), and
  /// the reads copied after the task instead.
  std::vector<std::vector<void *>> copyTo_;
  std::vector<uint8_t> copies_;
  /// Per input and output, a column's array given to the steps as it is
  /// (null: none).
  std::vector<const void *const *> columnData_;
  std::vector<void *const *> columnTo_;
  std::vector<Executor::RowRead> leftReads_;
};

} // namespace

Result<std::unique_ptr<Backend>>
cellrun::makeCpuBackend(std::shared_ptr<const LoadedArtifact> artifact,
                        const ExecutorOptions &options) {
  cpu::keepBlasOnCallingThread();
  unsigned count = options.threads
                       ? options.threads
                       : std::max(1u, std::thread::hardware_concurrency());
  auto backend =
      std::make_unique<CpuBackend>(std::move(artifact), count, options);
  if (Status status = backend->prepare(); !status.isOk())
    return status;
  return std::unique_ptr<Backend>(std::move(backend));
}
