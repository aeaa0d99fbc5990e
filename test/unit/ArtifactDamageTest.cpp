//===- ArtifactDamageTest.cpp - Damage the checks must catch
//---------------===//
//
// Bytes of a real artifact (the LSTM and seq2seq examples) changed at
// random outside the weight data and the GPU code, with the checksum made
// right again, as an adversary would: every such artifact the loader and
// Engine::check accept (what `cellrun inspect` accepts) is served by an
// engine without an artifact error at every batch size it has, and one an
// engine cannot create is refused by the checks first. Before Engine::check
// prepared every plan, some damaged regions passed inspect and failed
// requests later ("op ... do not fit").
//
//===----------------------------------------------------------------------===//
#include "cellrun/Engine.h"

#include "ExampleArtifacts.h"
#include "schema/Checksum.h"
#include "schema/KernelGrid.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

using namespace cellrun;

namespace {

std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The payload (the Model's bytes) of the artifact at `path`, empty when
/// there is no such file; `version` gets the artifact's format version.
std::vector<uint8_t> modelOf(const std::string &path, uint32_t &version) {
  std::vector<uint8_t> file = readFile(path);
  if (file.empty())
    return {};
  const auto *envelope = cellpack::GetSizePrefixedArtifact(file.data());
  version = envelope->format_version();
  return {envelope->payload()->begin(), envelope->payload()->end()};
}

std::vector<uint8_t> wrap(const std::vector<uint8_t> &model, uint32_t version) {
  flatbuffers::FlatBufferBuilder fbb;
  fbb.PreAlign(model.size(), 64);
  auto payload = fbb.CreateVector(model);
  auto artifact = cellpack::CreateArtifact(
      fbb, version, cellpack::checksum(model.data(), model.size()), payload);
  cellpack::FinishSizePrefixedArtifactBuffer(fbb, artifact);
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

/// Offsets in `model` that the cpu backend never reads as structure: weight
/// data and the GPU code images (changing them changes numbers only).
std::vector<bool> freeBytes(const std::vector<uint8_t> &model) {
  std::vector<bool> free(model.size(), false);
  const auto *root = flatbuffers::GetRoot<cellpack::Model>(model.data());
  auto mark = [&](const void *data, size_t size) {
    size_t at = static_cast<const uint8_t *>(data) - model.data();
    for (size_t i = at; i < at + size && i < free.size(); ++i)
      free[i] = true;
  };
  for (const cellpack::CellType *cell : *root->cells())
    if (cell->weights())
      for (const cellpack::Weight *weight : *cell->weights())
        if (weight->data())
          mark(weight->data()->data(), weight->data()->size());
  if (root->code())
    for (const cellpack::CellCode *code : *root->code()) {
      if (code->cubins())
        for (const cellpack::CodeImage *image : *code->cubins())
          if (image->cubin())
            mark(image->cubin()->data(), image->cubin()->size());
      if (code->ptx())
        mark(code->ptx()->data(), code->ptx()->size());
      if (code->source())
        mark(code->source()->data(), code->source()->size());
    }
  return free;
}

/// Requests that make the engine run every batch size of the first cell:
/// `size` requests of one length submitted together run as one task.
void serveEveryBatchSize(const std::shared_ptr<const LoadedArtifact> &artifact,
                         const std::string &what) {
  EngineOptions options;
  options.startWorker = false;
  options.executor.threads = 1;
  auto engine = Engine::create(artifact, options);
  ASSERT_TRUE(engine.ok()) << what << ": Engine::check accepted what "
                           << "Engine::create refuses: "
                           << engine.status().toString();
  const cellpack::CellType &cell = *artifact->cells()[0];
  for (uint32_t size : artifact->batchSizes(cell)) {
    std::vector<std::future<RequestResult>> results;
    for (uint32_t r = 0; r < size; ++r) {
      auto request = (*engine)->parser().parse(
          "{\"id\": \"r" + std::to_string(r) +
              "\", \"tokens\": [3, 14, 15], \"max_decode_length\": 2}",
          "");
      if (!request.ok()) { // a chain has no decode limit
        request = (*engine)->parser().parse("{\"id\": \"r" + std::to_string(r) +
                                                "\", \"tokens\": [3, 14, 15]}",
                                            "");
      }
      if (!request.ok())
        return; // a damaged table refuses these tokens: not a load error
      results.push_back((*engine)->submit(std::move(request).value()));
    }
    (*engine)->drain();
    for (auto &result : results) {
      Status status = result.get().status;
      // A request refused for its content is the request's matter; an
      // artifact that cannot run what it claims is the checks' miss.
      EXPECT_TRUE(status.isOk() || status.code() == StatusCode::InvalidArgument)
          << what << ", batch size " << size << ": " << status.toString();
    }
  }
}

class ArtifactDamage : public ::testing::TestWithParam<const char *> {};

TEST_P(ArtifactDamage, WhatTheChecksAcceptServesAtEveryBatchSize) {
  std::string path = cellc::testing::exampleArtifactPath(GetParam());
  uint32_t version = 0;
  std::vector<uint8_t> model = modelOf(path, version);
  ASSERT_FALSE(model.empty()) << path;
  std::vector<bool> free = freeBytes(model);
  std::vector<size_t> structure;
  for (size_t i = 0; i < model.size(); ++i)
    if (!free[i])
      structure.push_back(i);
  ASSERT_GT(structure.size(), 1000u);

  // CELL_DAMAGE_TRIALS and CELL_DAMAGE_SEED widen the search by hand (under
  // the sanitizers); the suite runs the first 400 of seed 7.
  const char *trialsText = std::getenv("CELL_DAMAGE_TRIALS");
  const char *seedText = std::getenv("CELL_DAMAGE_SEED");
  int trials = trialsText ? std::atoi(trialsText) : 400;
  std::mt19937 random(seedText ? std::atoi(seedText) : 7);
  int refused = 0, served = 0;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<uint8_t> damaged = model;
    for (int flips = 1 + random() % 3; flips > 0; --flips)
      damaged[structure[random() % structure.size()]] =
          static_cast<uint8_t>(random());
    std::string what =
        std::string(GetParam()) + " trial " + std::to_string(trial);
    auto artifact = loadArtifactFromBytes(wrap(damaged, version), what);
    if (!artifact.ok() || !Engine::check(artifact.value()).isOk()) {
      ++refused;
      continue;
    }
    ++served;
    serveEveryBatchSize(artifact.value(), what);
    if (HasFatalFailure())
      return;
  }
  // Most structural damage is refused; some (names, unused fields) is not.
  EXPECT_GT(refused, trials / 4);
  EXPECT_GT(served, 0);
  std::printf("%s: %d damaged artifacts refused by the checks, %d served\n",
              GetParam(), refused, served);
}

TEST(ArtifactDamageTargeted, ABosTokenOutsideTheDecodersVocabularyIsRefused) {
  // Found by the random damage above (the attention example, seed 7): a
  // BOS the decoder's token table does not have passed the checks and
  // failed every request at its first decoder step.
  std::string path = cellc::testing::exampleArtifactPath("seq2seq");
  uint32_t version = 0;
  std::vector<uint8_t> model = modelOf(path, version);
  ASSERT_FALSE(model.empty()) << path;
  const cellpack::Unfolding *unfolding =
      flatbuffers::GetRoot<cellpack::Model>(model.data())->unfolding();
  ASSERT_NE(unfolding, nullptr);
  // A generated table is a flatbuffers::Table (a private base at offset 0).
  const uint8_t *field =
      reinterpret_cast<const flatbuffers::Table *>(unfolding)->GetAddressOf(
          cellpack::Unfolding::VT_BOS_TOKEN);
  ASSERT_NE(field, nullptr) << "the example's BOS is stored (not 0)";
  auto withBos = [&](int64_t bos) {
    std::vector<uint8_t> damaged = model;
    std::memcpy(damaged.data() + (field - model.data()), &bos, sizeof bos);
    auto artifact = loadArtifactFromBytes(wrap(damaged, version),
                                          "bos " + std::to_string(bos));
    if (!artifact.ok())
      return artifact.status().message();
    Status checked = Engine::check(artifact.value());
    return checked.isOk() ? std::string() : checked.message();
  };
  // Rows from the end count, as in a Gather: -1 is the last token.
  EXPECT_EQ(withBos(-1), "");
  for (int64_t bos : {int64_t(15728641), int64_t(-100000)}) {
    std::string refusal = withBos(bos);
    EXPECT_NE(refusal.find("bos_token " + std::to_string(bos) +
                           " is outside the decoder's vocabulary (0.."),
              std::string::npos)
        << refusal;
  }
}

TEST(ArtifactDamageTargeted, AGemmEpilogueNamingWhatTheCodeLacksIsRefused) {
  // A kernel step's GEMM-and-epilogue kernel (the LSTM compiled with every
  // GEMM apart lists one at batch 1): its name, segments and input are
  // checked against the code and the step.
  std::string path =
      cellc::testing::examplesBuildDir() + "/lstm/model-unfused.cellpack";
  uint32_t version = 0;
  std::vector<uint8_t> model = modelOf(path, version);
  ASSERT_FALSE(model.empty()) << path;
  const cellpack::BatchPlan &plan =
      *flatbuffers::GetRoot<cellpack::Model>(model.data())
           ->cells()
           ->Get(0)
           ->plans()
           ->Get(0);
  const cellpack::GemmEpilogue *epilogue = nullptr;
  for (const cellpack::TaskStep *step : *plan.steps())
    if (const cellpack::KernelStep *kernel = step->step_as_KernelStep())
      if (kernel->gemm_epilogue())
        epilogue = kernel->gemm_epilogue();
  ASSERT_NE(epilogue, nullptr) << "batch 1 lists no GEMM epilogue";
  auto fieldOf = [&](flatbuffers::voffset_t field) {
    const uint8_t *at =
        reinterpret_cast<const flatbuffers::Table *>(epilogue)->GetAddressOf(
            field);
    EXPECT_NE(at, nullptr);
    return at ? at - model.data() : 0;
  };
  auto damagedWith = [&](size_t offset, const void *bytes, size_t size) {
    std::vector<uint8_t> damaged = model;
    std::memcpy(damaged.data() + offset, bytes, size);
    auto artifact = loadArtifactFromBytes(wrap(damaged, version), "epilogue");
    if (!artifact.ok())
      return artifact.status().message();
    Status checked = Engine::check(artifact.value());
    return checked.isOk() ? std::string() : checked.message();
  };
  uint32_t segments = 9, input = 40;
  EXPECT_NE(damagedWith(fieldOf(cellpack::GemmEpilogue::VT_SEGMENTS), &segments,
                        sizeof segments)
                .find("its GEMM epilogue has 9 segments (1 to 4)"),
            std::string::npos);
  EXPECT_NE(damagedWith(fieldOf(cellpack::GemmEpilogue::VT_GEMM_INPUT), &input,
                        sizeof input)
                .find("its GEMM epilogue reads input 40 of "),
            std::string::npos);
  // The name's first character (a string's bytes follow its length).
  size_t name = reinterpret_cast<const uint8_t *>(epilogue->kernel()->data()) -
                model.data();
  std::string refusal = damagedWith(name, "X", 1);
  EXPECT_NE(refusal.find("its GEMM epilogue kernel 'Xstm_b1_k1_gemm' is not "
                         "among the kernel_names"),
            std::string::npos)
      << refusal;
}

INSTANTIATE_TEST_SUITE_P(Examples, ArtifactDamage,
                         ::testing::Values("lstm", "seq2seq", "treelstm",
                                           "attention"),
                         [](const auto &info) {
                           return std::string(info.param);
                         });

} // namespace

TEST(ArtifactDamageTargeted, ARowKernelsBlocksPerRowOutOfRangeIsRefused) {
  // The attention decoder's scores and context kernels take several blocks
  // a row; none or more than kMaxBlocksPerRow is refused.
  std::string path =
      cellc::testing::examplesBuildDir() + "/attention/model.cellpack";
  uint32_t version = 0;
  std::vector<uint8_t> model = modelOf(path, version);
  ASSERT_FALSE(model.empty()) << path;
  const cellpack::KernelStep *split = nullptr;
  for (const cellpack::CellType *cell :
       *flatbuffers::GetRoot<cellpack::Model>(model.data())->cells())
    for (const cellpack::TaskStep *step : *cell->plans()->Get(0)->steps())
      if (const cellpack::KernelStep *kernel = step->step_as_KernelStep())
        if (!split && kernel->blocks_per_row() > 1)
          split = kernel;
  ASSERT_NE(split, nullptr) << "no kernel of several blocks a row at batch 1";
  const uint8_t *at =
      reinterpret_cast<const flatbuffers::Table *>(split)->GetAddressOf(
          cellpack::KernelStep::VT_BLOCKS_PER_ROW);
  ASSERT_NE(at, nullptr);
  std::string name = split->name()->str();
  auto damagedWith = [&](uint32_t blocks) {
    std::vector<uint8_t> damaged = model;
    std::memcpy(damaged.data() + (at - model.data()), &blocks, sizeof blocks);
    auto artifact = loadArtifactFromBytes(wrap(damaged, version), "rows");
    return artifact.ok() ? std::string() : artifact.status().message();
  };
  EXPECT_EQ(damagedWith(split->blocks_per_row()), "");
  for (uint32_t blocks : {0u, cellpack::kMaxBlocksPerRow + 1}) {
    std::string refusal = damagedWith(blocks);
    EXPECT_NE(refusal.find("(kernel '" + name + "'): blocks_per_row " +
                           std::to_string(blocks) + " is not from 1 to 4096"),
              std::string::npos)
        << refusal;
  }
}
