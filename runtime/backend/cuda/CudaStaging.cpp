//===- CudaStaging.cpp - One task through its staging slot ----------------===//
//
// Submission of a task on the cuda backend: its slot laid out and filled on
// the host (CudaSlotLayout.h: the ticket, the task's row indices, the
// written rows, the indices of the read ones), the places' indices after
// them, one host-to-device copy, the kernels, one copy back (rows whose
// destination is page-locked value memory the device writes in place, by
// the address kernel instead: no copy back). Rows of mapped
// (host-visible) pools go the same way: the host never writes a pool row
// itself, since a task still in flight may write that row after the host
// (a step issued past EOS whose request has ended and given its rows back),
// and stream order settles it when the write is a kernel of a later task.
//
//===----------------------------------------------------------------------===//
#include "CudaBackend.h"

#include "CudaCheck.h"
#include "RowCopyKernel.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

using namespace cellrun;
using namespace cellrun::cuda;

size_t
CudaBackend::layOutPlaces(const std::vector<TaskTransfers::Place> &places,
                          uint8_t *host, size_t at, size_t limit,
                          PlaceLayout &layout) {
  // A copy whose size divides its target row and offset is row
  // `toRow * (toRowBytes / bytes) + offset / bytes` of `to` cut into rows
  // of its size: the row-copy kernel moves a whole group at once.
  auto grouped = [](const TaskTransfers::Place &place) {
    return place.toRowBytes % place.bytes == 0 &&
           place.offset % place.bytes == 0 &&
           (static_cast<uint64_t>(place.toRow) + 1) *
                   (place.toRowBytes / place.bytes) <=
               INT32_MAX;
  };
  auto groupOf = [&](const TaskTransfers::Place &place) {
    size_t g = 0;
    while (g < layout.groups.size() && !(layout.groups[g].from == place.from &&
                                         layout.groups[g].to == place.to &&
                                         layout.groups[g].bytes == place.bytes))
      ++g;
    return g;
  };
  for (const TaskTransfers::Place &place : places) {
    if (!place.from)
      layout.zeros.push_back(&place);
    else if (!grouped(place))
      layout.loose.push_back(&place);
    else if (size_t g = groupOf(place); g < layout.groups.size())
      ++layout.groups[g].count;
    else
      layout.groups.push_back({place.from, place.to, place.bytes, 1, 0, 0});
  }
  for (PlaceGroup &group : layout.groups) {
    group.fromRows = at;
    group.toRows = align16(at + group.count * sizeof(int32_t));
    at = align16(group.toRows + group.count * sizeof(int32_t));
  }
  if (at > limit)
    return at; // not written: the caller fails the task
  // The indices, each group's in the order of its places.
  std::vector<uint32_t> filled(layout.groups.size(), 0);
  for (const TaskTransfers::Place &place : places) {
    if (!place.from || !grouped(place))
      continue;
    size_t g = groupOf(place);
    const PlaceGroup &group = layout.groups[g];
    uint32_t k = filled[g]++;
    reinterpret_cast<int32_t *>(host + group.fromRows)[k] = place.fromRow;
    reinterpret_cast<int32_t *>(host + group.toRows)[k] = static_cast<int32_t>(
        static_cast<uint64_t>(place.toRow) * (place.toRowBytes / place.bytes) +
        place.offset / place.bytes);
  }
  return at;
}

Status CudaBackend::enqueuePlaces(const cellpack::CellType &cell,
                                  const PlaceLayout &layout,
                                  const uint8_t *device) {
  auto target = [](const TaskTransfers::Place &place) {
    return static_cast<uint8_t *>(place.to) +
           static_cast<size_t>(place.toRow) * place.toRowBytes + place.offset;
  };
  for (const TaskTransfers::Place *place : layout.zeros)
    CELL_CUDA_TRY(cudaMemsetAsync(target(*place), 0, place->bytes, stream_));
  for (const PlaceGroup &group : layout.groups)
    CELL_TRY(copyRows(
        cell, group.from,
        reinterpret_cast<const int32_t *>(device + group.fromRows), group.to,
        reinterpret_cast<const int32_t *>(device + group.toRows), group.bytes,
        group.count));
  for (const TaskTransfers::Place *place : layout.loose)
    CELL_CUDA_TRY(
        cudaMemcpyAsync(target(*place),
                        static_cast<const uint8_t *>(place->from) +
                            static_cast<size_t>(place->fromRow) * place->bytes,
                        place->bytes, cudaMemcpyDefault, stream_));
  return Status::ok();
}

