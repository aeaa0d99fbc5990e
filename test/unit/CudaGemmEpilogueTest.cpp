//===- CudaGemmEpilogueTest.cpp - A GEMM and the step after it on a GPU ---===//
//
// On a CUDA device (skipped with the reason otherwise): the CUDA backend on
// the LSTM, the GRU and the LN-LSTM compiled with every GEMM apart from its
// kernels
// (model-unfused.cellpack), whose plans of up to 16 rows list a
// GEMM-and-epilogue kernel. Made to (CELL_CUDA_GEMM=skinny-gather,
// CELL_CUDA_EPILOGUE=fused), each such plan runs the step in its GEMM's
// kernel: the GEMM's description says so (BackendExamplesTest's
// "_epilogue_fused" cases check those results against PyTorch under the
// same variables). Left to the clock, each was timed against the two
// launches (both times given) and none failed; with
// CELL_CUDA_EPILOGUE=separate, none runs.
//
//===----------------------------------------------------------------------===//
#include "cellrun/Device.h"

#include "backend/cuda/CudaBackend.h"
#include "backend/cuda/CudaTaskRunner.h"

#include "CudaProbe.h"
#include "ScopedEnvironment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace cellrun;
using namespace cellrun::cuda;
using cellc::testing::ScopedEnvironment;

namespace {

std::string examplesDir() {
  const char *override = std::getenv("CELL_EXAMPLES_BUILD_DIR");
  return override ? override : CELL_EXAMPLES_BUILD_DIR;
}

/// For each plan of the model's first cell that lists a GEMM-and-epilogue
/// kernel: its batch size, the kernel, and its GEMMs' descriptions, from a
/// backend created under `epilogue` (CELL_CUDA_EPILOGUE; null: the clock).
struct PlanChoice {
  uint32_t batch;
  std::string kernel;
  std::string descriptions;
};
std::vector<PlanChoice> choices(const std::string &model,
                                const char *epilogue) {
  auto loaded =
      loadArtifact(examplesDir() + "/" + model + "/model-unfused.cellpack");
  EXPECT_TRUE(loaded.ok()) << loaded.status().toString();
  if (!loaded.ok())
    return {};
  std::shared_ptr<const LoadedArtifact> artifact = std::move(loaded).value();
  ScopedEnvironment gemm("CELL_CUDA_GEMM", "skinny-gather");
  ScopedEnvironment fused("CELL_CUDA_EPILOGUE", epilogue);
  auto backend = CudaBackend::create(artifact, CudaBackendOptions{});
  EXPECT_TRUE(backend.ok()) << backend.status().toString();
  if (!backend.ok())
    return {};
  const cellpack::CellType &cell = *artifact->cells()[0];
  std::vector<PlanChoice> found;
  for (const cellpack::BatchPlan *plan : *cell.plans()) {
    std::string kernel;
    for (const cellpack::TaskStep *step : *plan->steps())
      if (const cellpack::KernelStep *k = step->step_as_KernelStep())
        if (k->gemm_epilogue())
          kernel = k->gemm_epilogue()->kernel()->str();
    if (kernel.empty())
      continue;
    auto runner = (*backend)->runner(cell, *plan);
    EXPECT_TRUE(runner.ok()) << runner.status().toString();
    if (!runner.ok())
      continue;
    std::string descriptions;
    for (const std::string &line : runner.value()->gemmDescriptions())
      descriptions += line + "\n";
    found.push_back({plan->batch_size(), kernel, descriptions});
  }
  return found;
}

class CudaGemmEpilogueTest : public ::testing::TestWithParam<const char *> {};

TEST_P(CudaGemmEpilogueTest, TheBackendRunsItWhereItIsAskedTo) {
  auto probe = probeCudaDevice();
  CELL_SKIP_WITHOUT_CUDA(probe, "the GEMM-and-epilogue kernels");
  std::string model = GetParam();
  std::vector<PlanChoice> forced = choices(model, "fused");
  // Plans of 1, 2, 4, 8 and 16 rows.
  ASSERT_EQ(forced.size(), 5u) << model;
  for (const PlanChoice &choice : forced)
    EXPECT_NE(choice.descriptions.find(", with the step after it in " +
                                       choice.kernel +
                                       " (CELL_CUDA_EPILOGUE=fused)"),
              std::string::npos)
        << "batch " << choice.batch << ":\n"
        << choice.descriptions;
  for (const PlanChoice &choice : choices(model, nullptr)) {
    // "with" or "not with" the step, both times given.
    EXPECT_NE(choice.descriptions.find("the step after it in " + choice.kernel),
              std::string::npos)
        << "batch " << choice.batch << ":\n"
        << choice.descriptions;
    EXPECT_NE(choice.descriptions.find("us for the two apart"),
              std::string::npos)
        << "batch " << choice.batch << ":\n"
        << choice.descriptions;
    EXPECT_EQ(choice.descriptions.find("failed"), std::string::npos)
        << "batch " << choice.batch << ":\n"
        << choice.descriptions;
  }
  for (const PlanChoice &choice : choices(model, "separate"))
    EXPECT_NE(choice.descriptions.find(
                  ", not with the step after it (CELL_CUDA_EPILOGUE=separate)"),
              std::string::npos)
        << "batch " << choice.batch << ":\n"
        << choice.descriptions;
}

INSTANTIATE_TEST_SUITE_P(Examples, CudaGemmEpilogueTest,
                         ::testing::Values("lstm", "gru", "lnlstm"));

} // namespace
