//===- UnfolderRegistry.cpp - Unfolders of custom models by name ----------===//
#include "cellrun/Unfolder.h"

#include <map>
#include <mutex>

using namespace cellrun;

namespace {
std::mutex registryMutex;
std::map<std::string, UnfolderFactory> &registry() {
  static std::map<std::string, UnfolderFactory> factories;
  return factories;
}
} // namespace

void cellrun::registerUnfolder(const std::string &name,
                               UnfolderFactory factory) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry()[name] = std::move(factory);
}

UnfolderFactory cellrun::findUnfolder(const std::string &name) {
  std::lock_guard<std::mutex> lock(registryMutex);
  auto found = registry().find(name);
  return found == registry().end() ? UnfolderFactory() : found->second;
}