Status CudaBackend::launchRowCopy(const cellpack::CellType &cell,
                                  const char *name, void **args,
                                  size_t rowBytes, uint32_t count) {
  const CudaCell &code = *cells_.at(&cell);
  auto kernel = code.kernel(name);
  if (!kernel.ok())
    return Status(StatusCode::DataLoss,
                  "cell '" + cell.name()->str() + "': its CUDA code has no " +
                      name + " (compile the model again with this cellc)");
  size_t units = rowBytes / copyUnit(rowBytes) * count;
  size_t blocks =
      (units + cellpack::kRowCopyBlockSize - 1) / cellpack::kRowCopyBlockSize;
  blocks = std::clamp<size_t>(blocks, 1, 4096);
  CELL_CUDA_TRY(launchKernel(kernel.value(),
                             dim3(static_cast<unsigned>(blocks)),
                             dim3(cellpack::kRowCopyBlockSize), args, stream_,
                             code.launchesProgrammatically()));
  return Status::ok();
}

Status CudaBackend::copyRows(const cellpack::CellType &cell, const void *from,
                             const int32_t *fromRows, void *to,
                             const int32_t *toRows, size_t rowBytes,
                             uint32_t count) {
  unsigned bytes = static_cast<unsigned>(rowBytes);
  void *args[] = {&from, &fromRows, &to, &toRows, &bytes, &count};
  return launchRowCopy(cell, cellpack::kRowCopyKernelName, args, rowBytes,
                       count);
}

Status CudaBackend::copyRowsToAddresses(const cellpack::CellType &cell,
                                        const void *from,
                                        const int32_t *fromRows,
                                        const uint64_t *to, size_t rowBytes,
                                        uint32_t count) {
  unsigned bytes = static_cast<unsigned>(rowBytes);
  void *args[] = {&from, &fromRows, &to, &bytes, &count};
  return launchRowCopy(cell, cellpack::kRowCopyToAddressesKernelName, args,
                       rowBytes, count);
}

Result<uint64_t>
CudaBackend::submit(const cellpack::CellType &cell,
                    const cellpack::BatchPlan &plan, uint32_t rows,
                    const std::vector<void *> &inputPools,
                    const std::vector<void *> &outputPools,
                    const std::vector<const std::vector<int32_t> *> &rowIndices,
                    const TaskTransfers &transfers) {
  if (!failure_.isOk())
    return failure_;
  auto prepared = runner(cell, plan);
  if (!prepared.ok())
    return prepared.status();
  uint32_t batch = plan.batch_size();
  if (rows == 0 || rows > batch)
    return Status(StatusCode::OutOfRange, "a task of " + std::to_string(rows) +
                                              " rows at batch size " +
                                              std::to_string(batch));
  if (rowIndices.size() != inputPools.size() + outputPools.size())
    return Status(StatusCode::InvalidArgument,
                  "row indices do not match the cell's inputs and outputs");
  for (const std::vector<int32_t> *indices : rowIndices)
    if (indices->size() < rows)
      return Status(StatusCode::InvalidArgument,
                    "fewer row indices than task rows");
  uint64_t ticket = nextTicket_;
  CELL_TRY(waitForSlot(ticket));
  CELL_CUDA_TRY(cudaSetDevice(device_.index));
  Status status = enqueueTask(ticket, cell, *prepared.value(), rows, inputPools,
                              outputPools, rowIndices, transfers);
  if (!status.isOk()) {
    // Part of the task may be on the stream and read the slot: let it
    // drain before the slot is used again. A device lost meanwhile is what
    // the caller hears (Unavailable: the executor stops), not the error
    // that came first.
    slots_[ticket % slots_.size()].deliveries.clear();
    cudaError_t drained = cudaStreamSynchronize(stream_);
    if (drained != cudaSuccess && isStickyCudaError(drained))
      return cudaFailure(drained, "cudaStreamSynchronize", __FILE__, __LINE__);
    return status;
  }
  nextTicket_ = ticket + 1;
  return ticket;
}

