//===- EngineProjectionTest.cpp - Inputs projected at admission -----------===//
//
// The GRU example is compiled with its input projection hoisted into a
// cell of its own (cellc's default) and, for these tests, left in the step
// (examples/CMakeLists.txt: model-step.cellpack). Served by
// the engine, the two give the same bits for every request: the projection
// is the same GEMM, run at admission. Also with pools so small that a
// request's projection runs in several tasks, with every policy, with the
// products kept in the pool rows the steps read (cellular batching), and
// refused: requests that give the projected width instead of the input's,
// artifacts whose projection does not fit the step.
//
//===----------------------------------------------------------------------===//
#include "RandomRequests.h"
#include "artifact/Artifact.h"
#include "cellrun/Engine.h"
#include "engine/EngineTesting.h"
#include "schema/Checksum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>

using namespace cellrun;
using cellc::testing::randomRequest;

namespace {

std::shared_ptr<const LoadedArtifact> load(const std::string &path) {
  auto loaded = loadArtifact(path);
  EXPECT_TRUE(loaded.ok()) << loaded.status().toString();
  return loaded.ok() ? std::move(loaded).value() : nullptr;
}

std::shared_ptr<const LoadedArtifact> hoisted() {
  return load(std::string(CELL_EXAMPLES_BUILD_DIR) + "/gru/model.cellpack");
}

std::shared_ptr<const LoadedArtifact> inStep() {
  return load(std::string(CELL_EXAMPLES_BUILD_DIR) +
              "/gru/model-step.cellpack");
}

/// Every request's result, served together by an engine over `artifact`.
std::vector<RequestResult> serve(std::shared_ptr<const LoadedArtifact> artifact,
                                 const std::vector<std::string> &texts,
                                 Policy policy, uint32_t poolRows = 4096,
                                 EngineStats *stats = nullptr) {
  EngineOptions options;
  options.policy = policy;
  options.poolRows = poolRows;
  options.startWorker = false;
  auto engine = Engine::create(std::move(artifact), options);
  EXPECT_TRUE(engine.ok()) << engine.status().toString();
  if (!engine.ok())
    return {};
  uint32_t idleRows = engineExecutor(*engine.value()).rowsInUse();
  std::vector<std::future<RequestResult>> futures;
  for (const std::string &text : texts) {
    auto request = engine.value()->parser().parse(text, "line");
    EXPECT_TRUE(request.ok()) << request.status().toString();
    if (!request.ok())
      return {};
    futures.push_back(engine.value()->submit(std::move(request).value()));
  }
  engine.value()->drain();
  std::vector<RequestResult> results;
  for (auto &future : futures)
    results.push_back(future.get());
  // The projection's rows went back with everything else.
  EXPECT_EQ(engineExecutor(*engine.value()).rowsInUse(), idleRows);
  if (stats)
    *stats = engine.value()->stats();
  return results;
}

void expectSameBits(const std::vector<RequestResult> &got,
                    const std::vector<RequestResult> &want) {
  ASSERT_EQ(got.size(), want.size());
  size_t compared = 0;
  for (size_t r = 0; r < want.size(); ++r) {
    ASSERT_TRUE(got[r].status.isOk()) << got[r].status.toString();
    ASSERT_TRUE(want[r].status.isOk()) << want[r].status.toString();
    ASSERT_EQ(got[r].outputs.size(), want[r].outputs.size());
    for (const OutputTensor &expected : want[r].outputs) {
      const OutputTensor *have = got[r].find(expected.name);
      ASSERT_NE(have, nullptr) << expected.name;
      ASSERT_EQ(have->shape, expected.shape) << want[r].id;
      ASSERT_EQ(have->floats.size(), expected.floats.size());
      EXPECT_EQ(std::memcmp(have->floats.data(), expected.floats.data(),
                            expected.floats.size() * sizeof(float)),
                0)
          << want[r].id << " " << expected.name << " differs";
      compared += expected.floats.size();
    }
  }
  EXPECT_GT(compared, 10000u);
}

std::vector<std::string> requests(int count, int maxLength,
                                  unsigned seed = 11) {
  std::mt19937 random(seed);
  std::vector<std::string> texts;
  for (int i = 0; i < count; ++i)
    texts.push_back(randomRequest("gru", i, random, maxLength));
  return texts;
}

TEST(EngineProjection, TheHoistedGruHasItsProjectionCell) {
  auto artifact = hoisted();
  ASSERT_TRUE(artifact);
  auto step = artifact->cell("gru");
  ASSERT_TRUE(step.ok());
  const cellpack::TensorSpec *x = step.value()->inputs()->Get(0);
  ASSERT_NE(x->projected_by(), nullptr) << "cellc did not hoist it";
  EXPECT_EQ(x->projected_by()->str(), "gru_x_projection");
  EXPECT_EQ(x->row_shape()->Get(0), 192); // the product: three gates
  EXPECT_TRUE(artifact->cell("gru_x_projection").ok());
  // Requests still give the input's 64 features.
  auto engine = Engine::create(artifact, EngineOptions());
  ASSERT_TRUE(engine.ok());
  std::string text = "{\"id\": \"w\", \"steps\": [{\"x\": [";
  for (int f = 0; f < 192; ++f)
    text += (f ? ", " : "") + std::string("0.5");
  auto refused = engine.value()->parser().parse(text + "]}]}", "line");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("input 'x' takes 64 value(s)"),
            std::string::npos)
      << refused.status().toString();
}

