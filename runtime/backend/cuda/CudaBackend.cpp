//===- CudaBackend.cpp - Tasks of an artifact on one CUDA device ----------===//
#include "CudaBackend.h"

#include "CudaCheck.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

using namespace cellrun;
using namespace cellrun::cuda;

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
  // The probe has opened cuBLASLt (no device counts without it).
  CELL_CUBLAS_TRY(lt().cublasLtCreate(&backend->blas_));
  auto workspace = DeviceBuffer::allocate(options.gemmWorkspaceBytes);
  if (!workspace.ok())
    return workspace.status();
  backend->gemmWorkspace_ = std::move(workspace).value();

  if (options.pinnedResults) {
    auto pinned = installPinnedValueMemory(options.device);
    if (!pinned.ok())
      return pinned.status();
    backend->pinnedResults_ = pinned.value();
  }

  // A slot holds what the widest task of any cell may move: its row
  // indices, a data row for every input row, and a read-back row (with
  // its index, or its address) and a place (two indices) for every output
  // row.
  size_t widest = 0, widestReadBack = 0;
  for (const cellpack::CellType *cell : backend->artifact_->cells()) {
    uint32_t batch = 0;
    if (cell->plans())
      for (const cellpack::BatchPlan *plan : *cell->plans())
        batch = std::max(batch, plan->batch_size());
    size_t bytes = 0, readBack = 0;
    for (const auto *specs : {cell->inputs(), cell->outputs()})
      if (specs)
        for (const cellpack::TensorSpec *spec : *specs) {
          size_t rowBytes = dtypeSize(spec->dtype());
          if (spec->row_shape())
            for (int64_t dim : *spec->row_shape())
              rowBytes *= static_cast<size_t>(dim);
          bytes += batch * sizeof(int32_t) + align16(batch * sizeof(int32_t));
          if (specs == cell->inputs())
            bytes += align16(batch * rowBytes);
          else {
            readBack += align16(batch * rowBytes);
            bytes += 2 * align16(batch * sizeof(int32_t));
            // An address for every row; an output's rows may split into
            // a read group and an addressed one, each padded to 16 bytes.
            if (options.pinnedResults)
              bytes += align16(batch * sizeof(uint64_t)) + 16;
          }
        }
    widest = std::max(widest, bytes);
    widestReadBack = std::max(widestReadBack, readBack);
  }
  auto round = [](size_t bytes) {
    return (bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
  };
  backend->slotBytes_ = round(kTicketBytes + widest);
  backend->readBackBytes_ = round(widestReadBack);
  if (options.graphs)
    backend->graphs_ =
        std::make_unique<PlanGraphs>(options.graphLimit, options.device);
  if (options.copyThreads > 1)
    backend->copyPool_ = std::make_unique<cpu::ThreadPool>(options.copyThreads);
  backend->slots_.resize(options.tasksInFlight);
  if (options.timeSpans)
    for (Slot &slot : backend->slots_) {
      CELL_CUDA_TRY(cudaEventCreate(&slot.spanStart));
      CELL_CUDA_TRY(cudaEventCreate(&slot.spanEnd));
    }
  size_t slots = options.tasksInFlight;
  auto host = PinnedBuffer::allocate(backend->slotBytes_ * slots, false);
  if (!host.ok())
    return host.status();
  backend->hostStaging_ = std::move(host).value();
  // One device area for every slot: a task's copy into it comes after the
  // tasks before it on the one stream (a copy is never a programmatic
  // launch), so the same addresses hold each task's row indices, and a
  // plan's CUDA graph serves every slot.
  auto staging = DeviceBuffer::allocate(backend->slotBytes_);
  if (!staging.ok())
    return staging.status();
  backend->deviceStaging_ = std::move(staging).value();
  auto hostReadBack =
      PinnedBuffer::allocate(backend->readBackBytes_ * slots, false);
  if (!hostReadBack.ok())
    return hostReadBack.status();
  backend->hostReadBack_ = std::move(hostReadBack).value();
  auto deviceReadBack = DeviceBuffer::allocate(backend->readBackBytes_ * slots);
  if (!deviceReadBack.ok())
    return deviceReadBack.status();
  backend->deviceReadBack_ = std::move(deviceReadBack).value();
  auto counter = PinnedBuffer::allocate(sizeof(uint64_t), false);
  if (!counter.ok())
    return counter.status();
  backend->counter_ = std::move(counter).value();
  CELL_TRY(backend->prepareAll());
  return backend;
}

Status CudaBackend::prepareAll() {
  // Code loading, weight upload, workspaces and cuBLASLt's timed algorithm
  // choice all happen here, never on a task's path.
  for (const cellpack::CellType *cell : artifact_->cells())
    if (cell->plans())
      for (const cellpack::BatchPlan *plan : *cell->plans())
        if (auto prepared = runner(*cell, *plan); !prepared.ok())
          return prepared.status();
  CELL_CUDA_TRY(cudaStreamSynchronize(stream_));
  return Status::ok();
}

