//===- FuzzTargets.h - What the fuzz targets share --------------*- C++ -*-===//
//
// The example artifacts a target parses requests against, found like the
// tests find them (CELL_EXAMPLES_BUILD_DIR in the environment, else the
// build tree's), loaded once.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_FUZZ_FUZZTARGETS_H
#define CELL_TEST_FUZZ_FUZZTARGETS_H

#include "cellrun/Artifact.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace cellfuzz {

inline std::string examplesDir() {
  const char *dir = std::getenv("CELL_EXAMPLES_BUILD_DIR");
  return dir ? dir : CELL_EXAMPLES_BUILD_DIR;
}

/// The fp32 artifacts of the examples with one structure each (chain,
/// seq2seq, tree, stacked chain); exits when one is missing.
inline const std::vector<std::shared_ptr<const cellrun::LoadedArtifact>> &
exampleArtifacts() {
  static const auto artifacts = [] {
    std::vector<std::shared_ptr<const cellrun::LoadedArtifact>> loaded;
    for (const char *model : {"lstm", "seq2seq", "treelstm", "stacked"}) {
      auto artifact = cellrun::loadArtifact(examplesDir() + "/" + model +
                                            "/model.cellpack");
      if (!artifact.ok()) {
        std::fprintf(stderr, "fuzz: %s\n",
                     artifact.status().toString().c_str());
        std::exit(2);
      }
      loaded.push_back(std::move(artifact).value());
    }
    return loaded;
  }();
  return artifacts;
}

} // namespace cellfuzz

#endif // CELL_TEST_FUZZ_FUZZTARGETS_H
