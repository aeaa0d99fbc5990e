//===- ExampleArtifacts.h - The compiled examples, for runtime tests -*- C++
//-*-===//
//
// Loads <build>/examples/<model>/model.cellpack (CELL_EXAMPLES_BUILD_DIR, or
// the CELL_EXAMPLES_BUILD_DIR environment variable where the build moved, as
// on a GPU machine), failing the calling test with the loader's message when
// it cannot.
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_TEST_UNIT_EXAMPLEARTIFACTS_H
#define CELLC_TEST_UNIT_EXAMPLEARTIFACTS_H

#include "artifact/Artifact.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace cellc::testing {

inline std::string examplesBuildDir() {
  const char *moved = std::getenv("CELL_EXAMPLES_BUILD_DIR");
  return moved ? moved : CELL_EXAMPLES_BUILD_DIR;
}

/// The artifact of example `model`; "seq2seq_eos" is test/data/seq2seq-eos.yaml
/// (a seq2seq whose decodes mostly reach EOS), built beside the examples;
/// "gru_step" the GRU with its input projection left in the step (cellc
/// --hoist-input-projections=false; its model.cellpack has it hoisted).
inline std::string exampleArtifactPath(const std::string &model) {
  if (model == "gru_step")
    return examplesBuildDir() + "/gru/model-step.cellpack";
  if (model == "seq2seq_eos")
    return examplesBuildDir() + "/../test/seq2seq-eos.cellpack";
  if (model == "attention_eos")
    return examplesBuildDir() + "/../test/attention-eos.cellpack";
  return examplesBuildDir() + "/" + model + "/model.cellpack";
}

/// The artifact at `path`, or null with the calling test failed.
inline std::shared_ptr<const cellrun::LoadedArtifact>
loadArtifactOrFail(const std::string &path) {
  auto loaded = cellrun::loadArtifact(path);
  EXPECT_TRUE(loaded.ok()) << loaded.status().toString();
  return loaded.ok() ? std::move(loaded).value() : nullptr;
}

inline std::shared_ptr<const cellrun::LoadedArtifact>
loadExampleArtifact(const std::string &model) {
  return loadArtifactOrFail(exampleArtifactPath(model));
}

} // namespace cellc::testing

#endif // CELLC_TEST_UNIT_EXAMPLEARTIFACTS_H
