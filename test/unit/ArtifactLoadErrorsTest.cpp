//===- ArtifactLoadErrorsTest.cpp - Damaged cellpacks the loader refuses --===//
//
// Damages the artifacts of ArtifactBuilder.h and checks that the loader
// rejects every kind with its message: truncation, a flipped weight byte, a
// wrong identifier, another format version, a misaligned payload, semantic
// errors, random garbage, and models damaged under a valid checksum.
//
//===----------------------------------------------------------------------===//
#include "ArtifactBuilder.h"

#include "artifact/Artifact.h"
#include "artifact/CodeSelection.h"
#include "cellrun/ArtifactJson.h"

#include "schema/Checksum.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace cellrun;
using namespace cellpack;
using namespace cellc::testing;

namespace {

TEST(Artifact, TruncatedFilesAreRejected) {
  std::vector<uint8_t> bytes = buildArtifact();
  size_t following = bytes.size() - 4;
  for (size_t keep : {bytes.size() - 1, bytes.size() / 2}) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + keep);
    EXPECT_EQ(loadError(cut), "bad.cellpack: truncated: the size prefix says " +
                                  std::to_string(following) + " bytes but " +
                                  std::to_string(keep - 4) + " follow");
  }
  EXPECT_EQ(loadError({1, 2, 3}), "bad.cellpack: truncated: the file has 3 "
                                  "bytes, fewer than the 8 of a cellpack "
                                  "header");
  EXPECT_EQ(loadError({}), "bad.cellpack: truncated: the file has 0 bytes, "
                           "fewer than the 8 of a cellpack header");
}

TEST(Artifact, FlippedWeightByteFailsTheChecksum) {
  auto artifact = loadValid();
  ASSERT_TRUE(artifact);
  const cellpack::CellType *cell = *artifact->cell("lstm");
  size_t weightOffset =
      (*artifact->weight(*cell, 0)).data - artifact->fileData();
  std::vector<uint8_t> bytes(artifact->fileData(),
                             artifact->fileData() + artifact->fileSize());
  // The weight's first float (0.5f) is where the loader says it is.
  float first;
  std::memcpy(&first, &bytes[weightOffset], sizeof first);
  ASSERT_EQ(first, 0.5f);
  bytes[weightOffset + 5] ^= 0x10;
  auto loaded = loadArtifactFromBytes(bytes, "bad.cellpack");
  EXPECT_EQ(loaded.status().code(), StatusCode::DataLoss);
  EXPECT_EQ(loaded.status().message().rfind(
                "bad.cellpack: payload checksum mismatch: the file is "
                "corrupted (stored 0x",
                0),
            0u)
      << loaded.status().message();
}

TEST(Artifact, WrongIdentifierIsRejected) {
  std::vector<uint8_t> bytes = buildArtifact();
  std::memcpy(&bytes[8], "PK\x03\x04", 4);
  EXPECT_EQ(loadError(bytes),
            "bad.cellpack: not a cellpack: file identifier is 'PK\\x03\\x04'");
  // Another file fails the size prefix too; it is still "not a cellpack".
  std::string text = "name,value\nalpha,1\n";
  EXPECT_EQ(loadError({text.begin(), text.end()}),
            "bad.cellpack: not a cellpack: file identifier is 'ue\\x0aa'");
}

TEST(Artifact, OtherFormatVersionsAreRejected) {
  std::vector<uint8_t> model = buildModel(Spec());
  std::string current = std::to_string(kFormatVersion);
  auto newer =
      loadArtifactFromBytes(wrapModel(model, kFormatVersion + 1), "m.cellpack");
  EXPECT_EQ(newer.status().code(), StatusCode::Unsupported);
  EXPECT_EQ(newer.status().message(),
            "m.cellpack: format version " + std::to_string(kFormatVersion + 1) +
                " is newer than this cellrun reads (" + current +
                "); rebuild cellrun or recompile with a matching cellc");
  EXPECT_EQ(loadError(wrapModel(model, kFormatVersion - 1)),
            "bad.cellpack: format version " +
                std::to_string(kFormatVersion - 1) +
                " is older than this cellrun reads (" + current +
                "); recompile the model with a matching cellc");
  // A future version is reported as such even if its Model does not parse.
  std::vector<uint8_t> garbage(model.size(), 0xEE);
  EXPECT_NE(loadError(wrapModel(garbage, 7)).find("format version 7 is newer"),
            std::string::npos);
}

TEST(Artifact, MisalignedPayloadIsRejected) {
  std::vector<uint8_t> bytes = wrapModel(buildModel(Spec()), kFormatVersion, 8);
  std::string message = loadError(bytes);
  EXPECT_EQ(message.rfind("bad.cellpack: the payload is at offset ", 0), 0u)
      << message;
  EXPECT_NE(message.find(", not a multiple of 64 (force_align of the schema)"),
            std::string::npos)
      << message;
}

