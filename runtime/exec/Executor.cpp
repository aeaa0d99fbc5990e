//===- Executor.cpp - Batched tasks of a cell over state pools -----------===//
#include "exec/Executor.h"

#include "../backend/Backend.h"

#include <algorithm>
#include <cstring>
#include <string>

using namespace cellrun;

/// Integer and boolean rows (token ids, flags) are what the host reads back
/// after steps; on the GPU their pools are in mapped host memory.
static bool hostVisibleType(int dtype) {
  auto type = static_cast<cellpack::DType>(dtype);
  return type != cellpack::DType::F32 && type != cellpack::DType::F64 &&
         type != cellpack::DType::F16 && type != cellpack::DType::BF16;
}

Result<std::unique_ptr<Executor>>
Executor::create(std::shared_ptr<const LoadedArtifact> artifact,
                 uint32_t rowsPerPool, unsigned threads) {
  ExecutorOptions options;
  options.threads = threads;
  return create(std::move(artifact), rowsPerPool, options);
}

Result<std::unique_ptr<Executor>>
Executor::create(std::shared_ptr<const LoadedArtifact> artifact,
                 uint32_t rowsPerPool, const ExecutorOptions &options,
                 FaultInjector injectFault) {
  if (rowsPerPool == 0)
    return Status(StatusCode::InvalidArgument, "pools need at least one row");
  std::unique_ptr<Executor> executor(new Executor(artifact));
  executor->device_ = options.device;
  auto backend = options.device == DeviceKind::Cuda
                     ? makeCudaBackend(std::move(artifact), options)
                     : makeCpuBackend(std::move(artifact), options);
  if (!backend.ok())
    return backend.status();
  executor->backend_ = std::move(backend).value();
  if (Status status = executor->createPools(rowsPerPool); !status.isOk())
    return status;
  if ((executor->injectFault_ = std::move(injectFault)))
    for (auto &[key, pool] : executor->pools_)
      pool->setAcquireFault([inject = executor->injectFault_] {
        return inject(FaultPoint::Allocate);
      });
  return executor;
}

Status Executor::createPools(uint32_t rowsPerPool) {
  for (const cellpack::CellType *cell : artifact_->cells())
    for (const auto *specs : {cell->inputs(), cell->outputs()}) {
      if (!specs)
        continue;
      for (const cellpack::TensorSpec *spec : *specs) {
        auto key = poolRowType(*spec);
        if (pools_.count(key))
          continue;
        auto pool = backend_->createPool(key.second, rowsPerPool,
                                         hostVisibleType(key.first));
        if (!pool.ok())
          return pool.status();
        pools_[key] = std::move(pool).value();
      }
    }
  return Status::ok();
}

Executor::Executor(std::shared_ptr<const LoadedArtifact> artifact)
    : artifact_(std::move(artifact)) {}

Executor::~Executor() = default;

std::string Executor::describe() const { return backend_->describe(); }

bool Executor::asynchronous() const { return backend_->asynchronous(); }

Executor::Times Executor::times() const { return backend_->times(); }

SlotPool &Executor::pool(const cellpack::CellType &cell, bool isOutput,
                         uint32_t index) {
  const auto *specs = isOutput ? cell.outputs() : cell.inputs();
  return *pools_.at(poolRowType(*specs->Get(index)));
}

const Executor::CellPools &Executor::poolsOf(const cellpack::CellType &cell) {
  auto [found, added] = cellPools_.try_emplace(&cell);
  if (added) {
    uint32_t inputs = cell.inputs() ? cell.inputs()->size() : 0;
    uint32_t outputs = cell.outputs() ? cell.outputs()->size() : 0;
    for (uint32_t i = 0; i < inputs; ++i)
      found->second.inputs.push_back(&pool(cell, false, i));
    for (uint32_t o = 0; o < outputs; ++o)
      found->second.outputs.push_back(&pool(cell, true, o));
  }
  return found->second;
}

uint32_t Executor::rowsInUse() const {
  uint32_t used = 0;
  for (const auto &[key, pool] : pools_)
    used += pool->capacity() - pool->available();
  return used;
}

Status Executor::writeRow(SlotPool &pool, uint32_t row, const void *bytes) {
  if (row >= pool.capacity())
    return Status(StatusCode::OutOfRange,
                  "row " + std::to_string(row) + " is outside its pool");
  size_t offset = static_cast<size_t>(row) * pool.rowBytes();
  if (pool.hostData()) {
    std::memcpy(static_cast<uint8_t *>(pool.hostData()) + offset, bytes,
                pool.rowBytes());
    return Status::ok();
  }
  if (!lost_.isOk())
    return lost_;
  return noteLoss(backend_->copyIn(static_cast<uint8_t *>(pool.data()) + offset,
                                   bytes, pool.rowBytes()));
}

