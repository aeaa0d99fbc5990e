//===- RequestTest.cpp - Bad requests, dynamic decoding, admission --------===//
//
// Every kind of bad request gets a precise message and leaves the requests
// in flight undisturbed; a seq2seq decoder stops at the first EOS the host
// reads (driven through CellGraph with scripted tokens); a full queue
// refuses at once; pools too small for all requests make them wait, and a
// request that can never fit is refused with the reason.
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "cellrun/Engine.h"

#include "graph/CellGraph.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace cellrun;

namespace {

std::shared_ptr<const LoadedArtifact> loadExample(const std::string &model) {
  return cellc::testing::loadExampleArtifact(model);
}

/// An example's artifact and its model structure (which points into it).
struct ExampleModel {
  std::shared_ptr<const LoadedArtifact> artifact;
  ModelStructure structure;
};

/// `model`'s, or null after a test failure saying why.
std::unique_ptr<ExampleModel> exampleModel(const std::string &model) {
  auto artifact = loadExample(model);
  if (!artifact) {
    ADD_FAILURE() << "no artifact for " << model;
    return nullptr;
  }
  auto structure = analyzeModel(*artifact);
  if (!structure.ok()) {
    ADD_FAILURE() << structure.status().toString();
    return nullptr;
  }
  return std::make_unique<ExampleModel>(
      ExampleModel{artifact, std::move(structure).value()});
}

std::unique_ptr<Engine> manualEngine(const std::string &model,
                                     uint32_t poolRows = 4096,
                                     uint32_t maxQueue = 1024) {
  EngineOptions options;
  options.startWorker = false;
  options.poolRows = poolRows;
  options.maxQueue = maxQueue;
  options.limits.maxSteps = 50;
  options.limits.maxTreeNodes = 20;
  auto engine = Engine::create(loadExample(model), options);
  EXPECT_TRUE(engine.ok()) << engine.status().toString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

/// The message parse gives for `json`, or "" when it parses.
std::string parseError(const Engine &engine, const std::string &json) {
  auto request = engine.parser().parse(json, "line 1");
  return request.ok() ? "" : request.status().message();
}

TEST(RequestTest, BadSequencesAreRefusedPrecisely) {
  auto engine = manualEngine("lstm");
  ASSERT_TRUE(engine);
  EXPECT_EQ(parseError(*engine, R"({"id": "a", "tokens": []})"),
            "request a: empty sequence: at least one step is needed");
  EXPECT_EQ(parseError(*engine, R"({"id": "b", "tokens": [3, 1000]})"),
            "request b, step 1: token 1000 of input 'token' is outside the "
            "vocabulary (0..999)");
  EXPECT_EQ(parseError(*engine, R"({"id": "c", "tokens": [-1]})"),
            "request c, step 0: token -1 of input 'token' is outside the "
            "vocabulary (0..999)");
  std::string longer = R"({"id": "d", "tokens": [)";
  for (int i = 0; i < 51; ++i)
    longer += (i ? ", " : "") + std::to_string(i + 1);
  EXPECT_EQ(parseError(*engine, longer + "]}"),
            "request d: 51 steps, longer than the limit of 50");
  EXPECT_EQ(parseError(*engine, R"({"id": "e", "tokens": [1.5]})"),
            "request e: token 0 is not an integer");
  EXPECT_EQ(parseError(*engine, R"({"id": "f", "tokenz": [1]})"),
            "request f: unknown member \"tokenz\"");
  EXPECT_NE(parseError(*engine, R"({"id": "g", "tokens": [1)")
                .find("not valid JSON: at byte"),
            std::string::npos);
  EXPECT_EQ(parseError(*engine, R"({"id": "h", "tokens": [1, 2]})"), "");
}

TEST(RequestTest, SourcesLongerThanTheMemoryAreRefused) {
  // The attention example's memory holds 50 positions; below the step
  // limit (60 here), they are the bound.
  EngineOptions options;
  options.startWorker = false;
  options.limits.maxSteps = 60;
  auto roomy = Engine::create(loadExample("attention"), options);
  ASSERT_TRUE(roomy.ok()) << roomy.status().toString();
  auto source = [](int steps) {
    std::string json = R"({"id": "s", "tokens": [)";
    for (int i = 0; i < steps; ++i)
      json += (i ? ", " : "") + std::to_string(i + 3);
    return json + "]}";
  };
  EXPECT_EQ(parseError(*roomy.value(), source(50)), "");
  EXPECT_EQ(parseError(*roomy.value(), source(51)),
            "request s: 51 source steps, but the decoder attends over at most "
            "50 (the positions of its memory)");
}

TEST(RequestTest, JsonIsReadStrictlyAndNeverThrows) {
  auto engine = manualEngine("lstm");
  ASSERT_TRUE(engine);
  // A number with no fraction is an integer however it is written.
  auto integral = engine->parser().parse(
      R"({"id": 7.0, "tokens": [3.0, 1e2, -0, 9223372036854775807]})", "x");
  ASSERT_FALSE(integral.ok());
  EXPECT_EQ(integral.status().message(),
            "request 7, step 3: token 9223372036854775807 of input 'token' is "
            "outside the vocabulary (0..999)");
  EXPECT_EQ(parseError(*engine, R"({"tokens": [3.0, 1e2, -0]})"), "");
  EXPECT_EQ(parseError(*engine, R"({"tokens": [9223372036854775808]})"),
            "request line 1: token 0 is not an integer");
  EXPECT_EQ(parseError(*engine, R"({"id": true, "tokens": [1]})"),
            "request line 1: \"id\" must be a string or integer");
  // Syntax errors name the offset of the byte at fault.
  EXPECT_EQ(parseError(*engine, R"({"id": "g", "tokens": [1)"),
            "request line 1: not valid JSON: at byte 24: syntax error while "
            "parsing array - unexpected end of input; expected ']'");
  EXPECT_EQ(parseError(*engine, "{\"id\": \"\xff\"}")
                .rfind("request line 1: not valid JSON: at byte 8: ", 0),
            0u);
  EXPECT_NE(parseError(*engine, R"({"id": "\ud800", "tokens": [1]})")
                .find("not valid JSON: at byte"),
            std::string::npos);
  EXPECT_EQ(parseError(*engine, R"({"tokens": [1e400]})"),
            "request line 1: not valid JSON: number overflow parsing '1e400'");
  // A member given twice, at any depth, is refused; siblings may share names.
  EXPECT_EQ(parseError(*engine, R"({"id": "d", "tokens": [1], "tokens": [2]})"),
            "request line 1: not valid JSON: duplicate member \"tokens\"");
  EXPECT_EQ(parseError(*engine, R"({"steps": [{"token": 1, "token": 2}]})"),
            "request line 1: not valid JSON: duplicate member \"token\"");
  EXPECT_EQ(parseError(*engine, R"({"steps": [{"token": 1}, {"token": 2}]})"),
            "");
  // 256 levels below the whole text are read; one more is refused, and so
  // is input deep enough to exhaust a recursive reader.
  auto nested = [](int arrays) {
    return R"({"tokens": )" + std::string(arrays, '[') + "1" +
           std::string(arrays, ']') + "}";
  };
  EXPECT_EQ(parseError(*engine, nested(255)),
            "request line 1: token 0 is not an integer");
  EXPECT_EQ(parseError(*engine, nested(256)),
            "request line 1: not valid JSON: nesting deeper than 256");
  EXPECT_EQ(parseError(*engine, nested(1000000)),
            "request line 1: not valid JSON: nesting deeper than 256");
  // The id that names a refused request, as parse reads it.
  EXPECT_EQ(RequestParser::requestId(R"({"id": 5.0, "tokens": []})", "f"), "5");
  EXPECT_EQ(RequestParser::requestId(R"({"id": "a", "tokens": [})", "f"), "f");
  EXPECT_EQ(RequestParser::requestId(R"({"id": "a", "id": "b"})", "f"), "f");
  EXPECT_EQ(RequestParser::requestId(R"(["id"])", "f"), "f");
  EXPECT_EQ(RequestParser::requestId(R"({"id": [1]})", "f"), "f");
}

TEST(RequestTest, BadTreesAreRefusedPrecisely) {
  auto engine = manualEngine("treelstm");
  ASSERT_TRUE(engine);
  EXPECT_EQ(parseError(*engine, R"({"id": "t1", "nodes": [{"token": 1},
      {"children": [0, 2]}, {"children": [0, 1]}]})"),
            "request t1, node 2: duplicate child: node 0 is already a child "
            "of node 1");
  EXPECT_EQ(parseError(*engine, R"({"id": "t2", "nodes": [{"token": 1},
      {"token": 2}, {"children": [0, 3]}, {"children": [1, 2]}]})"),
            "request t2: the nodes form a cycle (every node has a parent)");
  EXPECT_EQ(parseError(*engine, R"({"id": "t3", "nodes": [{"token": 1},
      {"token": 2}, {"children": [3, 4]}, {"children": [2, 5]},
      {"children": [0, 1]}, {"token": 3}, {"children": [5, 5]}]})"),
            "request t3, node 6: duplicate child: node 5 is already a child "
            "of node 3");
  EXPECT_EQ(parseError(*engine, R"({"id": "t4", "nodes": [{"token": 1},
      {"children": [0]}]})"),
            "request t4, node 1: has 1 children; the internal cell takes "
            "exactly 2 (a child is missing or extra)");
  EXPECT_EQ(parseError(*engine, R"({"id": "t5", "nodes": [{"token": 1},
      {"token": 2}, {"children": [0, 7]}]})"),
            "request t5, node 2: child 7 is not a node (there are 3)");
  EXPECT_EQ(parseError(*engine, R"({"id": "t6", "nodes": [{"token": 1},
      {"token": 2}, {"children": [0, 1]}, {"token": 4}]})"),
            "request t6: the tree has 2 roots (nodes 2 and 3); give \"root\" "
            "or connect them");
  // A cycle hanging off a proper tree: 3 -> 4 -> 3.
  EXPECT_EQ(parseError(*engine, R"({"id": "t7", "root": 2, "nodes": [
      {"token": 1}, {"token": 2}, {"children": [0, 1]}, {"children": [4, 0]},
      {"children": [3, 1]}]})")
                .rfind("request t7, node 3: duplicate child", 0),
            0u);
  EXPECT_EQ(parseError(*engine, R"({"id": "t8", "nodes": [{"token": 5000}]})"),
            "request t8, node 0: token 5000 of input 'token' is outside the "
            "vocabulary (0..999)");
  EXPECT_EQ(parseError(*engine, R"({"id": "t9", "nodes": []})"),
            "request t9: the tree has no nodes");
  EXPECT_EQ(parseError(*engine, R"({"id": "t10", "nodes": [{"token": 1},
      {"token": 2}, {"children": [0, 1]}]})"),
            "");
  // This model's internal cell takes no request inputs.
  EXPECT_EQ(parseError(*engine, R"({"id": "t11", "nodes": [{"token": 1},
      {"token": 2}, {"children": [0, 1], "token": 3}]})"),
            "request t11, node 2: an internal node has only \"children\", an "
            "array of node indices (the internal cell takes no request "
            "inputs)");
  EXPECT_EQ(parseError(*engine, R"({"id": "t12", "nodes": [{"token": 1},
      {"token": 2}, {"children": 1}]})"),
            "request t12, node 2: \"children\" is an array of node indices");
}