Status CudaBackend::enqueueTask(
    uint64_t ticket, const cellpack::CellType &cell,
    const CudaTaskRunner &runner, uint32_t rows,
    const std::vector<void *> &inputPools,
    const std::vector<void *> &outputPools,
    const std::vector<const std::vector<int32_t> *> &rowIndices,
    const TaskTransfers &transfers) {
  uint32_t batch = runner.batchSize();
  size_t slotIndex = ticket % slots_.size();
  Slot &slot = slots_[slotIndex];
  slot.deliveries.clear();
  uint8_t *host = hostStaging_.data() + slotIndex * slotBytes_;
  uint8_t *device = deviceStaging_.data(); // one for all: stream order
  uint8_t *hostBack = hostReadBack_.data() + slotIndex * readBackBytes_;
  uint8_t *deviceBack = deviceReadBack_.data() + slotIndex * readBackBytes_;

  // Lay the slot out.
  SlotLayout &layout = layout_;
  const ValueMemory *addressable =
      pinnedResults_ && cells_.at(&cell)->writesToAddresses() ? pinnedResults_
                                                              : nullptr;
  layout.layOut(transfers.moves, transfers.inputs, transfers.outputs,
                rowIndices.size(), batch, addressable);
  size_t at = layout.bytes(), back = layout.backBytes();
  if (at > slotBytes_ || back > readBackBytes_)
    return Status(StatusCode::InvalidArgument,
                  "a task moves more rows than its cell has inputs and "
                  "outputs");

  // The places' row indices after the rest.
  PlaceLayout placed;
  at = layOutPlaces(transfers.places, host, at, slotBytes_, placed);
  if (at > slotBytes_)
    return Status(StatusCode::InvalidArgument,
                  "a task places more rows than its staging slot holds");

  // Fill it; rows of mapped pools are written in place.
  layout.fill(host, ticket, rowIndices, rows, batch, transfers.moves, hostBack,
              slot.deliveries);

  // One copy in; data rows into their pools; the task; the read rows
  // gathered; one copy back; the ticket (its span timed from before the
  // first to before the last, when asked for).
  if (slot.spanStart)
    CELL_CUDA_TRY(cudaEventRecord(slot.spanStart, stream_));
  CELL_CUDA_TRY(
      cudaMemcpyAsync(device, host, at, cudaMemcpyHostToDevice, stream_));
  for (const PoolGroup &group : layout.writeGroups())
    CELL_TRY(copyRows(cell, device + group.data, nullptr, group.pool,
                      reinterpret_cast<const int32_t *>(device + group.indices),
                      group.rowBytes, group.count));
  DeviceTaskViews views;
  views.inputs = inputPools;
  views.outputs = outputPools;
  auto *deviceRows = reinterpret_cast<const int32_t *>(device + kTicketBytes);
  views.inputRows = deviceRows;
  views.outputRows = deviceRows + inputPools.size() * batch;
  CELL_TRY(graphs_ ? graphs_->enqueue(runner, rows, views, stream_)
                   : runner.enqueue(rows, views, stream_));
  CELL_TRY(enqueuePlaces(cell, placed, device));
  for (const PoolGroup &group : layout.readGroups())
    CELL_TRY(copyRows(cell, group.pool,
                      reinterpret_cast<const int32_t *>(device + group.indices),
                      deviceBack + group.data, nullptr, group.rowBytes,
                      group.count));
  for (const PoolGroup &group : layout.addressedGroups()) {
    CELL_TRY(copyRowsToAddresses(
        cell, group.pool,
        reinterpret_cast<const int32_t *>(device + group.indices),
        reinterpret_cast<const uint64_t *>(device + group.data), group.rowBytes,
        group.count));
    times_.deviceWrittenRows += group.count;
  }
  if (back > 0)
    CELL_CUDA_TRY(cudaMemcpyAsync(hostBack, deviceBack, back,
                                  cudaMemcpyDeviceToHost, stream_));
  if (slot.spanEnd)
    CELL_CUDA_TRY(cudaEventRecord(slot.spanEnd, stream_));
  CELL_CUDA_TRY(cudaMemcpyAsync(counter_.data(), device, sizeof(uint64_t),
                                cudaMemcpyDeviceToHost, stream_));
  return Status::ok();
}
