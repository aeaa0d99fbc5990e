//===- CudaBackendTest.cpp - The CUDA backend as far as no GPU is needed --===//
//
// Without a GPU: the CUDA executor must refuse with "no CUDA device", and
// everything the backend derives from the artifact before touching the
// device is checked for every example: the launch geometry of every kernel
// step (grid and block cover the rows exactly as the kernels expect), the
// parameter lists it builds launches from, the GEMM operands it hands to
// cuBLASLt, and the code it would load for sm_80, sm_90 and a newer GPU.
//
//===----------------------------------------------------------------------===//
#include "KernelGrid.h"
#include "artifact/CodeSelection.h"
#include "exec/Executor.h"

#include "backend/cuda/CudaTaskRunner.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include <set>

using namespace cellrun;

namespace {
/// The examples' build directory: $CELL_EXAMPLES_BUILD_DIR when set (the
/// GPU machine runs these binaries from another path), else the build's.
std::string examplesDir() {
  const char *override = std::getenv("CELL_EXAMPLES_BUILD_DIR");
  return override ? override : CELL_EXAMPLES_BUILD_DIR;
}
} // namespace

namespace {

std::shared_ptr<const LoadedArtifact> loadExample(const std::string &model) {
  auto loaded = loadArtifact(examplesDir() + "/" + model + "/model.cellpack");
  EXPECT_TRUE(loaded.ok()) << loaded.status().toString();
  if (!loaded.ok())
    return nullptr;
  return std::move(loaded).value();
}

TEST(CudaBackendTest, NoDeviceIsReportedCleanly) {
  auto probe = probeCudaDevice();
  if (probe.ok())
    GTEST_SKIP() << "a CUDA device is present: " << probe->describe();
  auto artifact = loadExample("lstm");
  ASSERT_TRUE(artifact);
  ExecutorOptions options;
  options.device = DeviceKind::Cuda;
  auto executor = Executor::create(artifact, 16, options);
  ASSERT_FALSE(executor.ok());
  EXPECT_EQ(executor.status().code(), StatusCode::Unavailable);
  EXPECT_EQ(executor.status().message().rfind("no CUDA device: ", 0), 0u)
      << executor.status().message();
}

class CudaPlanTest : public ::testing::TestWithParam<const char *> {};

TEST_P(CudaPlanTest, LaunchGeometryAndParametersFitEveryKernel) {
  auto artifact = loadExample(GetParam());
  ASSERT_TRUE(artifact);
  int kernels = 0;
  for (const cellpack::CellType *cell : artifact->cells()) {
    std::set<std::string> defined;
    for (const cellpack::CellCode *code : *artifact->model().code())
      if (code->cell()->str() == cell->name()->str() && code->kernel_names())
        for (const flatbuffers::String *name : *code->kernel_names())
          defined.insert(name->str());
    for (const cellpack::BatchPlan *plan : *cell->plans())
      for (const cellpack::TaskStep *taskStep : *plan->steps()) {
        const cellpack::KernelStep *step = taskStep->step_as_KernelStep();
        if (!step)
          continue;
        ++kernels;
        std::string where = cell->name()->str() + " batch " +
                            std::to_string(plan->batch_size()) + " kernel " +
                            step->name()->str();
        EXPECT_TRUE(defined.count(step->name()->str())) << where;
        uint32_t block = step->block_size();
        EXPECT_TRUE(block >= 32 && block <= 1024 && block % 32 == 0) << where;
        for (int64_t rows : {int64_t(1), int64_t(plan->batch_size())}) {
          int64_t grid = cellpack::kernelGridSize(*step, rows);
          if (step->shape() == cellpack::KernelShape::RowReduction) {
            EXPECT_GE(step->blocks_per_row(), 1u) << where;
            EXPECT_EQ(grid, rows * step->blocks_per_row()) << where;
          } else {
            int64_t threads = rows * step->row_width();
            EXPECT_GE(grid * block, threads) << where;
            EXPECT_LT((grid - 1) * block, threads) << where;
          }
          EXPECT_LE(grid, int64_t(1) << 31) << where;
        }
        int rowCounts = 0;
        for (const cellpack::KernelParam *param : *step->params()) {
          bool isInput = param->kind() == cellpack::ParamKind::Input ||
                         param->kind() == cellpack::ParamKind::InputRows;
          if (param->kind() == cellpack::ParamKind::RowCount) {
            ++rowCounts;
            continue;
          }
          const auto *refs = isInput ? step->inputs() : step->outputs();
          ASSERT_LT(param->index(), refs->size()) << where;
          const cellpack::ValueRef *ref = refs->Get(param->index());
          if (param->kind() == cellpack::ParamKind::InputRows ||
              param->kind() == cellpack::ParamKind::OutputRows) {
            EXPECT_TRUE(ref->kind() == cellpack::ValueKind::CellInput ||
                        ref->kind() == cellpack::ValueKind::CellOutput)
                << where << ": row indices of a tensor that is no pool";
            auto access = isInput ? step->input_access()->Get(param->index())
                                  : step->output_access()->Get(param->index());
            EXPECT_EQ(access, isInput ? cellpack::Access::Gather
                                      : cellpack::Access::Scatter)
                << where;
          }
        }
        EXPECT_EQ(rowCounts, 1) << where;
      }
  }
  EXPECT_GT(kernels, 0);
}

TEST_P(CudaPlanTest, GemmOperandsAreDenseFp32) {
  auto artifact = loadExample(GetParam());
  ASSERT_TRUE(artifact);
  for (const cellpack::CellType *cell : artifact->cells())
    for (const cellpack::BatchPlan *plan : *cell->plans())
      for (const cellpack::TaskStep *taskStep : *plan->steps()) {
        const cellpack::GemmStep *gemm = taskStep->step_as_GemmStep();
        if (!gemm)
          continue;
        for (const cellpack::ValueRef *ref :
             {gemm->a(), gemm->b(), gemm->c(), gemm->d()}) {
          if (!ref)
            continue;
          EXPECT_TRUE(ref->kind() == cellpack::ValueKind::Workspace ||
                      ref->kind() == cellpack::ValueKind::Weight);
          EXPECT_EQ(ref->dtype(), cellpack::DType::F32);
        }
        EXPECT_EQ(gemm->m(), plan->batch_size());
        if (gemm->c()) {
          int64_t count = 1;
          for (int64_t dim : *gemm->c()->shape())
            count *= dim;
          EXPECT_TRUE(count == gemm->n() || count == gemm->m() * gemm->n());
        }
      }
}

TEST_P(CudaPlanTest, CodeForCommonGpus) {
  auto artifact = loadExample(GetParam());
  ASSERT_TRUE(artifact);
  for (const cellpack::CellType *cell : artifact->cells()) {
    std::string name = cell->name()->str();
    auto hopper = selectCode(*artifact, name, 90);
    ASSERT_TRUE(hopper.ok()) << hopper.status().toString();
    EXPECT_EQ(hopper->kind, CodeChoice::Kind::Cubin);
    EXPECT_EQ(hopper->arch, "sm_90");
    auto ampere = selectCode(*artifact, name, 80);
    ASSERT_TRUE(ampere.ok()) << ampere.status().toString();
    EXPECT_EQ(ampere->arch, "sm_80");
    auto newer = selectCode(*artifact, name, 100);
    ASSERT_TRUE(newer.ok()) << newer.status().toString();
    EXPECT_EQ(newer->kind, CodeChoice::Kind::Ptx);
    EXPECT_EQ(newer->data[newer->size], 0) << "PTX must end in a NUL";
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, CudaPlanTest,
                         ::testing::Values("lstm", "gru", "seq2seq", "treelstm",
                                           "stacked", "lnlstm", "attention",
                                           "bahdanau", "mingru", "mamba",
                                           "rwkv", "slstm"));

} // namespace