TEST(RequestTest, CyclesWithoutDuplicatesAreFound) {
  auto engine = manualEngine("treelstm");
  ASSERT_TRUE(engine);
  // Nodes 3 and 4 point at each other; each has one parent; root 2 is fine.
  Request request;
  request.id = "cyc";
  auto leaf = engine->parser().parse(R"({"nodes": [{"token": 1}]})", "x");
  ASSERT_TRUE(leaf.ok());
  TreeNode a = leaf->tree[0], b = leaf->tree[0];
  request.tree = {a, b, {{}, {0, 1}}, {{}, {4, 5}}, {{}, {3, 6}}, a, b};
  request.root = 2;
  Status status = engine->parser().check(request);
  EXPECT_EQ(status.message(),
            "request cyc: cycle: node 3 is its own descendant");
}

TEST(RequestTest, BadRequestsDoNotDisturbOthers) {
  auto engine = manualEngine("seq2seq");
  auto reference = manualEngine("seq2seq");
  ASSERT_TRUE(engine && reference);
  std::string good = R"({"id": "good", "tokens": [4, 8, 15, 16, 23, 42],
                         "max_decode_length": 12})";
  auto alone = reference->submit(reference->parser().parse(good, "").value());
  reference->drain();
  RequestResult expected = alone.get();
  ASSERT_TRUE(expected.status.isOk());

  auto first = engine->submit(engine->parser().parse(good, "").value());
  engine->runOnce();
  engine->runOnce();
  // Mid-flight: a request with a token beyond the vocabulary built in C++.
  Request bad = engine->parser().parse(good, "").value();
  bad.id = "bad";
  std::memset(bad.steps.row(2, 0), 0x7f, bad.steps.rowSize(2, 0));
  auto refused = engine->submit(std::move(bad));
  RequestResult refusal = refused.get();
  EXPECT_EQ(refusal.status.code(), StatusCode::InvalidArgument);
  EXPECT_NE(refusal.status.message().find("outside the vocabulary"),
            std::string::npos);
  auto second = engine->submit(engine->parser().parse(good, "").value());
  engine->drain();
  for (auto *future : {&first, &second}) {
    RequestResult result = future->get();
    ASSERT_TRUE(result.status.isOk()) << result.status.toString();
    EXPECT_EQ(result.find("tokens")->integers,
              expected.find("tokens")->integers);
  }
  EXPECT_EQ(engine->stats().rejected, 1u);
}

