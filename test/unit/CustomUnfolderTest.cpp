//===- CustomUnfolderTest.cpp - A user's unfolder through the engine ------===//
//
// A `structure: custom` model (the example LSTM cell, test/data/
// lstm-bidirectional.yaml) with an unfolder registered in C++ that runs the
// cell over the tokens forward and backward as two chains. Its results must
// equal the chain model's on the tokens and on the reversed tokens; its
// checks refuse bad requests; a model whose unfolder is not registered is
// refused when the engine is created.
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "cellrun/Engine.h"
#include "cellrun/Unfolder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace cellrun;
using cellc::testing::exampleArtifactPath;
using cellc::testing::loadArtifactOrFail;

namespace {

class Bidirectional final : public Unfolder {
public:
  Status check(const nlohmann::json &request) const override {
    auto tokens = request.find("tokens");
    if (tokens == request.end() || !tokens->is_array() || tokens->empty())
      return Status(StatusCode::InvalidArgument,
                    "\"tokens\" must be a non-empty array");
    for (const nlohmann::json &token : *tokens)
      if (!token.is_number_integer() || token.get<int64_t>() < 0 ||
          token.get<int64_t>() >= 1000)
        return Status(StatusCode::InvalidArgument,
                      "tokens are integers from 0 to 999");
    return Status::ok();
  }

  uint32_t peakNodes(const nlohmann::json &) const override { return 4; }

  Status start(const nlohmann::json &request, GraphBuilder &graph) override {
    auto tokens = request.at("tokens").get<std::vector<int64_t>>();
    auto forward = chain(tokens, graph);
    std::reverse(tokens.begin(), tokens.end());
    auto backward = chain(tokens, graph);
    if (!forward.ok() || !backward.ok())
      return !forward.ok() ? forward.status() : backward.status();
    lastForward_ = forward->back();
    lastBackward_ = backward->back();
    if (Status status = graph.ready(std::move(forward).value()); !status.isOk())
      return status;
    return graph.ready(std::move(backward).value());
  }

  Status nodeDone(uint32_t node, GraphBuilder &graph) override {
    if (node != lastForward_ && node != lastBackward_)
      return Status::ok();
    std::vector<uint8_t> row;
    if (Status status = graph.read(node, "h_next", row); !status.isOk())
      return status;
    OutputTensor tensor;
    tensor.name = node == lastForward_ ? "forward_h" : "backward_h";
    tensor.shape = {64};
    tensor.floats.resize(64);
    std::memcpy(tensor.floats.data(), row.data(), row.size());
    graph.result().outputs.push_back(std::move(tensor));
    if (++finished_ == 2)
      graph.finish();
    return Status::ok();
  }

private:
  Result<std::vector<uint32_t>> chain(const std::vector<int64_t> &tokens,
                                      GraphBuilder &graph) {
    std::vector<uint32_t> nodes;
    for (int64_t token : tokens) {
      auto node = graph.addNode("lstm");
      if (!node.ok())
        return node.status();
      std::vector<uint8_t> row(8);
      std::memcpy(row.data(), &token, 8);
      if (Status status = graph.setData(node.value(), "token", row);
          !status.isOk())
        return status;
      if (!nodes.empty())
        for (auto [input, output] : {std::pair{"h", "h_next"}, {"c", "c_next"}})
          if (Status status =
                  graph.setOutput(node.value(), input, nodes.back(), output);
              !status.isOk())
            return status;
      nodes.push_back(node.value());
    }
    return nodes;
  }

  uint32_t lastForward_ = 0, lastBackward_ = 0;
  int finished_ = 0;
};

TEST(CustomUnfolderTest, UnregisteredUnfolderIsRefused) {
  auto artifact = loadArtifactOrFail(CELL_CUSTOM_ARTIFACT);
  ASSERT_TRUE(artifact);
  registerUnfolder("bidirectional", nullptr);
  auto engine = Engine::create(artifact, EngineOptions());
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), StatusCode::Unsupported);
  EXPECT_NE(
      engine.status().message().find("no unfolder of that name is registered"),
      std::string::npos)
      << engine.status().message();
}

TEST(CustomUnfolderTest, BothDirectionsMatchTheChainModel) {
  registerUnfolder("bidirectional",
                   [] { return std::make_unique<Bidirectional>(); });
  auto custom = loadArtifactOrFail(CELL_CUSTOM_ARTIFACT);
  auto chain = loadArtifactOrFail(exampleArtifactPath("lstm"));
  ASSERT_TRUE(custom && chain);
  EngineOptions options;
  options.startWorker = false;
  auto engine = Engine::create(custom, options).value();
  auto reference = Engine::create(chain, options).value();

  EXPECT_EQ(engine->parser().parse(R"({"tokens": []})", "e").status().message(),
            "request e: \"tokens\" must be a non-empty array");
  EXPECT_EQ(engine->parser()
                .parse(R"({"tokens": [1, 1000]})", "v")
                .status()
                .message(),
            "request v: tokens are integers from 0 to 999");

  std::vector<std::string> sequences = {"[5]", "[1, 2, 3]",
                                        "[900, 17, 4, 4, 256, 31, 8]"};
  std::vector<std::future<RequestResult>> results;
  for (const std::string &tokens : sequences)
    results.push_back(engine->submit(
        engine->parser().parse("{\"tokens\": " + tokens + "}", "x").value()));
  engine->drain();
  for (size_t i = 0; i < sequences.size(); ++i) {
    RequestResult result = results[i].get();
    ASSERT_TRUE(result.status.isOk()) << result.status.toString();
    std::string reversed = sequences[i];
    auto forward =
        reference->submit(reference->parser()
                              .parse("{\"tokens\": " + sequences[i] + "}", "f")
                              .value());
    Request backwardRequest =
        reference->parser()
            .parse("{\"tokens\": " + sequences[i] + "}", "b")
            .value();
    backwardRequest.steps.reverse();
    auto backward = reference->submit(std::move(backwardRequest));
    reference->drain();
    RequestResult f = forward.get(), b = backward.get();
    for (auto [name, want] : {std::pair{"forward_h", &f}, {"backward_h", &b}}) {
      const OutputTensor *got = result.find(name);
      ASSERT_NE(got, nullptr) << name;
      const OutputTensor *expected = want->find("final_h_next");
      ASSERT_EQ(got->floats.size(), expected->floats.size());
      for (size_t e = 0; e < got->floats.size(); ++e)
        ASSERT_NEAR(got->floats[e], expected->floats[e],
                    1e-6f + 1e-6f * std::fabs(expected->floats[e]))
            << name << " of " << sequences[i];
    }
  }
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.completed, sequences.size());
  // Both directions of all requests were batched together.
  EXPECT_LT(stats.cells[0].tasks, stats.cells[0].nodes);
}

} // namespace
