//===- ModelInfoTest.cpp - describeModel, the public view of an artifact -===//
//
// describeModel (cellrun/Model.h) must say what the examples' manifests
// say (names, roles, element types, batch sizes, seq2seq tokens), agree
// with the file's own tables for everything else, and count the state
// memory a pool row costs as the executor lays out its pools (one pool per
// element type and row size).
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "artifact/Artifact.h"
#include "cellrun/Model.h"

#include <gtest/gtest.h>

#include <cctype>

using namespace cellrun;
using cellc::testing::exampleArtifactPath;
using cellc::testing::loadArtifactOrFail;

namespace {

const std::vector<uint32_t> kExampleBatches = {1, 2, 4, 8, 16, 32, 64};

TEST(ModelInfoTest, LstmChainAsItsManifestSaysIt) {
  auto artifact = loadArtifactOrFail(exampleArtifactPath("lstm"));
  ASSERT_TRUE(artifact);
  ModelInfo model = describeModel(*artifact);
  EXPECT_EQ(model.source, exampleArtifactPath("lstm"));
  EXPECT_EQ(model.name, "lstm_lm");
  EXPECT_EQ(model.producer.rfind("cellc ", 0), 0u) << model.producer;
  EXPECT_EQ(model.unfolding, UnfoldingKind::Chain);
  EXPECT_STREQ(unfoldingName(model.unfolding), "chain");
  EXPECT_EQ(model.precision, ComputePrecision::FP32);
  EXPECT_EQ(model.formatVersion, supportedFormatVersion());
  EXPECT_EQ(model.fileBytes, artifact->fileSize());
  EXPECT_EQ(model.checksum, artifact->checksum());
  ASSERT_EQ(model.cells.size(), 1u);
  const CellInfo &cell = model.cells[0];
  EXPECT_EQ(cell.name, "lstm");
  EXPECT_EQ(cell.batchSizes, kExampleBatches);
  ASSERT_EQ(cell.inputs.size(), 3u);
  EXPECT_EQ(cell.inputs[0].name, "token");
  EXPECT_EQ(cell.inputs[0].role, "input");
  EXPECT_EQ(cell.inputs[0].type, ElementType::I64);
  EXPECT_TRUE(cell.inputs[0].rowShape.empty());
  EXPECT_EQ(cell.inputs[1].role, "state");
  EXPECT_EQ(cell.inputs[1].rowShape, std::vector<int64_t>{64});
  ASSERT_EQ(cell.outputs.size(), 2u);
  EXPECT_TRUE(cell.outputs[0].emitted) << "h_next is the per-step output";
  EXPECT_FALSE(cell.outputs[1].emitted);
  EXPECT_EQ(cell.weightCount, 3u);
  // Pools: token ids (8 bytes a row) and the f32 states (64 values).
  EXPECT_EQ(model.poolBytesPerRow, 8u + 64u * 4u);
}

TEST(ModelInfoTest, Seq2SeqTokensAndCells) {
  auto artifact = loadArtifactOrFail(exampleArtifactPath("seq2seq"));
  ASSERT_TRUE(artifact);
  ModelInfo model = describeModel(*artifact);
  EXPECT_EQ(model.unfolding, UnfoldingKind::Seq2Seq);
  EXPECT_EQ(model.beginToken, 1);
  EXPECT_EQ(model.endToken, 2);
  EXPECT_EQ(model.maxDecodeLength, 64);
  ASSERT_EQ(model.cells.size(), 2u);
  EXPECT_EQ(model.cells[0].name, "encoder");
  EXPECT_EQ(model.cells[1].name, "decoder");
  EXPECT_EQ(model.cells[1].outputs[0].name, "next_token");
  EXPECT_EQ(model.cells[1].outputs[0].role, "output");
  // next_token shares the token ids' pool.
  EXPECT_EQ(model.poolBytesPerRow, 8u + 64u * 4u);
}

TEST(ModelInfoTest, AgreesWithTheFileOnEveryExample) {
  for (const char *example : {"lstm", "gru", "seq2seq", "treelstm"}) {
    SCOPED_TRACE(example);
    auto artifact = loadArtifactOrFail(exampleArtifactPath(example));
    ASSERT_TRUE(artifact);
    ModelInfo model = describeModel(*artifact);
    std::vector<const cellpack::CellType *> cells = artifact->cells();
    ASSERT_EQ(model.cells.size(), cells.size());
    for (size_t c = 0; c < cells.size(); ++c) {
      const cellpack::CellType &cell = *cells[c];
      const CellInfo &info = model.cells[c];
      EXPECT_EQ(info.name, cell.name()->str());
      EXPECT_EQ(info.batchSizes, artifact->batchSizes(cell));
      ASSERT_EQ(info.inputs.size(), cell.inputs()->size());
      for (uint32_t i = 0; i < cell.inputs()->size(); ++i) {
        std::string type =
            cellpack::EnumNameDType(cell.inputs()->Get(i)->dtype());
        for (char &ch : type)
          ch = static_cast<char>(std::tolower(ch));
        EXPECT_EQ(elementTypeName(info.inputs[i].type), type);
      }
      uint64_t weightBytes = 0;
      for (uint32_t w = 0; w < cell.weights()->size(); ++w)
        weightBytes += artifact->weight(cell, w)->bytes;
      EXPECT_EQ(info.weightBytes, weightBytes);
      const cellpack::CellCode &code = artifact->code(cell);
      EXPECT_EQ(info.kernelCount,
                code.kernel_names() ? code.kernel_names()->size() : 0u);
    }
  }
}

} // namespace