TEST(RequestTest, DecodingStopsAtTheFirstEos) {
  auto example = exampleModel("seq2seq");
  ASSERT_TRUE(example);
  const ModelStructure &structure = example->structure;
  auto engine = manualEngine("seq2seq");
  Request request =
      engine->parser().parse(R"({"id": "s", "tokens": [7, 9]})", "").value();
  CellGraph graph(structure, std::move(request));
  auto ready = graph.start().value();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].size(), 2u);
  // The host reads these tokens from the decoder, one a step: 5, 6, EOS.
  std::vector<int64_t> script = {5, 6, structure.eosToken, 8};
  size_t step = 0;
  auto reader = [&](uint32_t node, uint32_t output, void *bytes) {
    if (graph.nodes()[node].part == 1 && output == structure.decoderTokenOutput)
      std::memcpy(bytes, &script.at(step++), sizeof(int64_t));
    return Status::ok();
  };
  uint32_t node = 0;
  ASSERT_TRUE(graph.nodeDone(0, reader).ok());
  auto decoder = graph.nodeDone(1, reader);
  ASSERT_TRUE(decoder.ok());
  int decoderSteps = 0;
  while (!graph.finished()) {
    ASSERT_EQ(decoder->size(), 1u);
    node = decoder->front().node(0);
    EXPECT_EQ(graph.nodes()[node].part, 1u);
    ++decoderSteps;
    decoder = graph.nodeDone(node, reader);
    ASSERT_TRUE(decoder.ok());
  }
  EXPECT_EQ(decoderSteps, 3);
  EXPECT_EQ(graph.result().stopReason, "eos");
  EXPECT_EQ(graph.result().find("tokens")->integers,
            (IntegerValues{5, 6, structure.eosToken}));
}

