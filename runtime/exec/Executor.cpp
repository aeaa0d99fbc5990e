//===- Executor.cpp - Batched tasks of a cell over state pools -----------===//
#include "cellrun/Executor.h"

#include "../backend/cpu/CpuTaskRunner.h"

#include <string>

using namespace cellrun;

/// The pool key of a tensor: its element type and the bytes of one row.
static std::pair<int, size_t> rowType(const cellpack::TensorSpec &spec) {
  size_t bytes = dtypeSize(spec.dtype());
  if (spec.row_shape())
    for (int64_t dim : *spec.row_shape())
      bytes *= static_cast<size_t>(dim);
  return {static_cast<int>(spec.dtype()), bytes};
}

Result<std::unique_ptr<Executor>>
Executor::create(std::shared_ptr<const LoadedArtifact> artifact,
                 uint32_t rowsPerPool, unsigned threads) {
  if (rowsPerPool == 0)
    return Status(StatusCode::InvalidArgument, "pools need at least one row");
  std::unique_ptr<Executor> executor(new Executor(std::move(artifact)));
  if (threads > 1)
    executor->threads_ = std::make_unique<cpu::ThreadPool>(threads);
  for (const cellpack::CellType *cell : executor->artifact_->cells())
    for (const auto *specs : {cell->inputs(), cell->outputs()})
      if (specs)
        for (const cellpack::TensorSpec *spec : *specs) {
          auto key = rowType(*spec);
          if (!executor->pools_.count(key))
            executor->pools_[key] =
                std::make_unique<SlotPool>(key.second, rowsPerPool);
        }
  return executor;
}

Executor::Executor(std::shared_ptr<const LoadedArtifact> artifact)
    : artifact_(std::move(artifact)) {}

Executor::~Executor() = default;

SlotPool &Executor::pool(const cellpack::CellType &cell, bool isOutput,
                         uint32_t index) {
  const auto *specs = isOutput ? cell.outputs() : cell.inputs();
  return *pools_.at(rowType(*specs->Get(index)));
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
  for (uint32_t i = 0; i < specs->size(); ++i) {
    uint32_t capacity = pool(cell, isOutput, i).capacity();
    if (taskRows[i].size() != rows)
      return Status(StatusCode::InvalidArgument,
                    what + " '" + specs->Get(i)->name()->str() + "' has " +
                        std::to_string(taskRows[i].size()) + " rows for a " +
                        std::to_string(rows) + "-row task");
    for (int32_t row : taskRows[i])
      if (row < 0 || static_cast<uint32_t>(row) >= capacity)
        return Status(StatusCode::OutOfRange,
                      what + " '" + specs->Get(i)->name()->str() + "': row " +
                          std::to_string(row) + " is outside its pool of " +
                          std::to_string(capacity));
  }
  return Status::ok();
}

Result<uint32_t>
Executor::run(const cellpack::CellType &cell, uint32_t rows,
              const std::vector<std::vector<int32_t>> &inputRows,
              const std::vector<std::vector<int32_t>> &outputRows) {
  if (Status status = checkRows(cell, rows, inputRows, false); !status.isOk())
    return status;
  if (Status status = checkRows(cell, rows, outputRows, true); !status.isOk())
    return status;
  auto plan = artifact_->smallestPlanAtLeast(cell, rows);
  if (!plan.ok())
    return plan.status();
  auto &runner = runners_[plan.value()];
  if (!runner) {
    auto created =
        cpu::CpuTaskRunner::create(cell, *plan.value(), {}, threads_.get());
    if (!created.ok())
      return created.status();
    runner = std::move(created).value();
  }
  std::vector<cpu::PoolView> inputs, outputs;
  for (uint32_t i = 0; i < inputRows.size(); ++i)
    inputs.push_back({pool(cell, false, i).data(), inputRows[i].data()});
  for (uint32_t i = 0; i < outputRows.size(); ++i)
    outputs.push_back({pool(cell, true, i).data(), outputRows[i].data()});
  if (Status status = runner->run(rows, inputs, outputs); !status.isOk())
    return status;
  return plan.value()->batch_size();
}
