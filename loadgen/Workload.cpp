//===- Workload.cpp - Request shapes and the requests drawn from them -----===//
#include "Workload.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

using namespace cellrun;
using namespace cellrun::loadgen;

namespace {

Status bad(const std::string &where, const std::string &what) {
  return Status(StatusCode::InvalidArgument, where + ": " + what);
}

Result<uint32_t> positive(const std::string &text, const std::string &where) {
  size_t used = 0;
  unsigned long value = 0;
  try {
    value = std::stoul(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value == 0 || value > 100000)
    return bad(where, "'" + text + "' is not a count from 1 to 100000");
  return static_cast<uint32_t>(value);
}

} // namespace

Result<Workload> cellrun::loadgen::loadWorkload(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return Status(StatusCode::NotFound, "cannot open workload " + path);
  Workload workload;
  workload.path = path;
  std::string line;
  if (!std::getline(in, line))
    return bad(path, "empty (a header line is expected)");
  if (!line.empty() && line.back() == '\r')
    line.pop_back();
  workload.columns = line;
  size_t columns = line == "source,decode" ? 2 : 1;
  if (line != "length" && line != "leaves" && columns != 2)
    return bad(path + ":1", "the header is '" + line +
                                "'; expected length, leaves or source,decode");
  for (uint32_t number = 2; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty() || line[0] == '#')
      continue;
    std::string where = path + ":" + std::to_string(number);
    std::stringstream fields(line);
    std::string first, second;
    std::getline(fields, first, ',');
    bool hasSecond = static_cast<bool>(std::getline(fields, second, ','));
    if (hasSecond != (columns == 2))
      return bad(where, "expected " + std::to_string(columns) + " column(s)");
    RequestShape shape;
    auto size = positive(first, where);
    if (!size.ok())
      return size.status();
    shape.size = size.value();
    if (columns == 2) {
      auto decode = positive(second, where);
      if (!decode.ok())
        return decode.status();
      shape.decode = decode.value();
    }
    workload.shapes.push_back(shape);
  }
  if (workload.shapes.empty())
    return bad(path, "no requests");
  return workload;
}

Result<RequestSynthesizer>
RequestSynthesizer::create(const LoadedArtifact &artifact,
                           const ModelSignature &signature) {
  RequestSynthesizer synthesizer;
  ModelInfo model = describeModel(artifact);
  synthesizer.structure_ = model.unfolding;
  if (synthesizer.structure_ == UnfoldingKind::Custom)
    return Status(StatusCode::Unsupported,
                  "cellrun bench draws requests for chain, seq2seq and tree "
                  "models; a custom unfolder's requests are its own");
  for (const TensorDescription &input : signature.inputs)
    if (input.name != "children") // a tree's shape, drawn separately
      synthesizer.inputs_.push_back(input);
  for (const TensorDescription &input : synthesizer.inputs_)
    if (isIntegerTensorType(input.type) && input.valueLimit <= 0)
      return Status(StatusCode::Unsupported,
                    "input '" + input.name +
                        "' takes integers without a table size: cellrun "
                        "bench cannot draw them");
  synthesizer.tokens_ = synthesizer.inputs_.size() == 1 &&
                        synthesizer.inputs_[0].shape.size() == 1 &&
                        isIntegerTensorType(synthesizer.inputs_[0].type);
  synthesizer.maxDecode_ = model.maxDecodeLength;
  return synthesizer;
}

std::string RequestSynthesizer::requestLine(uint32_t k,
                                            const RequestShape &shape,
                                            uint64_t seed) const {
  // One stream per request: request k does not depend on the others.
  std::seed_seq seeds{static_cast<uint32_t>(seed),
                      static_cast<uint32_t>(seed >> 32), k};
  std::mt19937_64 random(seeds);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto value = [&](const TensorDescription &input) -> nlohmann::json {
    // Floats to four decimals: a hidden-1024 GRU's request of 26 steps is
    // then about 210 KB of JSON instead of 520 (the traces the peers read
    // hold every request), and the values are exactly what both sides read.
    auto draw = [&]() -> nlohmann::json {
      if (isIntegerTensorType(input.type))
        return static_cast<int64_t>(random() % input.valueLimit);
      return std::nearbyint(double(normal(random)) * 1e4) / 1e4;
    };
    if (input.shape.size() == 1)
      return draw();
    int64_t count = 1;
    for (size_t d = 1; d < input.shape.size(); ++d)
      count *= input.shape[d];
    nlohmann::json row = nlohmann::json::array();
    for (int64_t e = 0; e < count; ++e)
      row.push_back(draw());
    return row;
  };
  auto step = [&]() {
    nlohmann::json one = nlohmann::json::object();
    for (const TensorDescription &input : inputs_)
      one[input.name] = value(input);
    return one;
  };
  nlohmann::json request = {{"id", "r" + std::to_string(k)}};
  if (structure_ == UnfoldingKind::Tree) {
    nlohmann::json nodes = nlohmann::json::array();
    std::vector<uint32_t> open;
    for (uint32_t leaf = 0; leaf < shape.size; ++leaf) {
      nodes.push_back(tokens_ ? nlohmann::json{{"token", value(inputs_[0])}}
                              : step());
      open.push_back(leaf);
    }
    // Random bracketing: join two open subtrees until one is left.
    while (open.size() > 1) {
      nlohmann::json children = nlohmann::json::array();
      for (int side = 0; side < 2; ++side) {
        size_t pick = random() % open.size();
        children.push_back(open[pick]);
        open.erase(open.begin() + static_cast<std::ptrdiff_t>(pick));
      }
      nodes.push_back({{"children", children}});
      open.push_back(static_cast<uint32_t>(nodes.size() - 1));
    }
    request["nodes"] = std::move(nodes);
    return request.dump();
  }
  nlohmann::json steps = nlohmann::json::array();
  for (uint32_t s = 0; s < shape.size; ++s)
    steps.push_back(tokens_ ? value(inputs_[0]) : step());
  request[tokens_ ? "tokens" : "steps"] = std::move(steps);
  if (structure_ == UnfoldingKind::Seq2Seq) {
    int64_t decode = shape.decode ? shape.decode : shape.size;
    if (maxDecode_ > 0)
      decode = std::min(decode, maxDecode_);
    request["max_decode_length"] = decode;
  }
  return request.dump();
}
