//===- SoakTraffic.h - The requests a soak sends, and their answers -*- C++
//-*-===//
//
// Per served model: valid KServe v2 bodies drawn from the artifact's
// signature (the bench's synthesizer), chain sequences cut into session
// chunks, and invalid requests of every class with the status the server
// must answer. The reference outputs of the valid ones are filled by the
// soak's first pass, each request sent alone.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SOAK_SOAKTRAFFIC_H
#define CELLRUN_TOOLS_SOAK_SOAKTRAFFIC_H

#include "cellrun/Status.h"
#include "cellrun/Tensors.h"

#include <nlohmann/json.hpp>

#include <string>
#include <sys/types.h>
#include <vector>

namespace cellrun::soak {

/// An invalid request and the status the server must answer it with.
struct InvalidRequest {
  std::string kind; // "malformed-json", "unknown-model", ...
  std::string path;
  std::string body;
  int status = 400;
};

/// A chain request in chunks; sequence parameters are added when sent.
struct SessionTemplate {
  std::vector<nlohmann::json> chunks;
  std::vector<nlohmann::json> expected; // reference outputs, per chunk
};

struct SoakModel {
  std::string label; // as given on the command line
  std::string artifactPath;
  std::string name; // the name the server serves it under
  ModelSignature signature;
  bool chain = false; // sessions are for chain models
  int httpPort = 0, metricsPort = 0;
  pid_t pid = -1;
  std::vector<std::string> bodies;
  std::vector<nlohmann::json> expected; // reference outputs, per body
  std::vector<SessionTemplate> sessions;
  std::vector<InvalidRequest> invalid;

  std::string inferPath() const { return "/v2/models/" + name + "/infer"; }
};

/// Reads the artifact and draws `count` valid requests, `count / 4` session
/// templates (chain models) and the invalid requests; `maxBodyBytes` is
/// the server's limit (an oversized body must pass it).
Status prepareTraffic(SoakModel &model, uint32_t count, uint64_t seed,
                      size_t maxBodyBytes);

/// `body` with the sequence parameters of chunk `index` of `count`.
std::string sessionChunkBody(const nlohmann::json &body, uint64_t sequence,
                             size_t index, size_t count, bool abandoned);

/// A reply body's outputs (name, datatype, shape, data), what a correct
/// answer must repeat exactly; null when the body is not a reply.
nlohmann::json outputsOf(const std::string &body);

} // namespace cellrun::soak

#endif // CELLRUN_TOOLS_SOAK_SOAKTRAFFIC_H