// A chain's result tensors are made early (CellGraph::prepareChainResult,
// on the submitting thread) when they are small and the budget for queued
// requests' results has room, and when the request starts otherwise: either
// way the tensors asked for, in the same order and shapes, each step's row
// written in place (the addresses the tasks copy to); the budget gets its
// bytes back when the request starts or goes without starting.
TEST(RequestTest, ChainResultsAreLaidOutAlikeWhereverTheyAreMade) {
  auto example = exampleModel("lstm");
  ASSERT_TRUE(example);
  const ModelStructure &structure = example->structure;
  EngineOptions options;
  options.startWorker = false;
  options.limits.maxSteps = 100000;
  auto engine = Engine::create(example->artifact, options);
  ASSERT_TRUE(engine.ok()) << engine.status().toString();
  const CellRoles &roles = structure.cells[0];
  ASSERT_FALSE(roles.emitted.empty());
  ASSERT_FALSE(roles.stateOutputs.empty());
  uint32_t emitted = roles.emitted[0], state = roles.stateOutputs[0];
  size_t rowBytes = roles.outputRowBytes[emitted];
  size_t longSteps = CellGraph::kPreparedResultBytes / rowBytes + 1;
  auto budget = std::make_shared<CellGraph::ResultBudget>();
  auto full = std::make_shared<CellGraph::ResultBudget>();
  full->limit = 0; // no room: made at the start
  for (size_t steps : {size_t(3), longSteps})
    for (bool onlyFinal : {false, true})
      for (bool room : {true, false}) {
        std::string json = R"({"tokens": [)";
        for (size_t s = 0; s < steps; ++s)
          json += (s ? ", " : "") + std::to_string(s % 7 + 1);
        json += "]}";
        auto request = (*engine)->parser().parse(json, "line 1");
        ASSERT_TRUE(request.ok()) << request.status().toString();
        if (onlyFinal) // as KServe's "outputs" asks
          request->outputs = {roles.finalNames[state]};
        CellGraph graph(structure, std::move(request).value(), 1,
                        /*directReads=*/true);
        graph.prepareChainResult(room ? budget : full);
        bool early = room && (onlyFinal || steps < longSteps);
        EXPECT_EQ(graph.hasPreparedResult(), early);
        EXPECT_EQ(budget->held.load() > 0, early); // its bytes, while queued
        EXPECT_EQ(full->held.load(), 0);
        EXPECT_TRUE(graph.result().outputs.empty()); // none before it starts
        ASSERT_TRUE(graph.start().ok());
        EXPECT_FALSE(graph.hasPreparedResult());
        // Its room is the starter's to give back (the engine's: once a
        // round for all it started), and only once.
        int64_t room = graph.takePreparedRoom();
        EXPECT_EQ(room > 0, early);
        EXPECT_EQ(budget->held.load(), room);
        budget->held.fetch_sub(room);
        EXPECT_EQ(graph.takePreparedRoom(), 0);
        const std::vector<OutputTensor> &outputs = graph.result().outputs;
        SCOPED_TRACE(std::to_string(steps) + " steps" +
                     (onlyFinal ? ", the final state only" : "") +
                     (room ? "" : ", no room in the budget"));
        if (onlyFinal) {
          ASSERT_EQ(outputs.size(), 1u);
          EXPECT_EQ(outputs[0].name, roles.finalNames[state]);
          EXPECT_EQ(graph.emittedRowsOf(emitted), nullptr);
          EXPECT_EQ(graph.finalRowOf(state), reinterpret_cast<const uint8_t *>(
                                                 outputs[0].floats.data()));
          continue;
        }
        ASSERT_EQ(outputs.size(),
                  roles.emitted.size() + roles.stateOutputs.size());
        EXPECT_EQ(outputs[0].name, roles.outputNames[emitted]);
        ASSERT_FALSE(outputs[0].shape.empty());
        EXPECT_EQ(outputs[0].shape[0], static_cast<int64_t>(steps));
        EXPECT_EQ(outputs[0].floats.size() * sizeof(float), steps * rowBytes);
        EXPECT_EQ(graph.emittedRowsOf(emitted),
                  reinterpret_cast<const uint8_t *>(outputs[0].floats.data()));
        const OutputTensor &final = outputs[roles.emitted.size()];
        EXPECT_EQ(final.name, roles.finalNames[state]);
        EXPECT_EQ(graph.finalRowOf(state),
                  reinterpret_cast<const uint8_t *>(final.floats.data()));
      }
}