TEST(EngineProjection, SameBitsAsTheProjectionInTheStep) {
  auto texts = requests(200, 30);
  for (Policy policy : {Policy::Cellular, Policy::Graph, Policy::Padded}) {
    SCOPED_TRACE(policyName(policy));
    expectSameBits(serve(hoisted(), texts, policy),
                   serve(inStep(), texts, policy));
  }
}

TEST(EngineProjection, SmallPoolsProjectInSeveralTasks) {
  // 24 rows a pool: a request of up to 60 steps is projected in tasks of
  // the rows that are free, and requests wait for rows (none fails).
  auto texts = requests(40, 60, 3);
  auto small = serve(hoisted(), texts, Policy::Cellular, 24);
  expectSameBits(small, serve(inStep(), texts, Policy::Cellular));
  // Some request had more steps than a pool has rows.
  int64_t longest = 0;
  for (const RequestResult &result : small)
    if (const OutputTensor *emitted = result.find("h_next"))
      longest = std::max(longest, emitted->shape.at(0));
  EXPECT_GT(longest, 24);
}

TEST(EngineProjection, ProductsWaitInThePoolRowsTheStepsRead) {
  // Under cellular batching the products stay in pool rows, one a step,
  // from admission until the request ends: while the first step runs,
  // every admitted request holds a row for each of its steps (through the
  // requests' own rows the product would be two rows a request).
  EngineOptions options;
  options.startWorker = false;
  auto engine = Engine::create(hoisted(), options);
  ASSERT_TRUE(engine.ok()) << engine.status().toString();
  Engine *served = engine.value().get();
  uint64_t idle = engineRowsInUse(*served), atFirstTask = 0;
  // Requests of 10 steps or more: none ends in the first round.
  std::vector<std::string> texts;
  for (const std::string &text : requests(40, 30, 5))
    if (served->parser().parse(text, "line").value().steps.size() >= 10 &&
        texts.size() < 12)
      texts.push_back(text);
  ASSERT_EQ(texts.size(), 12u);
  std::vector<std::future<RequestResult>> futures;
  for (const std::string &text : texts)
    futures.push_back(
        served->submit(served->parser().parse(text, "line").value()));
  ASSERT_TRUE(served->runOnce()); // admits them all, projects, first round
  atFirstTask = engineRowsInUse(*served) - idle;
  served->drain();
  int64_t steps = 0;
  std::vector<RequestResult> results;
  for (auto &future : futures) {
    results.push_back(future.get());
    ASSERT_TRUE(results.back().status.isOk());
    steps += results.back().find("h_next")->shape.at(0);
  }
  EXPECT_GE(atFirstTask, static_cast<uint64_t>(steps))
      << "the products did not stay in pool rows";
  EXPECT_EQ(engineRowsInUse(*served), idle);
  expectSameBits(results, serve(inStep(), texts, Policy::Cellular));
}

