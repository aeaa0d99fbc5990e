//===- ArtifactFuzzer.cpp - .cellpack bytes through the loader ------------===//
//
// The bytes as an artifact: the loader's FlatBuffers verifier and checks,
// then (when it loads) the request parser's reading of its structure. Every
// input must load or give an error. scripts/fuzz.sh runs it under libFuzzer
// with the example artifacts as seeds; the test suite replays the corpus.
//
//===----------------------------------------------------------------------===//
#include "FuzzTargets.h"

#include "cellrun/RequestParser.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto artifact = cellrun::loadArtifactFromBytes(
      std::vector<uint8_t>(data, data + size), "fuzz.cellpack");
  if (!artifact.ok())
    return 0;
  auto parser = cellrun::RequestParser::create(std::move(artifact).value());
  (void)parser;
  return 0;
}
