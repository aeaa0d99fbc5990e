//===- CudaBackend.cpp - Tasks of an artifact on one CUDA device ----------===//
#include "CudaBackend.h"

#include "CudaCheck.h"

#include <algorithm>
#include <cstring>
#include <thread>

using namespace cellrun;
using namespace cellrun::cuda;

static constexpr size_t kTicketBytes = 16; // the ticket, then the row blocks
static constexpr size_t kSlotAlignment = 256;

Result<std::unique_ptr<CudaBackend>>
CudaBackend::create(std::shared_ptr<const LoadedArtifact> artifact,
                    const CudaBackendOptions &options) {
  if (options.tasksInFlight == 0)
    return Status(StatusCode::InvalidArgument,
                  "at least one task must be allowed in flight");
  auto device = probeCudaDevice(options.device);
  if (!device.ok())
    return device.status();
  std::unique_ptr<CudaBackend> backend(new CudaBackend());
  backend->artifact_ = std::move(artifact);
  backend->device_ = device.value();
  CELL_CUDA_TRY(cudaSetDevice(options.device));
  CELL_CUDA_TRY(
      cudaStreamCreateWithFlags(&backend->stream_, cudaStreamNonBlocking));
  CELL_CUBLAS_TRY(cublasLtCreate(&backend->blas_));
  auto workspace = DeviceBuffer::allocate(options.gemmWorkspaceBytes);
  if (!workspace.ok())
    return workspace.status();
  backend->gemmWorkspace_ = std::move(workspace).value();

  // A slot holds the row indices of the widest task of any cell.
  size_t widest = 0;
  for (const cellpack::CellType *cell : backend->artifact_->cells()) {
    size_t tensors = (cell->inputs() ? cell->inputs()->size() : 0) +
                     (cell->outputs() ? cell->outputs()->size() : 0);
    uint32_t batch = 0;
    if (cell->plans())
      for (const cellpack::BatchPlan *plan : *cell->plans())
        batch = std::max(batch, plan->batch_size());
    widest = std::max(widest, tensors * batch * sizeof(int32_t));
  }
  backend->slotBytes_ = (kTicketBytes + widest + kSlotAlignment - 1) /
                        kSlotAlignment * kSlotAlignment;
  backend->slots_ = options.tasksInFlight;
  size_t stagingBytes = backend->slotBytes_ * backend->slots_;
  auto host = PinnedBuffer::allocate(stagingBytes, false);
  if (!host.ok())
    return host.status();
  backend->hostStaging_ = std::move(host).value();
  auto staging = DeviceBuffer::allocate(stagingBytes);
  if (!staging.ok())
    return staging.status();
  backend->deviceStaging_ = std::move(staging).value();
  auto counter = PinnedBuffer::allocate(sizeof(uint64_t), false);
  if (!counter.ok())
    return counter.status();
  backend->counter_ = std::move(counter).value();
  return backend;
}

CudaBackend::~CudaBackend() {
  if (stream_)
    cudaStreamSynchronize(stream_);
  runners_.clear();
  cells_.clear();
  if (blas_)
    cublasLtDestroy(blas_);
  if (stream_)
    cudaStreamDestroy(stream_);
}

Result<PoolMemory> CudaBackend::allocatePool(size_t bytes, bool hostVisible) {
  CELL_CUDA_TRY(cudaSetDevice(device_.index));
  PoolMemory memory;
  if (hostVisible) {
    auto buffer = PinnedBuffer::allocate(bytes, true);
    if (!buffer.ok())
      return buffer.status();
    memory.device = buffer->devicePointer();
    memory.host = buffer->data();
    hostPools_.push_back(std::move(buffer).value());
  } else {
    auto buffer = DeviceBuffer::allocate(bytes);
    if (!buffer.ok())
      return buffer.status();
    memory.device = buffer->data();
    devicePools_.push_back(std::move(buffer).value());
  }
  return memory;
}

Status CudaBackend::copyIn(void *device, const void *host, size_t bytes) {
  CELL_CUDA_TRY(cudaSetDevice(device_.index));
  CELL_CUDA_TRY(
      cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_));
  return Status::ok();
}

Status CudaBackend::copyOut(void *host, const void *device, size_t bytes) {
  CELL_CUDA_TRY(cudaSetDevice(device_.index));
  CELL_CUDA_TRY(
      cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_));
  CELL_CUDA_TRY(cudaStreamSynchronize(stream_));
  return Status::ok();
}