// A request whose result was made early but that never starts (refused,
// cancelled in the queue) gives its bytes back to the budget.
TEST(RequestTest, AnUnstartedRequestGivesItsResultBytesBack) {
  auto example = exampleModel("lstm");
  ASSERT_TRUE(example);
  const ModelStructure &structure = example->structure;
  auto engine = manualEngine("lstm");
  ASSERT_TRUE(engine);
  auto budget = std::make_shared<CellGraph::ResultBudget>();
  {
    CellGraph first(
        structure,
        engine->parser().parse(R"({"tokens": [1, 2, 3]})", "").value(), 1,
        /*directReads=*/true);
    first.prepareChainResult(budget);
    ASSERT_TRUE(first.hasPreparedResult());
    int64_t one = budget->held.load();
    EXPECT_GT(one, 0);
    // The budget holds what the queued results take, no more.
    budget->limit = one + one / 2;
    CellGraph second(
        structure,
        engine->parser().parse(R"({"tokens": [4, 5, 6]})", "").value(), 1,
        /*directReads=*/true);
    second.prepareChainResult(budget);
    EXPECT_FALSE(second.hasPreparedResult());
    EXPECT_EQ(budget->held.load(), one);
  }
  EXPECT_EQ(budget->held.load(), 0);
}

TEST(RequestTest, DecoderWindowStepsReadTheirTokensOnTheDevice) {
  auto example = exampleModel("seq2seq");
  ASSERT_TRUE(example);
  const ModelStructure &structure = example->structure;
  ASSERT_TRUE(structure.tokenFeedbackOnDevice);
  auto engine = manualEngine("seq2seq");
  Request request =
      engine->parser()
          .parse(R"({"id": "w", "tokens": [7], "max_decode_length": 6})", "")
          .value();
  CellGraph graph(structure, std::move(request), /*decodeWindow=*/4);
  ASSERT_EQ(graph.start().value().size(), 1u);
  std::vector<int64_t> script = {5, 6, structure.eosToken, 8, 9, 10};
  size_t step = 0;
  auto reader = [&](uint32_t, uint32_t output, void *bytes) {
    if (output == structure.decoderTokenOutput)
      std::memcpy(bytes, &script.at(step++), sizeof(int64_t));
    return Status::ok();
  };
  auto decoder = graph.nodeDone(0, reader);
  ASSERT_TRUE(decoder.ok());
  ASSERT_EQ(decoder->size(), 1u);
  const ReadySubgraph &window = decoder->front();
  EXPECT_FALSE(window.continuesChain);
  ASSERT_EQ(window.size(), 4u); // four steps issued at once
  uint32_t tokenIn = structure.decoderTokenInput;
  EXPECT_EQ(graph.inputs(window.node(0))[tokenIn].kind,
            NodeSource::Kind::Data); // BOS
  for (size_t k = 1; k < 4; ++k) {
    const NodeSource &token = graph.inputs(window.node(k))[tokenIn];
    EXPECT_EQ(token.kind, NodeSource::Kind::Output);
    EXPECT_EQ(token.node, window.node(k - 1));
    EXPECT_EQ(token.output, structure.decoderTokenOutput);
  }
  // Each step the host reads adds one at the end of the window, up to the
  // limit; EOS ends the request with steps still issued after it.
  auto more = graph.nodeDone(window.node(0), reader);
  ASSERT_TRUE(more.ok());
  ASSERT_EQ(more->size(), 1u);
  EXPECT_TRUE(more->front().continuesChain);
  EXPECT_EQ(more->front().size(), 1u);
  ASSERT_TRUE(graph.nodeDone(window.node(1), reader).ok());
  ASSERT_TRUE(graph.nodeDone(window.node(2), reader).ok());
  EXPECT_TRUE(graph.finished());
  EXPECT_EQ(graph.result().stopReason, "eos");
  EXPECT_EQ(graph.result().find("tokens")->integers,
            (IntegerValues{5, 6, structure.eosToken}));
  EXPECT_EQ(graph.nodes().size(), 1u + 6u); // encoder, window 4 + 2 added
}

