//===- UnfoldingTest.cpp - The engine's unfolding against a hand-run one --===//
//
// The engine's results for chains, seq2seq and trees are compared with the
// same models evaluated by hand through Executor::run, one cell at a time
// (the single-cell path that CpuBackendTest checks against PyTorch): states
// start at zero and each step reads the rows the previous one wrote, the
// decoder starts from BOS and the encoder's last states and feeds back its
// argmax until EOS or the limit, internal tree nodes read their children's
// outputs. This checks the request processor's wiring, not just that
// batching leaves results unchanged.
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "artifact/Artifact.h"
#include "cellrun/Engine.h"
#include "engine/EngineTesting.h"

#include "artifact/ElementIO.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

using namespace cellrun;

namespace {

std::shared_ptr<const LoadedArtifact> loadExample(const std::string &model) {
  return cellc::testing::loadExampleArtifact(model);
}

/// Runs cells one at a time; every value lives in its own pool row.
class HandRunner {
public:
  explicit HandRunner(std::shared_ptr<const LoadedArtifact> artifact)
      : executor_(Executor::create(artifact, 512).value()) {}

  using Values = std::map<std::string, std::vector<uint8_t>>;

  /// Runs `cell` on `inputs` (by name; missing inputs are zeros) and
  /// returns its outputs by name.
  Values run(const cellpack::CellType &cell, const Values &inputs) {
    std::vector<std::vector<int32_t>> inRows, outRows;
    std::vector<std::pair<SlotPool *, uint32_t>> taken;
    for (uint32_t i = 0; i < cell.inputs()->size(); ++i) {
      SlotPool &pool = executor_->pool(cell, false, i);
      uint32_t row = pool.acquire().value();
      taken.push_back({&pool, row});
      std::vector<uint8_t> bytes(pool.rowBytes(), 0);
      auto found = inputs.find(cell.inputs()->Get(i)->name()->str());
      if (found != inputs.end())
        bytes = found->second;
      EXPECT_EQ(bytes.size(), pool.rowBytes());
      EXPECT_TRUE(executor_->writeRow(pool, row, bytes.data()).isOk());
      inRows.push_back({static_cast<int32_t>(row)});
    }
    for (uint32_t o = 0; o < cell.outputs()->size(); ++o) {
      SlotPool &pool = executor_->pool(cell, true, o);
      uint32_t row = pool.acquire().value();
      taken.push_back({&pool, row});
      outRows.push_back({static_cast<int32_t>(row)});
    }
    EXPECT_TRUE(executor_->run(cell, 1, inRows, outRows).ok());
    Values outputs;
    for (uint32_t o = 0; o < cell.outputs()->size(); ++o) {
      SlotPool &pool = executor_->pool(cell, true, o);
      std::vector<uint8_t> bytes(pool.rowBytes());
      EXPECT_TRUE(executor_->readRow(pool, outRows[o][0], bytes.data()).isOk());
      outputs[cell.outputs()->Get(o)->name()->str()] = bytes;
    }
    for (auto [pool, row] : taken)
      EXPECT_TRUE(pool->release(row).isOk());
    return outputs;
  }

private:
  std::unique_ptr<Executor> executor_;
};

std::vector<uint8_t> tokenRow(int64_t token) {
  std::vector<uint8_t> row(8);
  std::memcpy(row.data(), &token, 8);
  return row;
}

void expectFloatsEqual(const FloatValues &got, const std::vector<uint8_t> &want,
                       size_t offset, const std::string &what) {
  size_t count = want.size() / 4;
  ASSERT_GE(got.size(), offset + count) << what;
  for (size_t i = 0; i < count; ++i) {
    float expected;
    std::memcpy(&expected, want.data() + 4 * i, 4);
    ASSERT_NEAR(got[offset + i], expected, 1e-6f + 1e-6f * std::fabs(expected))
        << what << "[" << i << "]";
  }
}

RequestResult serve(std::shared_ptr<const LoadedArtifact> artifact,
                    const std::string &json) {
  EngineOptions options;
  options.startWorker = false;
  auto engine = Engine::create(artifact, options).value();
  auto future = engine->submit(engine->parser().parse(json, "x").value());
  engine->drain();
  return future.get();
}

TEST(UnfoldingTest, ChainStepsFeedTheirStates) {
  auto artifact = loadExample("lstm");
  ASSERT_TRUE(artifact);
  std::vector<int64_t> tokens = {17, 4, 256, 999, 3, 42};
  RequestResult result =
      serve(artifact, R"({"tokens": [17, 4, 256, 999, 3, 42]})");
  ASSERT_TRUE(result.status.isOk()) << result.status.toString();
  HandRunner hand(artifact);
  const cellpack::CellType &cell = *artifact->cells()[0];
  HandRunner::Values state;
  for (size_t s = 0; s < tokens.size(); ++s) {
    HandRunner::Values inputs = {{"token", tokenRow(tokens[s])}};
    if (s > 0) {
      inputs["h"] = state["h_next"];
      inputs["c"] = state["c_next"];
    }
    state = hand.run(cell, inputs);
    expectFloatsEqual(result.find("h_next")->floats, state["h_next"], s * 64,
                      "h_next step " + std::to_string(s));
  }
  EXPECT_EQ(result.find("h_next")->shape, (std::vector<int64_t>{6, 64}));
  expectFloatsEqual(result.find("final_c_next")->floats, state["c_next"], 0,
                    "final c");
}

TEST(UnfoldingTest, DecoderStartsFromTheEncoderAndFeedsBackItsTokens) {
  auto artifact = loadExample("seq2seq");
  ASSERT_TRUE(artifact);
  RequestResult result =
      serve(artifact, R"({"tokens": [7, 99, 123, 4], "max_decode_length": 9})");
  ASSERT_TRUE(result.status.isOk()) << result.status.toString();
  HandRunner hand(artifact);
  const cellpack::CellType &encoder = *artifact->cell("encoder").value();
  const cellpack::CellType &decoder = *artifact->cell("decoder").value();
  HandRunner::Values state;
  for (int64_t token : {7, 99, 123, 4}) {
    HandRunner::Values inputs = {{"token", tokenRow(token)}};
    if (!state.empty()) {
      inputs["h"] = state["h_next"];
      inputs["c"] = state["c_next"];
    }
    state = hand.run(encoder, inputs);
  }
  std::vector<int64_t> decoded;
  int64_t token = artifact->model().unfolding()->bos_token();
  int64_t eos = artifact->model().unfolding()->eos_token();
  while (decoded.size() < 9) {
    state = hand.run(decoder, {{"token", tokenRow(token)},
                               {"h", state["h_next"]},
                               {"c", state["c_next"]}});
    std::memcpy(&token, state["next_token"].data(), 8);
    decoded.push_back(token);
    if (token == eos)
      break;
  }
  EXPECT_EQ(std::vector<int64_t>(result.find("tokens")->integers.begin(),
                                 result.find("tokens")->integers.end()),
            decoded);
  EXPECT_EQ(result.stopReason, token == eos ? "eos" : "limit");
}

TEST(UnfoldingTest, InternalNodesReadTheirChildren) {
  auto artifact = loadExample("treelstm");
  ASSERT_TRUE(artifact);
  // ((5 8) (13 (21 34))): leaves 0..4, internal 5 = (0 1), 6 = (3 4),
  // 7 = (2 6), 8 = (5 7).
  RequestResult result = serve(artifact, R"({"nodes": [
      {"token": 5}, {"token": 8}, {"token": 13}, {"token": 21},
      {"token": 34}, {"children": [0, 1]}, {"children": [3, 4]},
      {"children": [2, 6]}, {"children": [5, 7]}]})");
  ASSERT_TRUE(result.status.isOk()) << result.status.toString();
  HandRunner hand(artifact);
  const cellpack::CellType &leaf = *artifact->cell("leaf").value();
  const cellpack::CellType &internal = *artifact->cell("internal").value();
  std::function<HandRunner::Values(int)> evaluate;
  std::vector<std::vector<int>> children = {{},     {},     {},     {},    {},
                                            {0, 1}, {3, 4}, {2, 6}, {5, 7}};
  std::vector<int64_t> tokens = {5, 8, 13, 21, 34};
  evaluate = [&](int node) -> HandRunner::Values {
    if (children[node].empty())
      return hand.run(leaf, {{"token", tokenRow(tokens[node])}});
    HandRunner::Values left = evaluate(children[node][0]);
    HandRunner::Values right = evaluate(children[node][1]);
    return hand.run(internal, {{"h_l", left["h"]},
                               {"c_l", left["c"]},
                               {"h_r", right["h"]},
                               {"c_r", right["c"]}});
  };
  HandRunner::Values root = evaluate(8);
  expectFloatsEqual(result.find("h")->floats, root["h"], 0, "root h");
  expectFloatsEqual(result.find("c")->floats, root["c"], 0, "root c");
}

} // namespace
