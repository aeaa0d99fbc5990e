//===- CudaMemory.h - Owned device and pinned host memory ------*- C++ -*-===//
//
// Move-only owners of a cudaMalloc'ed block (DeviceBuffer) and of a block of
// page-locked host memory (PinnedBuffer), optionally mapped into the device's
// address space so kernels read and write it directly; and the page-locked
// value memory of --pinned-results (installPinnedValueMemory: a HostArena
// whose chunks are registered mapped). Allocation returns a Status; freeing
// never fails loudly (the destructor has nowhere to report).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CUDA_CUDAMEMORY_H
#define CELLRUN_BACKEND_CUDA_CUDAMEMORY_H

#include "base/ValueMemory.h"
#include "cellrun/Status.h"

#include <cstddef>
#include <cstdint>

namespace cellrun::cuda {

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer();

  /// `bytes` of device memory (at least one byte is allocated), zeroed
  /// before it returns (work on any stream sees the zeros).
  static Result<DeviceBuffer> allocate(size_t bytes);

  uint8_t *data() const { return data_; }
  size_t size() const { return size_; }

private:
  uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

class PinnedBuffer {
public:
  PinnedBuffer() = default;
  PinnedBuffer(PinnedBuffer &&other) noexcept { *this = std::move(other); }
  PinnedBuffer &operator=(PinnedBuffer &&other) noexcept;
  ~PinnedBuffer();

  /// `bytes` of page-locked host memory, zeroed. With `mapped`, the device
  /// sees it at devicePointer().
  static Result<PinnedBuffer> allocate(size_t bytes, bool mapped);

  uint8_t *data() const { return data_; }
  /// The device's address of a mapped buffer (null when not mapped).
  uint8_t *devicePointer() const { return device_; }
  size_t size() const { return size_; }

private:
  uint8_t *data_ = nullptr;
  uint8_t *device_ = nullptr;
  size_t size_ = 0;
};

/// The process's page-locked value memory (base/HostArena.h, installed as
/// its ValueMemory): request and result values from then on live in host
/// chunks registered mapped, which kernels of any device write at the
/// host's own addresses. Made on the first call, for `device` (which must
/// use host pointers of registered memory as they are); later calls
/// return it. Unsupported when another value memory was installed
/// first or the device cannot.
Result<const ValueMemory *> installPinnedValueMemory(int device);

/// Copies `bytes` from pageable host memory to the device and waits until
/// they have landed (cudaMemcpy alone may return before the DMA is done,
/// and the backend's non-blocking stream does not wait for it).
Status uploadNow(void *device, const void *host, size_t bytes);

} // namespace cellrun::cuda

#endif // CELLRUN_BACKEND_CUDA_CUDAMEMORY_H
