//===- FuzzTargets.h - What the fuzz targets share --------------*- C++ -*-===//
//
// The example artifacts a target parses requests against (ExamplesDir.h),
// loaded once.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_FUZZ_FUZZTARGETS_H
#define CELL_TEST_FUZZ_FUZZTARGETS_H

#include "ExamplesDir.h"

#include "artifact/Artifact.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace cellfuzz {

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
