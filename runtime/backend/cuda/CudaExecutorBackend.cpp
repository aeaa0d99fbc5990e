//===- CudaExecutorBackend.cpp - The executor's cuda backend --------------===//
//
// The executor's Backend over one CudaBackend (CudaBackend.h): pools of
// floating-point rows in device memory, integer rows in mapped pinned
// memory; a task's row writes and reads travel in its one staging copy
// each way (reads into page-locked results written there by the device).
//
//===----------------------------------------------------------------------===//
#include "../Backend.h"

#include "CudaBackend.h"

#include <algorithm>
#include <thread>

using namespace cellrun;

namespace {

class CudaExecutorBackend final : public Backend {
public:
  explicit CudaExecutorBackend(std::unique_ptr<cuda::CudaBackend> cuda)
      : cuda_(std::move(cuda)) {}

  std::string describe() const override { return cuda_->device().describe(); }
  bool asynchronous() const override { return true; }
  Executor::Times times() const override { return cuda_->times(); }

  Result<std::unique_ptr<SlotPool>> createPool(size_t rowBytes, uint32_t rows,
                                               bool hostVisible) override {
    auto memory = cuda_->allocatePool(rowBytes * rows, hostVisible);
    if (!memory.ok())
      return memory.status();
    return std::make_unique<SlotPool>(rowBytes, rows, memory->device,
                                      memory->host);
  }
  Status copyIn(void *pool, const void *host, size_t bytes) override {
    return cuda_->copyIn(pool, host, bytes);
  }
  Status copyOut(void *host, const void *pool, size_t bytes) override {
    return cuda_->copyOut(host, pool, bytes);
  }

  Result<uint64_t> submit(const BackendTask &task) override {
    const auto &inputRows = *task.inputRows;
    const auto &outputRows = *task.outputRows;
    inputs_.clear();
    outputs_.clear();
    rowIndices_.clear();
    for (uint32_t i = 0; i < inputRows.size(); ++i) {
      inputs_.push_back((*task.inputPools)[i]->data());
      rowIndices_.push_back(&inputRows[i]);
    }
    for (uint32_t i = 0; i < outputRows.size(); ++i) {
      outputs_.push_back((*task.outputPools)[i]->data());
      rowIndices_.push_back(&outputRows[i]);
    }
    // The executor's writes and reads as they are, columns too; the places
    // converted.
    cuda::TaskTransfers &transfers = transfers_;
    transfers.moves = {&task.io->writes, &task.io->reads,
                       &task.io->writeColumns, &task.io->readColumns};
    transfers.inputs.clear();
    transfers.outputs.clear();
    for (SlotPool *pool : *task.inputPools)
      transfers.inputs.push_back({pool->data(), pool->rowBytes()});
    for (SlotPool *pool : *task.outputPools)
      transfers.outputs.push_back({pool->data(), pool->rowBytes()});
    transfers.places.clear();
    for (const Executor::RowPlace &place : task.io->places) {
      cuda::TaskTransfers::Place &moved = transfers.places.emplace_back();
      moved.from = place.from ? place.from->data() : nullptr;
      moved.fromRow = place.fromRow;
      moved.to = place.to->data();
      moved.toRowBytes = place.to->rowBytes();
      moved.toRow = place.toRow;
      moved.offset = place.offset;
      moved.bytes = place.bytes;
    }
    auto ticket = cuda_->submit(*task.cell, *task.plan, task.rows, inputs_,
                                outputs_, rowIndices_, transfers);
    transfers.moves = {}; // read during submit only
    return ticket;
  }

  Status wait(uint64_t ticket) override { return cuda_->wait(ticket); }

private:
  std::unique_ptr<cuda::CudaBackend> cuda_;
  std::vector<void *> inputs_, outputs_;
  std::vector<const std::vector<int32_t> *> rowIndices_;
  cuda::TaskTransfers transfers_;
};

} // namespace

Result<std::unique_ptr<Backend>>
cellrun::makeCudaBackend(std::shared_ptr<const LoadedArtifact> artifact,
                         const ExecutorOptions &options) {
  cuda::CudaBackendOptions cudaOptions;
  cudaOptions.device = options.cudaDevice;
  cudaOptions.tasksInFlight = options.tasksInFlight;
  cudaOptions.copyThreads =
      options.copyThreads
          ? options.copyThreads
          : std::max(1u, std::min(4u, std::thread::hardware_concurrency() / 4));
  cudaOptions.pinnedResults = options.pinnedResults;
  cudaOptions.graphs = options.cudaGraphs;
  cudaOptions.graphLimit = options.cudaGraphLimit;
  cudaOptions.timeSpans = options.timeDevice;
  auto backend = cuda::CudaBackend::create(std::move(artifact), cudaOptions);
  if (!backend.ok())
    return backend.status();
  return std::unique_ptr<Backend>(
      std::make_unique<CudaExecutorBackend>(std::move(backend).value()));
}