Result<const CudaTaskRunner *>
CudaBackend::runner(const cellpack::CellType &cell,
                    const cellpack::BatchPlan &plan) {
  auto &runner = runners_[&plan];
  if (runner)
    return runner.get();
  CELL_CUDA_TRY(cudaSetDevice(device_.index));
  auto &loaded = cells_[&cell];
  if (!loaded) {
    auto created =
        CudaCell::create(*artifact_, cell, device_.computeCapability);
    if (!created.ok())
      return created.status();
    loaded = std::move(created).value();
  }
  auto created =
      CudaTaskRunner::create(*loaded, plan, blas_, gemmWorkspace_.data(),
                             gemmWorkspace_.size(), stream_);
  if (!created.ok()) {
    runners_.erase(&plan);
    return created.status();
  }
  runner = std::move(created).value();
  return runner.get();
}

uint64_t CudaBackend::completed() const {
  return __atomic_load_n(reinterpret_cast<const uint64_t *>(counter_.data()),
                         __ATOMIC_ACQUIRE);
}

Status CudaBackend::wait(uint64_t ticket) {
  if (ticket >= nextTicket_)
    return Status(StatusCode::InvalidArgument,
                  "ticket " + std::to_string(ticket) + " was never issued");
  while (completed() < ticket) {
    // Spin on the counter a while before asking the stream for errors.
    for (int spin = 0; spin < 4096 && completed() < ticket; ++spin)
      __builtin_ia32_pause();
    if (completed() >= ticket)
      break;
    cudaError_t state = cudaStreamQuery(stream_);
    if (state == cudaSuccess) {
      if (completed() >= ticket)
        break;
      return Status(StatusCode::Internal, "the stream is idle but ticket " +
                                              std::to_string(ticket) +
                                              " never completed");
    }
    if (state != cudaErrorNotReady)
      return cudaFailure(state, "a task on the stream", __FILE__, __LINE__);
    std::this_thread::yield();
  }
  return Status::ok();
}

Status CudaBackend::waitForSlot(uint64_t ticket) {
  // The slot of `ticket` was last used by ticket - slots_.
  if (ticket > slots_)
    return wait(ticket - slots_);
  return Status::ok();
}

Result<uint64_t> CudaBackend::submit(
    const cellpack::CellType &cell, const cellpack::BatchPlan &plan,
    uint32_t rows, const std::vector<void *> &inputPools,
    const std::vector<void *> &outputPools,
    const std::vector<const std::vector<int32_t> *> &rowIndices) {
  auto prepared = runner(cell, plan);
  if (!prepared.ok())
    return prepared.status();
  uint32_t batch = plan.batch_size();
  if (rows == 0 || rows > batch)
    return Status(StatusCode::OutOfRange, "a task of " + std::to_string(rows) +
                                              " rows at batch size " +
                                              std::to_string(batch));
  if (rowIndices.size() != inputPools.size() + outputPools.size() ||
      kTicketBytes + rowIndices.size() * batch * sizeof(int32_t) > slotBytes_)
    return Status(StatusCode::InvalidArgument,
                  "row indices do not match the cell's inputs and outputs");
  uint64_t ticket = nextTicket_;
  CELL_TRY(waitForSlot(ticket));
  size_t slot = ticket % slots_;
  uint8_t *host = hostStaging_.data() + slot * slotBytes_;
  uint8_t *device = deviceStaging_.data() + slot * slotBytes_;
  std::memcpy(host, &ticket, sizeof ticket);
  auto *hostRows = reinterpret_cast<int32_t *>(host + kTicketBytes);
  for (size_t t = 0; t < rowIndices.size(); ++t) {
    if (rowIndices[t]->size() < rows)
      return Status(StatusCode::InvalidArgument,
                    "fewer row indices than task rows");
    std::memcpy(hostRows + t * batch, rowIndices[t]->data(),
                rows * sizeof(int32_t));
  }
  size_t used = kTicketBytes + rowIndices.size() * batch * sizeof(int32_t);
  CELL_CUDA_TRY(cudaSetDevice(device_.index));
  CELL_CUDA_TRY(
      cudaMemcpyAsync(device, host, used, cudaMemcpyHostToDevice, stream_));
  DeviceTaskViews views;
  views.inputs = inputPools;
  views.outputs = outputPools;
  auto *deviceRows = reinterpret_cast<const int32_t *>(device + kTicketBytes);
  views.inputRows = deviceRows;
  views.outputRows = deviceRows + inputPools.size() * batch;
  CELL_TRY(prepared.value()->enqueue(rows, views, stream_));
  CELL_CUDA_TRY(cudaMemcpyAsync(counter_.data(), device, sizeof(uint64_t),
                                cudaMemcpyDeviceToHost, stream_));
  nextTicket_ = ticket + 1;
  return ticket;
}