CudaBackend::~CudaBackend() {
  if (stream_)
    cudaStreamSynchronize(stream_);
  graphs_.reset();
  for (Slot &slot : slots_)
    for (cudaEvent_t event : {slot.spanStart, slot.spanEnd})
      if (event)
        cudaEventDestroy(event);
  runners_.clear();
  cells_.clear();
  if (blas_)
    lt().cublasLtDestroy(blas_);
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
  auto created = CudaTaskRunner::create(
      *loaded, plan, blas_, gemmWorkspace_.data(), gemmWorkspace_.size(),
      stream_, device_.multiprocessors);
  if (!created.ok()) {
    runners_.erase(&plan);
    return created.status();
  }
  runner = std::move(created).value();
  return runner.get();
}

Executor::Times CudaBackend::times() const {
  Executor::Times times = times_;
  if (graphs_) {
    times.planGraphLaunches = graphs_->counts().graphLaunches;
    times.planGraphCaptures = graphs_->counts().captures;
    times.planFirstRuns = graphs_->counts().firstRuns;
    times.plansLaunchedDirectly = graphs_->counts().direct;
  }
  return times;
}

uint64_t CudaBackend::completed() const {
  return __atomic_load_n(reinterpret_cast<const uint64_t *>(counter_.data()),
                         __ATOMIC_ACQUIRE);
}

Status CudaBackend::wait(uint64_t ticket) {
  if (!failure_.isOk())
    return failure_;
  if (ticket >= nextTicket_)
    return Status(StatusCode::InvalidArgument,
                  "ticket " + std::to_string(ticket) + " was never issued");
  auto start = std::chrono::steady_clock::now();
  bool blocked = false;
  while (completed() < ticket) {
    blocked = true;
    // Spin on the counter a while before asking the stream for errors.
    for (int spin = 0; spin < 4096 && completed() < ticket; ++spin)
      __builtin_ia32_pause();
    if (completed() >= ticket)
      break;
    cudaError_t state = cudaStreamQuery(stream_);
    if (state == cudaSuccess && completed() >= ticket)
      break;
    if (state == cudaErrorNotReady) {
      std::this_thread::yield();
      continue;
    }
    // The stream failed (or went idle short of the ticket): no task after
    // the last one seen finished can be trusted, and their callers' read
    // destinations may go away, so nothing more is delivered.
    // From now on every task fails: to the executor, the device is lost.
    Status failed =
        state == cudaSuccess
            ? Status(StatusCode::Internal, "the stream is idle but ticket " +
                                               std::to_string(ticket) +
                                               " never completed")
            : cudaFailure(state, "a task on the stream", __FILE__, __LINE__);
    failure_ = Status(StatusCode::Unavailable,
                      failed.message() + " (the stream takes no more tasks)");
    deliverFinished();
    for (Slot &slot : slots_)
      slot.deliveries.clear();
    return failure_;
  }
  if (blocked)
    times_.blockedSeconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  deliverFinished();
  return Status::ok();
}

void CudaBackend::deliverFinished() {
  uint64_t finished = completed();
  if (delivered_ >= finished)
    return;
  // The spans first, apart from the copies' time.
  for (uint64_t ticket = delivered_ + 1; ticket <= finished; ++ticket)
    if (const Slot &slot = slots_[ticket % slots_.size()]; slot.spanStart)
      addSpan(slot);
  auto start = std::chrono::steady_clock::now();
  for (; delivered_ < finished; ++delivered_) {
    Slot &slot = slots_[(delivered_ + 1) % slots_.size()];
    times_.deliveredRows += slot.deliveries.size();
    cpu::copyRows(slot.deliveries, copyPool_.get());
    slot.deliveries.clear();
  }
  times_.deliverSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
}

void CudaBackend::addSpan(const Slot &slot) {
  // Both events are before the task's ticket on the stream, so done (the
  // synchronization returns at once; it guards against the ticket's write
  // reaching the host before the event is marked complete). The stream's
  // tasks follow one another: their spans do not overlap, and their sum is
  // the time the stream held a task.
  float milliseconds = 0;
  if (cudaEventSynchronize(slot.spanEnd) == cudaSuccess &&
      cudaEventElapsedTime(&milliseconds, slot.spanStart, slot.spanEnd) ==
          cudaSuccess) {
    times_.deviceSeconds += milliseconds * 1e-3;
    ++times_.deviceTimedTasks;
  } else {
    (void)cudaGetLastError(); // a span not timed is not a later call's error
  }
}

Status CudaBackend::waitForSlot(uint64_t ticket) {
  // The slot of `ticket` was last used by ticket - slots.
  if (ticket > slots_.size())
    return wait(ticket - slots_.size());
  return Status::ok();
}
