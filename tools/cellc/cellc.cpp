//===- cellc.cpp - The cell compiler's command line -----------------------===//
//
// cellc MODEL.yaml|CELL.onnx [-o OUT] [--emit=mlir]: parses the command line
// and hands the compile to the driver (compiler/driver/CompileDriver.h), which
// reads the manifest (or a single ONNX cell), imports every cell into the
// `cell` dialect, checks the roles, and prints or writes the result. Errors
// are printed as "file:line:col: error: ..." and make the exit code 1.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/CompileDriver.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace cellc;
namespace cl = llvm::cl;

namespace {
cl::OptionCategory cellcCategory("cellc options");

cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                               cl::desc("<model.yaml | model.json | cell.onnx "
                                        "| cell.onnxtxt>"),
                               cl::cat(cellcCategory));
cl::opt<std::string> outputPath("o", cl::desc("Output file ('-' for stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(cellcCategory));
cl::opt<EmitKind> emitKind(
    "emit", cl::desc("What to produce"), cl::init(EmitKind::CellPack),
    cl::values(clEnumValN(EmitKind::Mlir, "mlir",
                          "the module in the `cell` dialect (after --until)"),
               clEnumValN(EmitKind::Cuda, "cuda",
                          "the generated CUDA C++ of every cell's fused "
                          "kernels"),
               clEnumValN(EmitKind::CellPack, "cellpack",
                          "the deployable artifact (default; needs -o)")),
    cl::cat(cellcCategory));
cl::opt<std::string>
    onnxDir("onnx-dir",
            cl::desc("Resolve the manifest's relative ONNX paths against this "
                     "directory instead of the manifest's own"),
            cl::value_desc("dir"), cl::cat(cellcCategory));
cl::opt<bool> printWeights(
    "print-weights",
    cl::desc("With --emit=mlir, also print the weight blobs (hex) so the "
             "output can be parsed back with its data"),
    cl::init(false), cl::cat(cellcCategory));
cl::list<int64_t> batchSizes(
    "batch-sizes",
    cl::desc("Batch sizes for a single ONNX cell (a manifest gives its own)"),
    cl::CommaSeparated, cl::value_desc("n,n,..."), cl::cat(cellcCategory));
cl::opt<std::string>
    cellName("cell-name",
             cl::desc("Name of a single ONNX cell (default: the file's stem)"),
             cl::value_desc("name"), cl::cat(cellcCategory));
cl::opt<std::string> untilStage(
    "until",
    cl::desc("Run the stages up to and including this one: import, "
             "prepare-weights, fold-token-projections, "
             "hoist-input-projections, merge-gemms, "
             "fuse-elementwise, specialize-batch, fuse-step, plan-memory "
             "(default: the last)"),
    cl::value_desc("stage"), cl::init("plan-memory"), cl::cat(cellcCategory));
cl::list<std::string>
    archs("arch",
          cl::desc("GPU targets: sm_XX for CUBIN, one compute_XX for PTX "
                   "(default: sm_80,sm_90,compute_80)"),
          cl::CommaSeparated, cl::value_desc("target,..."),
          cl::cat(cellcCategory));
cl::opt<Precision> precision(
    "precision", cl::desc("Arithmetic of the GEMMs"), cl::init(Precision::FP32),
    cl::values(clEnumValN(Precision::FP32, "fp32", "IEEE fp32 (default)"),
               clEnumValN(Precision::TF32, "tf32",
                          "fp32 data, TF32 tensor-core products"),
               clEnumValN(Precision::BF16, "bf16",
                          "fp32 data, bf16 products (tensor cores; AVX512_BF16 "
                          "or its emulation on the CPU)"),
               clEnumValN(Precision::FP16, "fp16",
                          "fp32 data, fp16 tensor-core products")),
    cl::cat(cellcCategory));
cl::opt<int64_t> fuseStepMaxBatch(
    "fuse-step-max-batch",
    cl::desc("Batch sizes up to this run a whole step as one kernel, GEMMs "
             "included (0: never)"),
    cl::init(cellc::PipelineOptions().fuseStepMaxBatch),
    cl::cat(cellcCategory));
cl::opt<int64_t> fuseStepMaxWeightBytes(
    "fuse-step-max-weight-bytes",
    cl::desc("Steps whose GEMM weights are larger than this keep their GEMMs "
             "apart, on the whole device, whatever the batch size"),
    cl::init(cellc::PipelineOptions().fuseStepMaxWeightBytes),
    cl::cat(cellcCategory));
cl::opt<bool> gemmEpilogues(
    "gemm-epilogues",
    cl::desc("At batch sizes up to 16, also compile a kernel that runs a "
             "GEMM and the element-wise step after it in one launch where "
             "the step reads the GEMM's result column-aligned (fp32 and "
             "tf32; the CUDA backend times it against the two launches; "
             "=false: none, less NVRTC time)"),
    cl::init(true), cl::cat(cellcCategory));
cl::opt<int64_t> gemmEpilogueMinWeightBytes(
    "gemm-epilogue-min-weight-bytes",
    cl::desc("Only for GEMMs whose weights take at least this many bytes "
             "(smaller ones save a launch but cost as much NVRTC time; 0: "
             "every GEMM)"),
    cl::init(512 * 1024), cl::cat(cellcCategory));
cl::opt<bool> foldTokenProjections(
    "fold-token-projections",
    cl::desc("Fold the projection of an embedding lookup into one lookup "
             "table computed at compile time, so the step multiplies only "
             "the state by the recurrent weights (=false: keep the GEMM)"),
    cl::init(cellc::PipelineOptions().foldTokenProjections),
    cl::cat(cellcCategory));
cl::opt<bool> hoistInputProjections(
    "hoist-input-projections",
    cl::desc("In a chain, move the projection of a feature input into a "
             "cell of its own that the runtime runs over all of a request's "
             "steps at admission, so the step multiplies only the state by "
             "the recurrent weights (on by default; "
             "--hoist-input-projections=false keeps the projection in the "
             "step, see docs/compiler.md)"),
    cl::init(cellc::PipelineOptions().hoistInputProjections),
    cl::cat(cellcCategory));
cl::opt<std::string> depfilePath(
    "depfile",
    cl::desc("Also write the files the output was made from (the manifest "
             "and every ONNX file it names) as a Make rule, for build "
             "systems that re-run cellc when one changes"),
    cl::value_desc("file"), cl::cat(cellcCategory));
cl::opt<bool> quiet("quiet", cl::desc("Do not print the summary on stderr"),
                    cl::init(false), cl::cat(cellcCategory));
} // namespace

/// The driver's options from the parsed command line.
static DriverOptions driverOptions() {
  DriverOptions options;
  options.inputPath = inputPath;
  options.outputPath = outputPath;
  options.emit = emitKind;
  options.onnxDir = onnxDir;
  options.printWeights = printWeights;
  options.batchSizes.assign(batchSizes.begin(), batchSizes.end());
  options.cellName = cellName;
  options.untilStage = untilStage;
  options.archs.assign(archs.begin(), archs.end());
  options.precision = precision;
  options.gemmEpilogues = gemmEpilogues;
  options.gemmEpilogueMinWeightBytes = gemmEpilogueMinWeightBytes;
  options.pipeline.fuseStepMaxBatch = fuseStepMaxBatch;
  options.pipeline.fuseStepMaxWeightBytes = fuseStepMaxWeightBytes;
  options.pipeline.foldTokenProjections = foldTokenProjections;
  options.pipeline.hoistInputProjections = hoistInputProjections;
  options.depfilePath = depfilePath;
  options.quiet = quiet;
  options.producer = "cellc " CELLC_VERSION;
  return options;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(cellcCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "cellc " CELLC_VERSION " (LLVM/MLIR " << LLVM_VERSION_MAJOR << ")\n";
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "cellc: compiles RNN cells exported to ONNX into a cellular-batching "
      "artifact\n\n"
      "  cellc model.yaml --emit=mlir        print the compiled cells (the "
      "module after the last stage)\n"
      "  cellc model.yaml --emit=mlir --until=import        print the imported "
      "cells\n"
      "  cellc cell.onnx --emit=mlir         import one ONNX cell (roles: all "
      "inputs/outputs)\n"
      "  cellc model.yaml -o model.cellpack  compile and write the artifact\n"
      "  cellc model.yaml --emit=cuda        print the generated CUDA\n\n"
      "The manifest format is described in docs/manifest.md.\n");

  return failed(runCompile(driverOptions())) ? 1 : 0;
}
