//===- ExamplesDir.h - Where the fuzz targets find the examples -*- C++ -*-===//
//
// The main build's examples directory (artifacts, small ONNX files): from
// CELL_EXAMPLES_BUILD_DIR in the environment, else the build tree's.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_FUZZ_EXAMPLESDIR_H
#define CELL_TEST_FUZZ_EXAMPLESDIR_H

#include <cstdlib>
#include <string>

namespace cellfuzz {

inline std::string examplesDir() {
  const char *dir = std::getenv("CELL_EXAMPLES_BUILD_DIR");
  return dir ? dir : CELL_EXAMPLES_BUILD_DIR;
}

} // namespace cellfuzz

#endif // CELL_TEST_FUZZ_EXAMPLESDIR_H
