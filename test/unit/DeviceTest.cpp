//===- DeviceTest.cpp - Device choice and the CUDA probe ------------------===//
//
// On a machine without a GPU (CI, the development machines) the probe must
// report "no CUDA device" and auto must fall back to the CPU with a reason;
// on a GPU machine the probe must describe the device. Both cases are
// asserted; which one applies is decided by the probe's own result.
//
//===----------------------------------------------------------------------===//
#include "cellrun/Device.h"

#include <gtest/gtest.h>

using namespace cellrun;

TEST(DeviceTest, ChoicesParse) {
  EXPECT_EQ(parseDeviceChoice("cpu").value(), DeviceChoice::Cpu);
  EXPECT_EQ(parseDeviceChoice("cuda").value(), DeviceChoice::Cuda);
  EXPECT_EQ(parseDeviceChoice("auto").value(), DeviceChoice::Auto);
  auto bad = parseDeviceChoice("gpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::InvalidArgument);
}

TEST(DeviceTest, CpuIsAlwaysAvailable) {
  std::string note = "stale";
  EXPECT_EQ(resolveDevice(DeviceChoice::Cpu, note).value(), DeviceKind::Cpu);
  EXPECT_TRUE(note.empty());
}

TEST(DeviceTest, ProbeAndAutoAgree) {
  auto device = probeCudaDevice();
  std::string note;
  auto automatic = resolveDevice(DeviceChoice::Auto, note);
  ASSERT_TRUE(automatic.ok());
  auto cuda = resolveDevice(DeviceChoice::Cuda, note);
  if (device.ok()) {
    EXPECT_EQ(automatic.value(), DeviceKind::Cuda);
    EXPECT_TRUE(cuda.ok());
    EXPECT_GE(device.value().computeCapability, 75);
    EXPECT_GT(device.value().memoryBytes, 0u);
    EXPECT_NE(device.value().describe().find("cuda:0 "), std::string::npos);
    return;
  }
  EXPECT_EQ(device.status().code(), StatusCode::Unavailable);
  EXPECT_EQ(device.status().message().rfind("no CUDA device: ", 0), 0u)
      << device.status().message();
  EXPECT_EQ(automatic.value(), DeviceKind::Cpu);
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().code(), StatusCode::Unavailable);
  std::string fallback;
  resolveDevice(DeviceChoice::Auto, fallback);
  EXPECT_EQ(fallback.rfind("using the cpu backend: no CUDA device: ", 0), 0u)
      << fallback;
  auto other = probeCudaDevice(3);
  EXPECT_FALSE(other.ok());
}
