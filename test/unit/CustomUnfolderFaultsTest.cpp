//===- CustomUnfolderFaultsTest.cpp - Faulty unfolders fail alone ---------===//
//
// An unfolder for the custom LSTM test model (test/data/
// lstm-bidirectional.yaml) whose behaviour each request picks: a chain over
// its tokens, honestly declared; a chain with a peakNodes that lies; a
// request finished in start() without a node; a request whose nodeDone
// never finishes it; one whose nodeDone throws. The honest requests, submitted
// among the faulty ones, must all return their chain's result; each faulty one
// returns (never hangs) with a precise error or its result; every row comes
// back.
//
//===----------------------------------------------------------------------===//
#include "cellrun/Engine.h"
#include "cellrun/Unfolder.h"
#include "engine/EngineTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

using namespace cellrun;

namespace {

class Configurable final : public Unfolder {
public:
  Status check(const nlohmann::json &request) const override {
    auto tokens = request.find("tokens");
    if (tokens == request.end() || !tokens->is_array() || tokens->empty())
      return Status(StatusCode::InvalidArgument, "\"tokens\" are needed");
    auto fault = request.find("fault");
    if (fault != request.end() && !fault->is_string())
      return Status(StatusCode::InvalidArgument, "\"fault\" is a string");
    return Status::ok();
  }

  uint32_t peakNodes(const nlohmann::json &request) const override {
    // A chain holds its last node's outputs; "lie" claims nothing is held
    // and then runs two chains at once.
    return fault(request) == "lie" ? 0 : 2;
  }

  Status start(const nlohmann::json &request, GraphBuilder &graph) override {
    fault_ = fault(request);
    if (fault_ == "finish-at-start") {
      OutputTensor answer;
      answer.name = "answer";
      answer.shape = {1};
      answer.integers = {42};
      graph.result().outputs.push_back(answer);
      graph.finish();
      return Status::ok();
    }
    auto tokens = request.at("tokens").get<std::vector<int64_t>>();
    int chains = fault_ == "lie" ? 2 : 1;
    for (int c = 0; c < chains; ++c) {
      std::vector<uint32_t> nodes;
      for (int64_t token : tokens) {
        uint32_t node = graph.addNode("lstm").value();
        std::vector<uint8_t> row(8);
        std::memcpy(row.data(), &token, 8);
        if (Status status = graph.setData(node, "token", row); !status.isOk())
          return status;
        if (!nodes.empty())
          for (auto [input, output] :
               {std::pair{"h", "h_next"}, {"c", "c_next"}})
            if (Status status =
                    graph.setOutput(node, input, nodes.back(), output);
                !status.isOk())
              return status;
        nodes.push_back(node);
      }
      last_ = nodes.back();
      if (Status status = graph.ready(std::move(nodes)); !status.isOk())
        return status;
    }
    return Status::ok();
  }

  Status nodeDone(uint32_t node, GraphBuilder &graph) override {
    if (fault_ == "throw")
      throw std::runtime_error("out of ideas");
    if (node != last_ || fault_ == "never-finish")
      return Status::ok();
    std::vector<uint8_t> row;
    if (Status status = graph.read(node, "h_next", row); !status.isOk())
      return status;
    OutputTensor h;
    h.name = "h";
    h.shape = {64};
    h.floats.resize(64);
    std::memcpy(h.floats.data(), row.data(), row.size());
    graph.result().outputs.push_back(std::move(h));
    graph.finish();
    return Status::ok();
  }

private:
  static std::string fault(const nlohmann::json &request) {
    return request.value("fault", "");
  }

