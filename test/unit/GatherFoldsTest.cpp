//===- GatherFoldsTest.cpp - Gathers a GEMM could read in place -*- C++ -*-===//
//
// gatherFolds (artifact/GatherFolds.h) on the examples' artifacts: the LSTM
// compiled with no step fused has, at every batch size, its prologue (the
// state h gathered from its pool) before the recurrent GEMM; the default
// LSTM has it only where steps are not fused into one kernel (above 16
// rows); of the GRU's two gathers only the one whose bytes no other step
// reads; the attention decoder (its GEMMs' A computed, not gathered) none.
//
//===----------------------------------------------------------------------===//
#include "artifact/GatherFolds.h"
#include "artifact/Artifact.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

using namespace cellrun;

namespace {

std::string examplesDir() {
  const char *override = std::getenv("CELL_EXAMPLES_BUILD_DIR");
  return override ? override : CELL_EXAMPLES_BUILD_DIR;
}

/// The index of `name` among the cell's inputs, or -1.
int inputIndex(const cellpack::CellType &cell, const std::string &name) {
  for (unsigned i = 0; i < cell.inputs()->size(); ++i)
    if (cell.inputs()->Get(i)->name()->str() == name)
      return static_cast<int>(i);
  return -1;
}

/// The first cell of the example artifact at `path`, loaded into `artifact`.
const cellpack::CellType *
firstCell(const std::string &path,
          std::shared_ptr<const LoadedArtifact> &artifact) {
  auto loaded = loadArtifact(examplesDir() + "/" + path);
  EXPECT_TRUE(loaded.ok()) << loaded.status().toString();
  if (!loaded.ok())
    return nullptr;
  artifact = std::move(loaded).value();
  return artifact->cells().front();
}

TEST(GatherFoldsTest, TheUnfusedLstmGathersItsStateBeforeEveryGemm) {
  std::shared_ptr<const LoadedArtifact> artifact;
  const cellpack::CellType *cell =
      firstCell("lstm/model-unfused.cellpack", artifact);
  ASSERT_NE(cell, nullptr);
  int h = inputIndex(*cell, "h");
  ASSERT_GE(h, 0);
  ASSERT_EQ(cell->plans()->size(), 7u);
  for (const cellpack::BatchPlan *plan : *cell->plans()) {
    SCOPED_TRACE("batch " + std::to_string(plan->batch_size()));
    std::vector<GatherFold> folds = gatherFolds(*plan);
    ASSERT_EQ(folds.size(), 1u);
    EXPECT_EQ(folds[0].gatherStep, 0u);
    EXPECT_EQ(folds[0].gemmStep, 1u);
    EXPECT_EQ(folds[0].cellInput, static_cast<uint32_t>(h));
    EXPECT_NE(plan->steps()->Get(1)->step_as_GemmStep(), nullptr);
  }
}

TEST(GatherFoldsTest, AStepFusedIntoOneKernelHasNoGatherToLeaveOut) {
  std::shared_ptr<const LoadedArtifact> artifact;
  const cellpack::CellType *cell = firstCell("lstm/model.cellpack", artifact);
  ASSERT_NE(cell, nullptr);
  for (const cellpack::BatchPlan *plan : *cell->plans()) {
    SCOPED_TRACE("batch " + std::to_string(plan->batch_size()));
    bool hasGemm = false;
    for (const cellpack::TaskStep *step : *plan->steps())
      hasGemm = hasGemm || step->step_as_GemmStep();
    // Up to 16 rows (--fuse-step-max-batch) the step is one kernel.
    EXPECT_EQ(hasGemm, plan->batch_size() > 16);
    EXPECT_EQ(gatherFolds(*plan).size(), hasGemm ? 1u : 0u);
  }
}

TEST(GatherFoldsTest, AGatheredCopyWhoseBytesALaterStepReadsStays) {
  // The GRU in its step form (its input projection not hoisted) gathers x
  // (step 0) and h (step 2) for its two GEMMs; the h GEMM's result reuses
  // x's copy's workspace bytes and the gates read it, so only the h gather
  // may go (a byte another step reads is never left unwritten, whatever
  // value it holds then).
  std::shared_ptr<const LoadedArtifact> artifact;
  const cellpack::CellType *cell =
      firstCell("gru/model-step.cellpack", artifact);
  ASSERT_NE(cell, nullptr);
  int h = inputIndex(*cell, "h");
  ASSERT_GE(h, 0);
  for (const cellpack::BatchPlan *plan : *cell->plans()) {
    SCOPED_TRACE("batch " + std::to_string(plan->batch_size()));
    const cellpack::KernelStep *xGather =
        plan->steps()->Get(0)->step_as_KernelStep();
    ASSERT_NE(xGather, nullptr);
    ASSERT_EQ(xGather->region()->ops()->size(), 1u);
    EXPECT_EQ(xGather->region()->ops()->Get(0)->opcode(),
              cellpack::OpCode::Identity);
    std::vector<GatherFold> folds = gatherFolds(*plan);
    ASSERT_EQ(folds.size(), 1u);
    EXPECT_EQ(folds[0].gatherStep, 2u);
    EXPECT_EQ(folds[0].gemmStep, 3u);
    EXPECT_EQ(folds[0].cellInput, static_cast<uint32_t>(h));
  }
}

TEST(GatherFoldsTest, ADecoderWithoutAPureGatherHasNone) {
  std::shared_ptr<const LoadedArtifact> artifact;
  auto loaded = loadArtifact(examplesDir() + "/attention/model.cellpack");
  ASSERT_TRUE(loaded.ok()) << loaded.status().toString();
  artifact = std::move(loaded).value();
  int decoders = 0;
  for (const cellpack::CellType *cell : artifact->cells()) {
    if (cell->name()->str() != "decoder")
      continue;
    ++decoders;
    for (const cellpack::BatchPlan *plan : *cell->plans())
      EXPECT_TRUE(gatherFolds(*plan).empty()) << "batch " << plan->batch_size();
  }
  EXPECT_EQ(decoders, 1);
}

} // namespace
