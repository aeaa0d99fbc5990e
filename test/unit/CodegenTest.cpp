//===- CodegenTest.cpp - Every example's kernels through NVRTC -----------===//
//
// Compiles every example model (hidden 64) through the whole pipeline,
// generates the CUDA source of each cell and compiles it with NVRTC for
// sm_80 and sm_90 (CUBIN) and compute_80 (PTX); checks that every batch size
// of the manifest has its kernels and that ptxas accepts the PTX. No GPU is
// needed.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelEmitter.h"
#include "compiler/codegen/NvrtcCompiler.h"
#include "compiler/import/OnnxImporter.h"
#include "compiler/manifest/ManifestBinding.h"
#include "compiler/pipeline/Pipeline.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>

using namespace mlir;
using namespace cellc;

namespace {

class CodegenTest : public ::testing::TestWithParam<const char *> {};

TEST_P(CodegenTest, EveryBatchSizeCompilesForSm80AndSm90) {
  std::string model = GetParam();
  MLIRContext context;
  loadImporterDialects(context);
  std::string firstError;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (firstError.empty())
      firstError = diag.str();
    return success();
  });
  FailureOr<Manifest> manifest = readManifest(
      std::string(CELL_SOURCE_DIR) + "/examples/" + model + "/model.yaml",
      context);
  ASSERT_TRUE(succeeded(manifest)) << firstError;
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  for (const CellSpec &cell : manifest->cells) {
    onnx_model::Model onnx;
    std::string error;
    ASSERT_TRUE(onnx_model::readModel(std::string(CELL_EXAMPLES_BUILD_DIR) +
                                          "/" + model + "/" + cell.onnxPath,
                                      onnx, error))
        << error;
    ASSERT_TRUE(succeeded(importOnnxCell(onnx, cell.name, *module)))
        << firstError;
  }
  ASSERT_TRUE(succeeded(bindManifest(*manifest, *module))) << firstError;
  ASSERT_TRUE(succeeded(runPipeline(*module, Stage::PlanMemory))) << firstError;

  for (const CellSpec &cell : manifest->cells) {
    FailureOr<codegen::CudaProgram> program =
        codegen::emitCuda(*module, cell.name);
    ASSERT_TRUE(succeeded(program)) << firstError;
    std::set<int64_t> batches;
    codegen::CompileOptions options;
    for (const codegen::KernelInfo &kernel : program->kernels) {
      batches.insert(kernel.batch);
      options.kernelNames.push_back(kernel.name);
      EXPECT_GT(kernel.gridSize(kernel.batch), 0) << kernel.name;
    }
    EXPECT_EQ(batches,
              std::set<int64_t>(cell.batchSizes.begin(), cell.batchSizes.end()))
        << "cell " << cell.name << ": a batch size has no kernels";

    codegen::CompiledProgram compiled;
    std::string error;
    ASSERT_TRUE(codegen::compileCuda(program->source, cell.name + ".cu",
                                     options, compiled, error))
        << error << "\n"
        << program->source;
    ASSERT_EQ(compiled.cubins.size(), 2u);
    EXPECT_EQ(compiled.cubins[0].arch, "sm_80");
    EXPECT_EQ(compiled.cubins[1].arch, "sm_90");
    for (const codegen::CompiledArch &arch : compiled.cubins)
      EXPECT_EQ(std::string(arch.cubin.data(), 4), "\x7f"
                                                   "ELF");
    ASSERT_EQ(compiled.loweredNames.size(), program->kernels.size());
    for (const codegen::KernelInfo &kernel : program->kernels)
      EXPECT_NE(compiled.ptx.find(".entry " + kernel.name + "("),
                std::string::npos)
          << kernel.name << " is missing from the PTX";
    std::printf("%s/%s: %zu kernels, NVRTC %.2f s for sm_80, sm_90, "
                "compute_80\n",
                model.c_str(), cell.name.c_str(), program->kernels.size(),
                compiled.seconds);

    std::string ptxPath =
        ::testing::TempDir() + model + "_" + cell.name + ".ptx";
    std::ofstream(ptxPath) << compiled.ptx;
    std::string command = std::string(CELL_PTXAS_PATH) + " -arch=sm_80 " +
                          ptxPath + " -o " + ptxPath + ".cubin";
    EXPECT_EQ(std::system(command.c_str()), 0) << "ptxas rejected the PTX";
    std::remove(ptxPath.c_str());
    std::remove((ptxPath + ".cubin").c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, CodegenTest,
                         ::testing::Values("lstm", "gru", "seq2seq", "treelstm",
                                           "stacked", "lnlstm", "attention",
                                           "bahdanau", "mingru", "mamba",
                                           "rwkv", "slstm"));

} // namespace
