//===- cellc.cpp - The cell compiler's command line -----------------------===//
//
// cellc MODEL.yaml|CELL.onnx [-o OUT] [--emit=mlir]: reads the manifest (or a
// single ONNX cell), imports every cell into the `cell` dialect, checks the
// roles, and prints or writes the result. Errors are printed as
// "file:line:col: error: ..." and make the exit code 1.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelEmitter.h"
#include "compiler/import/OnnxImporter.h"
#include "compiler/manifest/ManifestBinding.h"
#include "compiler/pipeline/Pipeline.h"
#include "tools/cellc/BuildArtifact.h"
#include "tools/cellc/ModulePrinter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <chrono>

using namespace mlir;
using namespace cellc;
namespace cl = llvm::cl;

namespace {
enum class EmitKind { Mlir, Cuda, CellPack };

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
             "the recurrent weights (off by default: slower on the CPU "
             "today, see docs/compiler.md)"),
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

/// Prints diagnostics as "file:line:col: error: message" (the position left
/// out when unknown), with their notes.
static void printDiagnostic(Diagnostic &diag) {
  std::string where;
  Location loc = diag.getLocation();
  loc->walk([&](Location inner) {
    if (auto file = inner.dyn_cast<FileLineColLoc>()) {
      where = file.getFilename().str();
      if (file.getLine() > 0)
        where += ":" + std::to_string(file.getLine()) + ":" +
                 std::to_string(file.getColumn());
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  llvm::raw_ostream &os = llvm::errs();
  if (!where.empty())
    os << where << ": ";
  switch (diag.getSeverity()) {
  case DiagnosticSeverity::Error:
    llvm::WithColor(os, llvm::HighlightColor::Error) << "error: ";
    break;
  case DiagnosticSeverity::Warning:
    llvm::WithColor(os, llvm::HighlightColor::Warning) << "warning: ";
    break;
  default:
    llvm::WithColor(os, llvm::HighlightColor::Note) << "note: ";
  }
  // An error at an op made from an ONNX node (after import: fusion, code
  // generation) names the node as the importer's errors do.
  std::string message = diag.str();
  // (Node locations carry "Op, opset K"; an initializer's does not.)
  if (auto node = loc.dyn_cast<NameLoc>();
      node && !StringRef(message).startswith("node '"))
    if (auto fused = node.getChildLoc().dyn_cast<FusedLoc>())
      if (auto what = fused.getMetadata().dyn_cast_or_null<StringAttr>())
        message = "node '" + node.getName().str() + "' (" + what.str() +
                  "): " + message;
  os << message << "\n";
  for (Diagnostic &note : diag.getNotes())
    printDiagnostic(note);
}

static bool isOnnxPath(StringRef path) {
  return path.endswith(".onnx") || path.endswith(".onnxtxt");
}

/// A cell name from a file name: its stem with non-identifier characters
/// replaced by '_'.
static std::string cellNameFromPath(StringRef path) {
  std::string name;
  for (char c : llvm::sys::path::stem(path))
    name.push_back(llvm::isAlnum(c) || c == '_' ? c : '_');
  if (name.empty() || llvm::isDigit(name.front()))
    name.insert(name.begin(), '_');
  return name;
}

static LogicalResult importCellFile(StringRef path, StringRef name,
                                    LocationAttr referencedAt,
                                    ModuleOp module) {
  onnx_model::Model model;
  std::string error;
  if (!onnx_model::readModel(path.str(), model, error)) {
    // The reader's messages start with the path; drop it when the location
    // names that file already (not when it is the manifest line).
    StringRef message(error);
    auto file = referencedAt.dyn_cast<FileLineColLoc>();
    if (file && file.getFilename() == path)
      message.consume_front((path + ": ").str());
    return emitError(referencedAt) << message;
  }
  return importOnnxCell(model, name, module);
}

static LogicalResult importSingleCell(ModuleOp module) {
  MLIRContext *context = module.getContext();
  std::string name =
      cellName.empty() ? cellNameFromPath(inputPath) : cellName.getValue();
  if (failed(importCellFile(inputPath, name,
                            FileLineColLoc::get(context, inputPath, 0, 0),
                            module)))
    return failure();
  SmallVector<int64_t> sizes(batchSizes.begin(), batchSizes.end());
  if (sizes.empty())
    sizes = {1, 2, 4, 8, 16, 32, 64};
  if (!llvm::is_sorted(sizes) || sizes.front() < 1 ||
      std::adjacent_find(sizes.begin(), sizes.end()) != sizes.end())
    return emitError(UnknownLoc::get(context))
           << "--batch-sizes must be positive and strictly increasing";
  setCellSchedule(module.lookupSymbol<mlir::cell::CellOp>(name), sizes, 0);
  return success();
}

/// Every input file read, in order (for --depfile).
static std::vector<std::string> filesRead;

/// `path` as a Make prerequisite or target: spaces, '#' and '$' escaped
/// (backslashes and colons in paths are not supported).
static std::string makeEscaped(StringRef path) {
  std::string escaped;
  for (char c : path) {
    if (c == ' ' || c == '#')
      escaped += '\\';
    else if (c == '$')
      escaped += '$';
    escaped += c;
  }
  return escaped;
}

static LogicalResult writeDepfile(MLIRContext &context) {
  if (depfilePath.empty())
    return success();
  std::string error;
  auto file = mlir::openOutputFile(depfilePath, &error);
  if (!file) {
    // An output without its depfile would look up to date to a build
    // system that then never learns what it was made from: remove it.
    if (outputPath != "-")
      llvm::sys::fs::remove(outputPath);
    return emitError(UnknownLoc::get(&context))
           << "cannot write the depfile: " << error;
  }
  file->os() << makeEscaped(outputPath) << ":";
  for (const std::string &path : filesRead)
    file->os() << " \\\n  " << makeEscaped(path);
  file->os() << "\n";
  file->keep();
  return success();
}

static LogicalResult importManifest(ModuleOp module) {
  FailureOr<Manifest> manifest = readManifest(inputPath, *module.getContext());
  if (failed(manifest))
    return failure();
  std::string base = onnxDir.empty()
                         ? llvm::sys::path::parent_path(inputPath).str()
                         : onnxDir.getValue();
  for (const CellSpec &cell : manifest->cells) {
    SmallString<256> path(cell.onnxPath);
    if (llvm::sys::path::is_relative(path) && !base.empty()) {
      path = base;
      llvm::sys::path::append(path, cell.onnxPath);
    }
    if (failed(importCellFile(path, cell.name, cell.onnxLoc, module)))
      return failure();
    filesRead.push_back(path.str().str());
  }
  return bindManifest(*manifest, module);
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

  MLIRContext context;
#if defined(__SANITIZE_THREAD__)
  // Debian's libMLIR is not built with ThreadSanitizer, so the atomics that
  // order its parallel pass workers are invisible to it and it reports races
  // inside libMLIR (scripts/sanitizers.sh builds cellc this way only to
  // compile the runtime tests' artifacts): run the passes on one thread.
  context.disableMultithreading();
#endif
  loadImporterDialects(context);
  context.printOpOnDiagnostic(false);
  ScopedDiagnosticHandler handler(&context, [](Diagnostic &diag) {
    printDiagnostic(diag);
    return success();
  });

  std::optional<Stage> lastStage = parseStage(untilStage);
  if (!lastStage) {
    emitError(UnknownLoc::get(&context))
        << "unknown stage '" << untilStage
        << "' for --until; stages are: " << llvm::join(stageNames(), ", ");
    return 1;
  }
  BuildOptions buildOptions;
  buildOptions.precision = precision;
  buildOptions.producer = "cellc " CELLC_VERSION;
  if (!archs.empty()) {
    std::string problem = parseArchs(
        std::vector<std::string>(archs.begin(), archs.end()), buildOptions);
    if (!problem.empty()) {
      emitError(UnknownLoc::get(&context)) << "--arch: " << problem;
      return 1;
    }
  }
  if (emitKind == EmitKind::CellPack &&
      (outputPath == "-" || *lastStage != Stage::PlanMemory)) {
    emitError(UnknownLoc::get(&context))
        << "writing an artifact needs -o <file> and every stage (no --until)";
    return 1;
  }

  auto started = std::chrono::steady_clock::now();
  auto secondsSince = [](auto &since) {
    auto now = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(now - since).count();
    since = now;
    return seconds;
  };
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  filesRead.push_back(inputPath);
  LogicalResult imported = isOnnxPath(inputPath) ? importSingleCell(*module)
                                                 : importManifest(*module);
  if (failed(imported) || failed(verify(*module)))
    return 1;
  std::vector<std::pair<std::string, double>> elapsed;
  elapsed.emplace_back("import", secondsSince(started));
  PipelineOptions pipelineOptions;
  pipelineOptions.fuseStepMaxBatch = fuseStepMaxBatch;
  pipelineOptions.fuseStepMaxWeightBytes = fuseStepMaxWeightBytes;
  pipelineOptions.foldTokenProjections = foldTokenProjections;
  pipelineOptions.hoistInputProjections = hoistInputProjections;
  if (failed(runPipeline(*module, *lastStage, pipelineOptions)))
    return 1;
  elapsed.emplace_back("passes", secondsSince(started));

  if (emitKind == EmitKind::CellPack)
    return failed(buildArtifact(*module, buildOptions, outputPath, elapsed,
                                quiet ? llvm::nulls() : llvm::errs())) ||
           failed(writeDepfile(context));
  std::string error;
  auto output = mlir::openOutputFile(outputPath, &error);
  if (!output) {
    emitError(UnknownLoc::get(&context)) << error;
    return 1;
  }
  if (emitKind == EmitKind::Cuda) {
    if (*lastStage < Stage::SpecializeBatch) {
      emitError(UnknownLoc::get(&context))
          << "--emit=cuda needs the stages up to specialize-batch";
      return 1;
    }
    for (auto cell : module->getOps<mlir::cell::CellOp>()) {
      if (cell->hasAttr(mlir::cell::CellDialect::kBatchSizeAttr))
        continue;
      FailureOr<codegen::CudaProgram> program =
          codegen::emitCuda(*module, cell.getSymName());
      if (failed(program))
        return 1;
      output->os() << program->source << "\n";
    }
    output->keep();
    return failed(writeDepfile(context));
  }
  printModule(*module, output->os(), printWeights);
  output->keep();
  if (!quiet)
    printSummary(*module, llvm::errs());
  return failed(writeDepfile(context));
}