TEST(Artifact, SemanticErrorsNameCellAndBatchSize) {
  struct Case {
    std::function<void(Spec &)> change;
    std::string message;
  };
  const std::string plan1 = "bad.cellpack: cell 'lstm', batch size 1, step ";
  std::vector<Case> cases = {
      {[](Spec &s) {
         s.batchSizes = {8, 1};
       },
       "bad.cellpack: cell 'lstm': batch size 1 follows 8; batch sizes must "
       "be strictly increasing"},
      {[](Spec &s) {
         s.batchSizes = {8, 8};
       },
       "bad.cellpack: cell 'lstm': batch size 8 follows 8; batch sizes must "
       "be strictly increasing"},
      {[](Spec &s) {
         s.batchSizes = {0, 8};
       },
       "bad.cellpack: cell 'lstm': batch size 0 is not allowed (>= 1)"},
      {[](Spec &s) { s.gemmOffsetFromEnd = 4; },
       plan1 + "0 (gemm): d: workspace offset 28 + 32 bytes exceeds "
               "workspace_bytes 32"},
      {[](Spec &s) { s.kernelName = "lstm_fused"; },
       plan1 + "1 (kernel 'lstm_fused'): the kernel is not among the "
               "kernel_names of the cell's code"},
      {[](Spec &s) { s.gemmWeightIndex = 7; },
       plan1 + "0 (gemm): b: weight index 7 is out of range (the cell has "
               "2)"},
      {[](Spec &s) { s.weightDataDelta = -1; },
       "bad.cellpack: cell 'lstm': weight 'W' has 127 bytes of data but its "
       "shape [4, 8] of F32 needs 128"},
      {[](Spec &s) { s.gemmK = 5; },
       plan1 + "0 (gemm): a has shape [1, 4] but m=1, k=5, trans_a=false "
               "need [1, 5]"},
      {[](Spec &s) {
         s.gemmWeightShape = {2, 16};
       },
       plan1 + "0 (gemm): b: it reads F32 [2, 16] (128 bytes) but weight "
               "'W' has the shape [4, 8]"},
      {[](Spec &s) { s.peakExtra = 1; },
       "bad.cellpack: cell 'lstm', batch size 1: peak_bytes 33 exceed "
       "workspace_bytes 32"},
      {[](Spec &s) { s.gatheredInputAccess = Access::Dense; },
       plan1 + "1 (kernel 'lstm_b1_k0'): param 2 (InputRows of input 1): "
               "the input is Dense, not Gather"},
      {[](Spec &s) {
         s.kernelShape = KernelShape::RowReduction;
         s.kernelBlockSize = 48;
       },
       plan1 + "1 (kernel 'lstm_b1_k0'): a row kernel's block_size 48 is not "
               "a power of two from 32 to 256"},
      {[](Spec &s) {
         s.kernelShape = KernelShape::RowReduction;
         s.kernelBlockSize = 96;
       },
       plan1 + "1 (kernel 'lstm_b1_k0'): a row kernel's block_size 96 is not "
               "a power of two from 32 to 256"},
      {[](Spec &s) {
         s.kernelShape = KernelShape::RowReduction;
         s.kernelBlockSize = 512;
       },
       plan1 + "1 (kernel 'lstm_b1_k0'): a row kernel's block_size 512 is not "
               "a power of two from 32 to 256"},
      {[](Spec &s) { s.regionOperand = 4; },
       plan1 + "1 (kernel 'lstm_b1_k0'): region: op 0 (Add) operand 1 is "
               "value 4, out of range (the region has 4 values)"},
      {[](Spec &s) { s.unknownStepKind = true; },
       plan1 + "0: unknown step kind 7"},
      {[](Spec &s) { s.duplicateCell = true; },
       "bad.cellpack: cell 'lstm' is defined twice"},
      {[](Spec &s) { s.withCode = false; },
       "bad.cellpack: cell 'lstm' has no code entry; it needs exactly one"},
      {[](Spec &s) { s.weightSkew = 4; },
       "bad.cellpack: cell 'lstm': weight 'W': data is not 64-byte aligned "
       "in the file (force_align of the schema)"},
      {[](Spec &s) { s.batchSizes = {}; },
       "bad.cellpack: cell 'lstm' has no batch plans"},
  };
  for (const Case &c : cases) {
    Spec spec;
    c.change(spec);
    EXPECT_EQ(specError(spec), c.message) << "expected: " << c.message;
  }
}

TEST(Artifact, RandomGarbageIsRejectedWithoutCrashing) {
  std::mt19937 random(1234);
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> bytes(random() % 600);
    for (uint8_t &byte : bytes)
      byte = static_cast<uint8_t>(random());
    if (i % 2 && bytes.size() >= 12) { // Past the prefix and identifier.
      uint32_t following = static_cast<uint32_t>(bytes.size() - 4);
      std::memcpy(bytes.data(), &following, 4);
      std::memcpy(&bytes[8], "CPAK", 4);
    }
    EXPECT_NE(loadError(bytes), "") << "garbage " << i << " loaded";
  }
}

TEST(Artifact, DamagedModelsWithValidChecksumsNeverCrash) {
  // Mutates the Model and re-wraps it with a correct checksum, so the
  // damage reaches the nested Verifier and the semantic checks. Whatever
  // loads must be readable through every accessor.
  std::vector<uint8_t> model = buildModel(Spec());
  std::mt19937 random(42);
  int rejected = 0, loaded = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> damaged = model;
    for (int flips = 1 + random() % 3; flips > 0; --flips)
      damaged[random() % damaged.size()] = static_cast<uint8_t>(random());
    auto artifact = loadArtifactFromBytes(wrapModel(damaged), "fuzz");
    if (!artifact.ok()) {
      ++rejected;
      continue;
    }
    ++loaded;
    std::string json = artifactJson(**artifact);
    EXPECT_EQ(json.back(), '\n');
    for (const cellpack::CellType *cell : (*artifact)->cells()) {
      (void)selectCode(**artifact, cell->name()->str(), 90);
      for (uint32_t index = 0; index < 3; ++index)
        (void)(*artifact)->weight(*cell, index);
      (void)(*artifact)->smallestPlanAtLeast(*cell, 5);
    }
  }
  EXPECT_GT(rejected, 100);
  EXPECT_GT(loaded, 0); // some bytes (weights, names) are free to change
}

} // namespace
