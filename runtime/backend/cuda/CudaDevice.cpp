//===- CudaDevice.cpp - Probing for a CUDA device ------------------------===//
#include "cellrun/Device.h"

#include <cuda_runtime_api.h>

#include <cstdio>

using namespace cellrun;

Result<DeviceChoice> cellrun::parseDeviceChoice(std::string_view text) {
  if (text == "cpu")
    return DeviceChoice::Cpu;
  if (text == "cuda")
    return DeviceChoice::Cuda;
  if (text == "auto")
    return DeviceChoice::Auto;
  return Status(StatusCode::InvalidArgument,
                "unknown device '" + std::string(text) +
                    "' (choose cuda, cpu or auto)");
}

std::string CudaDeviceInfo::describe() const {
  char text[256];
  std::snprintf(text, sizeof text, "cuda:%d %s (sm_%d, %.1f GiB)", index,
                name.c_str(), computeCapability,
                static_cast<double>(memoryBytes) / (1ull << 30));
  return text;
}

Result<CudaDeviceInfo> cellrun::probeCudaDevice(int index) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError(); // clear the sticky error for later calls
    return Status(StatusCode::Unavailable,
                  std::string("no CUDA device: ") + cudaGetErrorString(error));
  }
  if (index < 0 || index >= count)
    return Status(StatusCode::Unavailable,
                  "no CUDA device: device " + std::to_string(index) +
                      " asked for, " + std::to_string(count) + " present");
  cudaDeviceProp properties;
  error = cudaGetDeviceProperties(&properties, index);
  if (error != cudaSuccess)
    return Status(StatusCode::Unavailable,
                  std::string("no CUDA device: cudaGetDeviceProperties: ") +
                      cudaGetErrorString(error));
  CudaDeviceInfo info;
  info.index = index;
  info.name = properties.name;
  info.computeCapability = properties.major * 10 + properties.minor;
  info.memoryBytes = properties.totalGlobalMem;
  info.multiprocessors = properties.multiProcessorCount;
  return info;
}

Result<DeviceKind> cellrun::resolveDevice(DeviceChoice choice,
                                          std::string &note) {
  note.clear();
  if (choice == DeviceChoice::Cpu)
    return DeviceKind::Cpu;
  auto device = probeCudaDevice();
  if (device.ok())
    return DeviceKind::Cuda;
  if (choice == DeviceChoice::Cuda)
    return device.status();
  note = "using the cpu backend: " + device.status().message();
  return DeviceKind::Cpu;
}