TEST(RequestTest, AFullQueueRefusesAtOnce) {
  auto engine = manualEngine("lstm", 4096, /*maxQueue=*/3);
  ASSERT_TRUE(engine);
  std::vector<std::future<RequestResult>> futures;
  for (int i = 0; i < 5; ++i)
    futures.push_back(engine->submit(
        engine->parser().parse(R"({"tokens": [1, 2, 3]})", "q").value()));
  EXPECT_EQ(futures[3].get().status.code(), StatusCode::ResourceExhausted);
  EXPECT_NE(futures[4].get().status.message().find("overloaded: 3 requests"),
            std::string::npos);
  engine->drain();
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(futures[i].get().status.isOk());
}

TEST(RequestTest, SmallPoolsMakeRequestsWaitNotFail) {
  // 30 rows a pool: one zero row, so 29 for requests. A chain reserves two
  // generations of its two 64-float states and a session's parked state, 6
  // rows of that pool: four run at a time (and are still running after one
  // round of five of their eight steps).
  auto engine = manualEngine("lstm", /*poolRows=*/30);
  ASSERT_TRUE(engine);
  std::vector<std::future<RequestResult>> futures;
  for (int i = 0; i < 10; ++i)
    futures.push_back(
        engine->submit(engine->parser()
                           .parse(R"({"tokens": [5, 6, 7, 8, 9, 10, 11, 12]})",
                                  "p" + std::to_string(i))
                           .value()));
  engine->runOnce();
  EXPECT_EQ(engine->stats().running, 4u);
  EXPECT_EQ(engine->stats().waiting, 6u);
  engine->drain();
  for (auto &future : futures)
    EXPECT_TRUE(future.get().status.isOk());
  // A tree that needs more rows than the pools have is refused with why.
  auto trees = manualEngine("treelstm", /*poolRows=*/4);
  std::string big = R"({"id": "big", "nodes": [{"token": 1}, {"token": 2},
      {"token": 3}, {"children": [0, 1]}, {"children": [3, 2]}]})";
  auto refused = trees->submit(trees->parser().parse(big, "").value());
  trees->drain();
  RequestResult result = refused.get();
  EXPECT_EQ(result.status.code(), StatusCode::OutOfRange); // not load: 400
  EXPECT_NE(result.status.message().find("request big needs 10 rows"),
            std::string::npos)
      << result.status.message();
}

