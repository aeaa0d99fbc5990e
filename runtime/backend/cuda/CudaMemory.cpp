//===- CudaMemory.cpp - Owned device and pinned host memory ---------------===//
#include "CudaMemory.h"

#include "CudaCheck.h"

#include <cstring>
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