Status Executor::readRow(SlotPool &pool, uint32_t row, void *bytes) {
  if (row >= pool.capacity())
    return Status(StatusCode::OutOfRange,
                  "row " + std::to_string(row) + " is outside its pool");
  size_t offset = static_cast<size_t>(row) * pool.rowBytes();
  if (pool.hostData()) {
    std::memcpy(bytes, static_cast<uint8_t *>(pool.hostData()) + offset,
                pool.rowBytes());
    return Status::ok();
  }
  if (!lost_.isOk())
    return lost_;
  return noteLoss(backend_->copyOut(
      bytes, static_cast<uint8_t *>(pool.data()) + offset, pool.rowBytes()));
}

Status Executor::checkRows(const cellpack::CellType &cell, uint32_t rows,
                           const std::vector<std::vector<int32_t>> &taskRows,
                           bool isOutput) {
  const auto *specs = isOutput ? cell.outputs() : cell.inputs();
  std::string what = isOutput ? "output" : "input";
  if (taskRows.size() != specs->size())
    return Status(StatusCode::InvalidArgument,
                  "cell '" + cell.name()->str() + "' has " +
                      std::to_string(specs->size()) + " " + what +
                      "s, the task gives rows for " +
                      std::to_string(taskRows.size()));
  const CellPools &pools = poolsOf(cell);
  for (uint32_t i = 0; i < specs->size(); ++i) {
    uint32_t capacity =
        (isOutput ? pools.outputs : pools.inputs)[i]->capacity();
    if (taskRows[i].size() != rows)
      return Status(StatusCode::InvalidArgument,
                    what + " '" + specs->Get(i)->name()->str() + "' has " +
                        std::to_string(taskRows[i].size()) + " rows for a " +
                        std::to_string(rows) + "-row task");
    // One pass without a branch (vectorised: a row outside 0..capacity-1
    // makes row or capacity-1-row negative), then the culprit if any.
    int32_t last = static_cast<int32_t>(capacity) - 1, signs = 0;
    for (int32_t row : taskRows[i])
      signs |= row | (last - row);
    if (signs < 0)
      for (int32_t row : taskRows[i])
        if (row < 0 || static_cast<uint32_t>(row) >= capacity)
          return Status(StatusCode::OutOfRange,
                        what + " '" + specs->Get(i)->name()->str() + "': row " +
                            std::to_string(row) + " is outside its pool of " +
                            std::to_string(capacity));
  }
  return Status::ok();
}

Status Executor::checkIO(const cellpack::CellType &cell, uint32_t rows,
                         const TaskIO &io) {
  uint32_t inputs = cell.inputs() ? cell.inputs()->size() : 0;
  uint32_t outputs = cell.outputs() ? cell.outputs()->size() : 0;
  // One pass without a branch, then the culprit if any.
  bool outside = false;
  for (const RowWrite &write : io.writes)
    outside |= (write.input >= inputs) | (write.row >= rows) | !write.bytes;
  for (const RowRead &read : io.reads)
    outside |=
        (read.output >= outputs) | (read.row >= rows) | !read.destination;
  if (!outside) {
    if (Status status = checkColumns(inputs, outputs, rows, io); !status.isOk())
      return status;
    return checkPlaces(io.places);
  }
  for (const RowWrite &write : io.writes)
    if (write.input >= inputs || write.row >= rows || !write.bytes)
      return Status(StatusCode::InvalidArgument,
                    "a row write names input " + std::to_string(write.input) +
                        " of row " + std::to_string(write.row) +
                        ", outside the task");
  for (const RowRead &read : io.reads)
    if (read.output >= outputs || read.row >= rows || !read.destination)
      return Status(StatusCode::InvalidArgument,
                    "a row read names output " + std::to_string(read.output) +
                        " of row " + std::to_string(read.row) +
                        ", outside the task");
  return Status::ok();
}

Status Executor::checkColumns(uint32_t inputs, uint32_t outputs, uint32_t rows,
                              const TaskIO &io) {
  for (const WriteColumn &column : io.writeColumns) {
    bool fits = column.input < inputs && column.bytes.size() == rows;
    for (const void *bytes : column.bytes) // no branch: one pass
      fits &= bytes != nullptr;
    if (!fits)
      return Status(StatusCode::InvalidArgument,
                    "the writes of input " + std::to_string(column.input) +
                        " are not one a row of the task's " +
                        std::to_string(rows));
  }
  for (const ReadColumn &column : io.readColumns)
    if (column.output >= outputs || column.to.size() != rows)
      return Status(StatusCode::InvalidArgument,
                    "the reads of output " + std::to_string(column.output) +
                        " are not one a row of the task's " +
                        std::to_string(rows));
  return Status::ok();
}

