//===- Devices.cpp - `cellrun devices` ------------------------------------===//
//
// Says which backend `--device` resolves to on this machine and why: the
// CUDA device found, or the one-line reason the CPU backend is used.
//
//===----------------------------------------------------------------------===//
#include "Devices.h"

#include "cellrun/Device.h"

#include <iostream>

namespace cellrun::tool {
namespace {
const std::vector<OptionSpec> kDevicesOptions = {
    {"device", true, "cuda|cpu|auto", "the choice to resolve (default auto)"},
    {"help", false, "", "show this help"},
};
} // namespace

int runDevices(const std::vector<std::string> &args) {
  Result<ParsedArgs> parsed = parseArgs(args, kDevicesOptions);
  if (!parsed.ok() || !parsed.value().positionals.empty()) {
    std::cerr << "cellrun devices: "
              << (parsed.ok() ? "takes no arguments"
                              : parsed.status().message())
              << "\n";
    return kExitUsage;
  }
  if (parsed.value().has("help")) {
    std::cout << "Usage: cellrun devices [--device cuda|cpu|auto]\n\n"
                 "Prints the backend the device choice resolves to here.\n\n"
                 "Options:\n"
              << formatOptions(kDevicesOptions);
    return kExitOk;
  }
  std::string text = parsed.value().has("device")
                         ? parsed.value().options.at("device")
                         : "auto";
  Result<DeviceChoice> choice = parseDeviceChoice(text);
  if (!choice.ok()) {
    std::cerr << "cellrun devices: " << choice.status().message() << "\n";
    return kExitUsage;
  }
  std::string note;
  Result<DeviceKind> kind = resolveDevice(choice.value(), note);
  if (!kind.ok()) {
    std::cerr << "cellrun: error: " << kind.status().message() << "\n";
    return kExitFailure;
  }
  if (kind.value() == DeviceKind::Cuda)
    std::cout << probeCudaDevice().value().describe() << "\n";
  else
    std::cout << "cpu" << (note.empty() ? "" : " (" + note + ")") << "\n";
  return kExitOk;
}

} // namespace cellrun::tool
