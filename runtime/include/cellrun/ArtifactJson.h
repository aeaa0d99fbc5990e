//===- ArtifactJson.h - A loaded cellpack as JSON ---------------*- C++ -*-===//
//
// What `cellrun inspect` prints: everything in the artifact except the bytes
// of weights and kernel images, which are summarised by their sizes. Keys
// come in a fixed order, so lit tests can match the output line by line:
// every member and every array element on a line of its own (nlohmann-
// json's dump with an indent of 2), floats with a float's shortest digits.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_ARTIFACTJSON_H
#define CELLRUN_ARTIFACTJSON_H

#include "cellrun/Model.h"

#include <ostream>
#include <string>

namespace cellrun {

/// Writes `artifact` as one JSON document (2-space indentation, ending with
/// a newline) to `out`; never throws for the artifact's content (bytes that
/// are not UTF-8 become U+FFFD).
void writeArtifactJson(const LoadedArtifact &artifact, std::ostream &out);

/// The same as a string.
std::string artifactJson(const LoadedArtifact &artifact);

} // namespace cellrun

#endif // CELLRUN_ARTIFACTJSON_H