Status Executor::checkPlaces(const std::vector<RowPlace> &places) const {
  auto mine = [&](const SlotPool *pool) {
    for (const auto &[key, owned] : pools_)
      if (owned.get() == pool)
        return true;
    return false;
  };
  auto inside = [](const SlotPool &pool, int32_t row) {
    return row >= 0 && static_cast<uint32_t>(row) < pool.capacity();
  };
  for (const RowPlace &place : places) {
    bool fits =
        place.to && mine(place.to) && inside(*place.to, place.toRow) &&
        place.bytes > 0 &&
        static_cast<size_t>(place.offset) + place.bytes <= place.to->rowBytes();
    if (fits && place.from)
      fits = mine(place.from) && inside(*place.from, place.fromRow) &&
             place.bytes == place.from->rowBytes();
    if (!fits)
      return Status(StatusCode::InvalidArgument,
                    "a row place of " + std::to_string(place.bytes) +
                        " bytes at offset " + std::to_string(place.offset) +
                        " of row " + std::to_string(place.toRow) +
                        " is not a whole row of this executor's pools placed "
                        "inside another");
  }
  return Status::ok();
}

Result<uint64_t>
Executor::submit(const cellpack::CellType &cell, uint32_t rows,
                 const std::vector<std::vector<int32_t>> &inputRows,
                 const std::vector<std::vector<int32_t>> &outputRows,
                 uint32_t *batchSize, const TaskIO &io) {
  auto plan = artifact_->smallestPlanAtLeast(cell, rows);
  if (!plan.ok())
    return plan.status();
  if (batchSize)
    *batchSize = plan.value()->batch_size();
  return submitWithPlan(cell, *plan.value(), rows, inputRows, outputRows, io);
}

Result<uint64_t> Executor::submitWithPlan(
    const cellpack::CellType &cell, const cellpack::BatchPlan &batchPlan,
    uint32_t rows, const std::vector<std::vector<int32_t>> &inputRows,
    const std::vector<std::vector<int32_t>> &outputRows, const TaskIO &io) {
  if (Status status = checkRows(cell, rows, inputRows, false); !status.isOk())
    return status;
  if (Status status = checkRows(cell, rows, outputRows, true); !status.isOk())
    return status;
  if (rows == 0 || rows > batchPlan.batch_size())
    return Status(StatusCode::OutOfRange,
                  "a task of " + std::to_string(rows) + " rows at batch size " +
                      std::to_string(batchPlan.batch_size()));
  if (Status status = checkIO(cell, rows, io); !status.isOk())
    return status;
  if (!lost_.isOk())
    return lost_;
  if (injectFault_) {
    if (Status fault = injectFault_(FaultPoint::Device); !fault.isOk())
      return noteLoss(Status(StatusCode::Unavailable,
                             "the device stopped: " + fault.message()));
    if (Status fault = injectFault_(FaultPoint::Transfer); !fault.isOk())
      return fault;
  }
  auto issued = issue(cell, batchPlan, rows, inputRows, outputRows, io);
  if (!issued.ok())
    return noteLoss(issued.status());
  if (injectFault_)
    if (Status fault = injectFault_(FaultPoint::Kernel); !fault.isOk())
      failedTickets_[issued.value()] = fault;
  return issued;
}

Status Executor::noteLoss(Status status) {
  // The CUDA backend reports errors that leave the context unusable as
  // Unavailable (CudaCheck.h); the cpu backend only when injected.
  if (status.code() == StatusCode::Unavailable && lost_.isOk())
    lost_ = status;
  return status;
}

Result<uint64_t> Executor::issue(
    const cellpack::CellType &cell, const cellpack::BatchPlan &plan,
    uint32_t rows, const std::vector<std::vector<int32_t>> &inputRows,
    const std::vector<std::vector<int32_t>> &outputRows, const TaskIO &io) {
  const CellPools &pools = poolsOf(cell);
  BackendTask task;
  task.cell = &cell;
  task.plan = &plan;
  task.rows = rows;
  task.inputRows = &inputRows;
  task.outputRows = &outputRows;
  task.inputPools = &pools.inputs;
  task.outputPools = &pools.outputs;
  task.io = &io;
  return backend_->submit(task);
}

Status Executor::wait(uint64_t ticket) {
  // A task whose kernels failed (injected) reports it when waited for,
  // after the tasks before it, as a device error would.
  if (!lost_.isOk()) {
    failedTickets_.clear();
    return lost_;
  }
  Status waited = noteLoss(backend_->wait(ticket));
  for (auto failed = failedTickets_.begin();
       failed != failedTickets_.end() && failed->first <= ticket;) {
    if (waited.isOk())
      waited = failed->second;
    failed = failedTickets_.erase(failed);
  }
  return waited;
}

Result<uint32_t>
Executor::run(const cellpack::CellType &cell, uint32_t rows,
              const std::vector<std::vector<int32_t>> &inputRows,
              const std::vector<std::vector<int32_t>> &outputRows,
              const TaskIO &io) {
  uint32_t batchSize = 0;
  auto ticket = submit(cell, rows, inputRows, outputRows, &batchSize, io);
  if (!ticket.ok())
    return ticket.status();
  if (Status status = wait(ticket.value()); !status.isOk())
    return status;
  return batchSize;
}
