//===- StreamingCopy.cpp - Whether row copies stream ----------------------===//
#include "StreamingCopy.h"

#include <cstdlib>
#include <cstring>

bool cellrun::cpu::streamingStores() {
  static const bool enabled = [] {
    const char *setting = std::getenv("CELLRUN_CPU_STREAMING");
    return !(setting && std::strcmp(setting, "off") == 0);
  }();
  return enabled;
}