TEST(RequestTest, MissedDeadlinesAreCounted) {
  auto engine = manualEngine("lstm");
  ASSERT_TRUE(engine);
  auto tight = engine->submit(engine->parser()
                                  .parse(R"({"tokens": [1, 2, 3, 4, 5],
                                             "deadline_ms": 0.000001})",
                                         "tight")
                                  .value());
  auto loose = engine->submit(engine->parser()
                                  .parse(R"({"tokens": [1, 2],
                                             "deadline_ms": 600000})",
                                         "loose")
                                  .value());
  engine->drain();
  EXPECT_TRUE(tight.get().missedDeadline);
  EXPECT_FALSE(loose.get().missedDeadline);
  EXPECT_EQ(engine->stats().deadlineMisses, 1u);
  EXPECT_EQ(parseError(*engine, R"({"tokens": [1], "deadline_ms": -1})"),
            "request line 1: \"deadline_ms\" must be a number >= 0");
}

TEST(RequestTest, ConcurrentSubmittersGetTheirOwnResults) {
  EngineOptions options; // with the worker thread
  auto engine = Engine::create(loadExample("lstm"), options);
  ASSERT_TRUE(engine.ok());
  auto &served = *engine.value();
  std::vector<std::thread> clients;
  std::vector<std::string> failures(4);
  for (int c = 0; c < 4; ++c)
    clients.emplace_back([&, c] {
      for (int i = 0; i < 25; ++i) {
        std::string id = std::to_string(c) + "-" + std::to_string(i);
        std::string json = "{\"id\": \"" + id + "\", \"tokens\": [" +
                           std::to_string(1 + c) + ", " +
                           std::to_string(2 + i) + "]}";
        RequestResult result =
            served.submit(served.parser().parse(json, "").value()).get();
        if (!result.status.isOk() || result.id != id ||
            result.find("h_next") == nullptr)
          failures[c] = id + ": " + result.status.toString();
      }
    });
  for (auto &client : clients)
    client.join();
  for (const std::string &failure : failures)
    EXPECT_EQ(failure, "");
  EXPECT_EQ(served.stats().completed, 100u);
}

} // namespace
