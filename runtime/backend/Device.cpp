//===- Device.cpp - Choosing the backend ----------------------------------===//
//
// What does not need the CUDA runtime: reading a device choice, describing
// a device, and resolving `auto` through probeCudaDevice (CudaDevice.cpp,
// or NoCuda.cpp in a build without CUDA).
//
//===----------------------------------------------------------------------===//
#include "cellrun/Device.h"

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
