//===- PackedWeights.cpp - One packed copy of an artifact's weights -------===//
#include "PackedWeights.h"

using namespace cellrun::cpu;

std::shared_ptr<PackedWeightCache>
PackedWeightCache::forArtifact(const void *artifact) {
  static std::mutex mutex;
  static std::map<const void *, std::weak_ptr<PackedWeightCache>> caches;
  std::lock_guard<std::mutex> lock(mutex);
  // Caches of artifacts no longer loaded are dropped as others come.
  for (auto entry = caches.begin(); entry != caches.end();)
    entry = entry->second.expired() ? caches.erase(entry) : std::next(entry);
  std::weak_ptr<PackedWeightCache> &held = caches[artifact];
  std::shared_ptr<PackedWeightCache> cache = held.lock();
  if (!cache) {
    cache = std::make_shared<PackedWeightCache>();
    held = cache;
  }
  return cache;
}