TEST(EngineProjection, ProductsLeaveRoomForAFullBatch) {
  // 60 requests of up to 30 steps, all waiting at once: their products
  // would take about 900 rows. In pools of 600 rows, products stay in pool
  // rows only while the rest still holds a full batch (64) of requests
  // without them; the others read theirs through their own step rows, and
  // every result is the same bits.
  auto texts = requests(60, 30, 7);
  EngineStats tight, roomy;
  auto inTight = serve(hoisted(), texts, Policy::Cellular, 600, &tight);
  auto inRoomy = serve(hoisted(), texts, Policy::Cellular, 8192, &roomy);
  EXPECT_GT(tight.productsInPoolRows, 0u);
  EXPECT_GT(tight.productsThroughStepRows, 0u);
  EXPECT_EQ(tight.productsInPoolRows + tight.productsThroughStepRows, 60u);
  EXPECT_EQ(roomy.productsInPoolRows, 60u);
  EXPECT_EQ(roomy.productsThroughStepRows, 0u);
  // All 60 started together in both (one batch, as many tasks as the
  // longest request has steps): none waited for products to leave.
  ASSERT_EQ(tight.cells.size(), 1u);
  EXPECT_EQ(tight.cells[0].tasks, roomy.cells[0].tasks);
  std::vector<RequestResult> reference =
      serve(inStep(), texts, Policy::Cellular);
  expectSameBits(inTight, reference);
  expectSameBits(inRoomy, reference);
  // The other policies take no pool rows for products.
  EngineStats graph;
  serve(hoisted(), texts, Policy::Graph, 4096, &graph);
  EXPECT_EQ(graph.productsInPoolRows, 0u);
  EXPECT_EQ(graph.productsThroughStepRows, 60u);
}

/// The hoisted GRU's model with `damage` applied to its bytes (same
/// length), in a new envelope with the right checksum.
Result<std::shared_ptr<const LoadedArtifact>> damagedHoisted(
    const std::function<void(std::vector<uint8_t> &, const cellpack::Model &)>
        &damage) {
  std::string path =
      std::string(CELL_EXAMPLES_BUILD_DIR) + "/gru/model.cellpack";
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> file{std::istreambuf_iterator<char>(in),
                            std::istreambuf_iterator<char>()};
  const auto *envelope = cellpack::GetSizePrefixedArtifact(file.data());
  std::vector<uint8_t> model(envelope->payload()->begin(),
                             envelope->payload()->end());
  damage(model, *flatbuffers::GetRoot<cellpack::Model>(model.data()));
  flatbuffers::FlatBufferBuilder fbb;
  fbb.PreAlign(model.size(), 64);
  auto payload = fbb.CreateVector(model);
  cellpack::FinishSizePrefixedArtifactBuffer(
      fbb, cellpack::CreateArtifact(
               fbb, envelope->format_version(),
               cellpack::checksum(model.data(), model.size()), payload));
  return loadArtifactFromBytes(
      {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()},
      "damaged");
}

/// Why an engine cannot serve `artifact` (empty when it can).
std::string
refusal(const Result<std::shared_ptr<const LoadedArtifact>> &artifact) {
  if (!artifact.ok())
    return artifact.status().message();
  auto engine = Engine::create(artifact.value(), EngineOptions());
  return engine.ok() ? std::string() : engine.status().message();
}

/// The byte of `model` at `pointer` (into the buffer `root` was read from).
uint8_t &byteAt(std::vector<uint8_t> &model, const void *pointer) {
  return model[static_cast<const uint8_t *>(pointer) - model.data()];
}

TEST(EngineProjection, AProjectionThatDoesNotFitIsRefused) {
  // The step names a cell that is not there: the projection cell is then a
  // second step of the chain.
  std::string missing = refusal(damagedHoisted([](std::vector<uint8_t> &model,
                                                  const cellpack::Model &root) {
    for (const cellpack::CellType *cell : *root.cells())
      if (cell->name()->str() == "gru")
        byteAt(model, cell->inputs()->Get(0)->projected_by()->data() + 4) = 'y';
  }));
  EXPECT_NE(missing.find("a chain has exactly one cell (besides the cells "
                         "that project its inputs), this artifact has 2"),
            std::string::npos)
      << missing;
  // The projection's rows are not the step's input rows.
  std::string narrow = refusal(damagedHoisted(
      [](std::vector<uint8_t> &model, const cellpack::Model &root) {
        for (const cellpack::CellType *cell : *root.cells())
          if (cell->name()->str() == "gru_x_projection") {
            const auto *shape = cell->outputs()->Get(0)->row_shape();
            ASSERT_EQ(shape->Get(0), 192);
            byteAt(model, shape->data()) = 191; // little-endian 191
          }
      }));
  EXPECT_FALSE(narrow.empty()) << "served a projection of 191 values";
  EXPECT_NE(narrow.find("gru_x_projection"), std::string::npos) << narrow;
  std::printf("refused: %s\nrefused: %s\n", missing.c_str(), narrow.c_str());
}

} // namespace
