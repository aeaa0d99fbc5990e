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

int runDevices(const std::vector<std::string> &args) {
  CLI::App app("Prints the backend the device choice resolves to here.",
               "cellrun devices");
  std::string text = "auto";
  app.add_option("--device", text, "the choice to resolve: cuda, cpu or auto")
      ->capture_default_str();
  if (auto exit = parseCommandLine(app, args))
    return *exit;
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