  std::string fault_;
  uint32_t last_ = 0;
};

/// The JSON list of request `i`'s tokens: 3 to 13 of them, "[t0, t1, ...]".
std::string tokenList(int i) {
  std::string list = "[";
  for (int t = 0; t < 3 + i % 11; ++t)
    list += (t ? ", " : "") + std::to_string((37 * i + 11 * t) % 1000);
  list += "]";
  return list;
}

/// Requests submitted to the engine, in order: each one's fault ("" for an
/// honest one), its token list and its future result.
struct MixedRequests {
  std::vector<std::string> kinds;
  std::vector<std::string> tokens;
  std::vector<std::future<RequestResult>> results;
};

/// Submits 40 requests to `engine`, the faults in turn among honest ones,
/// and runs a round of the engine after every fifth (it is not drained).
MixedRequests submitMixedRequests(Engine &engine) {
  const char *faults[] = {"", "lie", "finish-at-start", "never-finish",
                          "throw"};
  MixedRequests requests;
  for (int i = 0; i < 40; ++i) {
    std::string fault = faults[i % 5];
    std::string list = tokenList(i);
    requests.kinds.push_back(fault);
    requests.tokens.push_back(list);
    requests.results.push_back(engine.submit(
        engine.parser()
            .parse("{\"tokens\": " + list + ", \"fault\": \"" + fault + "\"}",
                   "r" + std::to_string(i))
            .value()));
    if (i % 5 == 4)
      engine.runOnce();
  }
  return requests;
}

/// The result of the chain over `tokens` (a JSON list) as a request of its
/// own on `reference`, drained.
RequestResult runAlone(Engine &reference, const std::string &tokens) {
  auto alone = reference.submit(
      reference.parser().parse("{\"tokens\": " + tokens + "}", "a").value());
  reference.drain();
  return alone.get();
}

TEST(CustomUnfolderFaultsTest, FaultyRequestsFailAloneAndNeverHang) {
  registerUnfolder("bidirectional",
                   [] { return std::make_unique<Configurable>(); });
  auto custom = loadArtifact(CELL_CUSTOM_ARTIFACT);
  auto chain = loadArtifact(std::string(CELL_EXAMPLES_BUILD_DIR) +
                            "/lstm/model.cellpack");
  ASSERT_TRUE(custom.ok() && chain.ok());
  EngineOptions options;
  options.startWorker = false;
  // Room for a few honest requests at once: the liars must not take rows
  // the honest ones reserved.
  options.poolRows = 64;
  auto engine = Engine::create(std::move(custom).value(), options).value();
  auto reference = Engine::create(std::move(chain).value(), options).value();
  uint32_t idle = engineExecutor(*engine).rowsInUse();

  MixedRequests requests = submitMixedRequests(*engine);
  const std::vector<std::string> &kinds = requests.kinds;
  const std::vector<std::string> &tokens = requests.tokens;
  std::vector<std::future<RequestResult>> &results = requests.results;
  engine->drain();

  for (size_t i = 0; i < results.size(); ++i) {
    RequestResult result = results[i].get();
    const std::string &kind = kinds[i];
    if (kind.empty()) {
      ASSERT_TRUE(result.status.isOk()) << result.status.toString();
      RequestResult want = runAlone(*reference, tokens[i]);
      const OutputTensor *got = result.find("h");
      const OutputTensor *expected = want.find("final_h_next");
      ASSERT_TRUE(got && expected);
      for (size_t e = 0; e < 64; ++e)
        ASSERT_NEAR(got->floats[e], expected->floats[e],
                    1e-6f + 1e-6f * std::fabs(expected->floats[e]));
    } else if (kind == "lie") {
      // Two chains of bound nodes need more rows than it declared.
      ASSERT_EQ(result.status.code(), StatusCode::Internal)
          << result.status.toString();
      EXPECT_NE(result.status.message().find("peakNodes is too small"),
                std::string::npos)
          << result.status.message();
    } else if (kind == "finish-at-start") {
      ASSERT_TRUE(result.status.isOk()) << result.status.toString();
      ASSERT_NE(result.find("answer"), nullptr);
      EXPECT_EQ(result.find("answer")->integers[0], 42);
    } else if (kind == "throw") {
      EXPECT_EQ(result.status.code(), StatusCode::Internal);
      EXPECT_NE(
          result.status.message().find("the unfolder threw: out of ideas"),
          std::string::npos)
          << result.status.message();
    } else {
      EXPECT_EQ(result.status.code(), StatusCode::InvalidArgument);
      EXPECT_NE(result.status.message().find("left nothing to run"),
                std::string::npos)
          << result.status.message();
    }
  }
  EXPECT_EQ(engineExecutor(*engine).rowsInUse(), idle);
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.completed + stats.failed, results.size());
}

} // namespace
