//===- Devices.h - `cellrun devices` ---------------------------*- C++ -*-===//
#ifndef CELLRUN_TOOLS_DEVICES_H
#define CELLRUN_TOOLS_DEVICES_H

#include "CommandLine.h"

namespace cellrun::tool {

int runDevices(const std::vector<std::string> &args);

} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_DEVICES_H
