//===- ExampleArtifacts.h - The compiled examples, for runtime tests -*- C++
//-*-===//
//
// Loads <build>/examples/<model>/model.cellpack (CELL_EXAMPLES_BUILD_DIR),
// failing the calling test with the loader's message when it cannot.
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_TEST_UNIT_EXAMPLEARTIFACTS_H
#define CELLC_TEST_UNIT_EXAMPLEARTIFACTS_H

#include "cellrun/Artifact.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace cellc::testing {

inline std::shared_ptr<const cellrun::LoadedArtifact>
loadExampleArtifact(const std::string &model) {
  auto loaded = cellrun::loadArtifact(std::string(CELL_EXAMPLES_BUILD_DIR) +
                                      "/" + model + "/model.cellpack");
  EXPECT_TRUE(loaded.ok()) << loaded.status().toString();
  return loaded.ok() ? std::move(loaded).value() : nullptr;
}

} // namespace cellc::testing

#endif // CELLC_TEST_UNIT_EXAMPLEARTIFACTS_H
