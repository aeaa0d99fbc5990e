//===- CudaMemory.cpp - Owned device and pinned host memory ---------------===//
#include "CudaMemory.h"

#include "CudaCheck.h"

#include "base/HostArena.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <utility>

using namespace cellrun;
using namespace cellrun::cuda;

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    if (data_)
      cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_)
    cudaFree(data_);
}

Result<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
  DeviceBuffer buffer;
  void *data = nullptr;
  CELL_CUDA_TRY(cudaMalloc(&data, bytes ? bytes : 1));
  buffer.data_ = static_cast<uint8_t *>(data);
  buffer.size_ = bytes;
  // cudaMemset runs on the legacy stream, which the backend's non-blocking
  // stream does not wait for: finish it here.
  CELL_CUDA_TRY(cudaMemset(data, 0, bytes ? bytes : 1));
  CELL_CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy));
  return buffer;
}

PinnedBuffer &PinnedBuffer::operator=(PinnedBuffer &&other) noexcept {
  if (this != &other) {
    if (data_)
      cudaFreeHost(data_);
    data_ = std::exchange(other.data_, nullptr);
    device_ = std::exchange(other.device_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_)
    cudaFreeHost(data_);
}

Result<PinnedBuffer> PinnedBuffer::allocate(size_t bytes, bool mapped) {
  PinnedBuffer buffer;
  void *data = nullptr;
  CELL_CUDA_TRY(
      cudaHostAlloc(&data, bytes ? bytes : 1,
                    mapped ? cudaHostAllocMapped : cudaHostAllocDefault));
  buffer.data_ = static_cast<uint8_t *>(data);
  buffer.size_ = bytes;
  std::memset(data, 0, bytes ? bytes : 1);
  if (mapped) {
    void *device = nullptr;
    CELL_CUDA_TRY(cudaHostGetDevicePointer(&device, data, 0));
    buffer.device_ = static_cast<uint8_t *>(device);
  }
  return buffer;
}

Status cellrun::cuda::uploadNow(void *device, const void *host, size_t bytes) {
  CELL_CUDA_TRY(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  CELL_CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy));
  return Status::ok();
}

namespace {
/// The device the arena was made for: chunks are checked against it.
int arenaDevice = 0;

/// Page-locks and maps a new chunk of the value arena (on whichever thread
/// allocates: a parser's, the engine's), checked on the arena's device and
/// the thread's own current device left as it was; false when that device
/// would see it elsewhere than at the host's address.
bool registerMappedChunk(void *chunk, size_t bytes) {
  int current = -1;
  bool switched = cudaGetDevice(&current) == cudaSuccess &&
                  current != arenaDevice &&
                  cudaSetDevice(arenaDevice) == cudaSuccess;
  bool usable = false;
  if (cudaHostRegister(chunk, bytes,
                       cudaHostRegisterPortable | cudaHostRegisterMapped) ==
      cudaSuccess) {
    void *device = nullptr;
    usable = cudaHostGetDevicePointer(&device, chunk, 0) == cudaSuccess &&
             device == chunk;
    if (!usable)
      cudaHostUnregister(chunk);
  }
  cudaGetLastError(); // a refusal is not sticky: clear it
  if (switched)
    cudaSetDevice(current);
  return usable;
}
} // namespace

Result<const ValueMemory *>
cellrun::cuda::installPinnedValueMemory(int device) {
  static std::mutex making;
  static const ValueMemory *made = nullptr;
  std::lock_guard<std::mutex> lock(making);
  int direct = 0;
  CELL_CUDA_TRY(cudaDeviceGetAttribute(
      &direct, cudaDevAttrCanUseHostPointerForRegisteredMem, device));
  if (!direct)
    return Status(StatusCode::Unsupported,
                  "pinned results: CUDA device " + std::to_string(device) +
                      " cannot use registered host memory at its host "
                      "address");
  if (made)
    return made;
  arenaDevice = device;
  // At most a quarter of the machine's memory page-locked, and 8 GiB.
  HostArena::Limits limits;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0)
    limits.maxBytes =
        std::min(limits.maxBytes,
                 static_cast<size_t>(pages) * static_cast<size_t>(page) / 4);
  auto arena = HostArena::create(limits, registerMappedChunk);
  if (!arena.ok())
    return arena.status();
  ValueMemory *mine = arena.value().get();
  ValueMemory &installed = installValueMemory(std::move(arena).value());
  if (&installed != mine)
    return Status(StatusCode::Unsupported,
                  "pinned results: another value memory was installed first");
  made = &installed;
  return made;
}
