//===- SoakTraffic.cpp - The requests a soak sends ------------------------===//
#include "SoakTraffic.h"

#include "loadgen/ServerLoad.h"
#include "loadgen/Workload.h"

#include "cellrun/Model.h"
#include "cellrun/RequestParser.h"

#include <random>

using namespace cellrun;
using namespace cellrun::soak;
using json = nlohmann::json;

namespace {

/// A request shape for the model's structure: 1..24 steps or leaves, a
/// seq2seq source of 1..20 with a decode limit of 1..20.
loadgen::RequestShape drawShape(std::mt19937_64 &random, bool seq2seq) {
  loadgen::RequestShape shape;
  shape.size = static_cast<uint32_t>(1 + random() % (seq2seq ? 20 : 24));
  if (seq2seq)
    shape.decode = static_cast<uint32_t>(1 + random() % 20);
  return shape;
}

void addInvalid(SoakModel &model, const std::string &kind, std::string body,
                int status = 400, std::string path = "") {
  model.invalid.push_back(
      {kind, path.empty() ? model.inferPath() : path, std::move(body), status});
}

/// Every class of invalid request, made from the valid body `valid`.
void addInvalidRequests(SoakModel &model, const json &valid,
                        size_t maxBodyBytes) {
  std::string text = valid.dump();
  addInvalid(model, "malformed-json", text.substr(0, text.size() / 2));
  addInvalid(model, "unknown-model", text, 404,
             "/v2/models/no_such_model/infer");
  json unknownInput = valid;
  unknownInput["inputs"][0]["name"] = "no_such_input";
  addInvalid(model, "unknown-input", unknownInput.dump());
  json wrongType = valid;
  std::string datatype = wrongType["inputs"][0]["datatype"];
  wrongType["inputs"][0]["datatype"] = datatype == "INT64" ? "FP32" : "BOOL";
  addInvalid(model, "wrong-datatype", wrongType.dump());
  json shortData = valid;
  shortData["inputs"][0]["data"].erase(shortData["inputs"][0]["data"].size() -
                                       1);
  addInvalid(model, "short-data", shortData.dump());
  json unknownParameter = valid;
  unknownParameter["parameters"]["no_such_parameter"] = 1;
  addInvalid(model, "unknown-parameter", unknownParameter.dump());
  json badDeadline = valid;
  badDeadline["parameters"]["deadline_ms"] = -5;
  addInvalid(model, "negative-deadline", badDeadline.dump());
  json unknownSession = valid;
  unknownSession["parameters"]["sequence_id"] = 987654321;
  addInvalid(model, "unknown-session", unknownSession.dump());
  for (const TensorDescription &input : model.signature.inputs)
    if (input.valueLimit > 0 && input.name == valid["inputs"][0]["name"]) {
      json outside = valid;
      outside["inputs"][0]["data"][0] = input.valueLimit + 7;
      addInvalid(model, "token-out-of-vocabulary", outside.dump());
    }
  if (valid["inputs"][0]["name"] == "children" &&
      valid["inputs"][0]["data"].size() >= 2) {
    // The first row's first child is the row itself: a cycle, or a leaf
    // that claims a child.
    json cycle = valid;
    cycle["inputs"][0]["data"][0] = 0;
    addInvalid(model, "broken-tree", cycle.dump());
  }
  // Bytes that are not UTF-8 in the id.
  std::string notUtf8 = text;
  size_t id = notUtf8.find("\"id\":\"");
  if (id != std::string::npos)
    notUtf8.insert(id + 6, "\xff\xfe");
  addInvalid(model, "not-utf8", notUtf8);
  json huge = valid;
  huge["id"] = std::string(maxBodyBytes + 1024, 'x');
  addInvalid(model, "oversized-body", huge.dump(), 413);
}

} // namespace

Status cellrun::soak::prepareTraffic(SoakModel &model, uint32_t count,
                                     uint64_t seed, size_t maxBodyBytes) {
  auto artifact = loadArtifact(model.artifactPath);
  if (!artifact.ok())
    return artifact.status();
  ModelInfo info = describeModel(*artifact.value());
  model.name = info.name.empty() ? "model" : info.name;
  auto parser = RequestParser::create(artifact.value());
  if (!parser.ok())
    return parser.status();
  model.signature = parser.value()->signature();
  model.chain = info.unfolding == UnfoldingKind::Chain;
  auto synthesizer =
      loadgen::RequestSynthesizer::create(*artifact.value(), model.signature);
  if (!synthesizer.ok())
    return synthesizer.status();
  std::mt19937_64 random(seed);
  bool seq2seq = info.unfolding == UnfoldingKind::Seq2Seq;
  for (uint32_t k = 0; k < count; ++k) {
    json line = json::parse(
        synthesizer->requestLine(k, drawShape(random, seq2seq), seed));
    auto body = loadgen::kserveBody(line, model.signature);
    if (!body.ok())
      return body.status();
    model.bodies.push_back(body.value().dump());
    if (k == 0)
      addInvalidRequests(model, body.value(), maxBodyBytes);
    // Sessions: the sequence in two or three chunks.
    if (!model.chain || k % 4 != 0 || !line.contains("tokens") ||
        line["tokens"].size() < 3)
      continue;
    const json &tokens = line["tokens"];
    size_t chunks = 2 + random() % 2, at = 0;
    SessionTemplate session;
    for (size_t c = 0; c < chunks; ++c) {
      size_t take = c + 1 == chunks
                        ? tokens.size() - at
                        : std::max<size_t>(1, tokens.size() / chunks);
      json part = line;
      part["id"] = line["id"].get<std::string>() + "/" + std::to_string(c);
      part["tokens"] = json(
          std::vector<json>(tokens.begin() + at, tokens.begin() + at + take));
      at += take;
      auto chunk = loadgen::kserveBody(part, model.signature);
      if (!chunk.ok())
        return chunk.status();
      session.chunks.push_back(chunk.value());
    }
    model.sessions.push_back(std::move(session));
  }
  return Status::ok();
}

std::string cellrun::soak::sessionChunkBody(const json &body, uint64_t sequence,
                                            size_t index, size_t count,
                                            bool abandoned) {
  json chunk = body;
  chunk["parameters"]["sequence_id"] = sequence;
  chunk["parameters"]["sequence_start"] = index == 0;
  chunk["parameters"]["sequence_end"] = !abandoned && index + 1 == count;
  return chunk.dump();
}

json cellrun::soak::outputsOf(const std::string &body) {
  json reply = json::parse(body, nullptr, false);
  if (!reply.is_object() || !reply.contains("outputs"))
    return nullptr;
  return reply["outputs"];
}
