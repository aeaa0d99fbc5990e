//===- CompileDriver.cpp - One whole run of the cell compiler ------------===//
//
// Reads the manifest (or a single ONNX cell), imports every cell into the
// `cell` dialect, runs the pipeline and prints or writes the result, then
// the depfile. Errors are printed as "file:line:col: error: ...".
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/CompileDriver.h"

#include "compiler/codegen/KernelEmitter.h"
#include "compiler/driver/BuildArtifact.h"
#include "compiler/driver/ModulePrinter.h"
#include "compiler/import/OnnxImporter.h"
#include "compiler/manifest/ManifestBinding.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <optional>

using namespace mlir;
using namespace cellc;

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

/// Whether `path` names a single ONNX cell rather than a manifest.
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

/// Reads the ONNX file at `path` and imports it into `module` as the cell
/// `name`; a file that cannot be read is reported at `referencedAt`.
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

namespace {
/// Seconds spent in each stage so far, as the artifact's summary reports
/// them.
using StageTimes = std::vector<std::pair<std::string, double>>;

/// One compile: its options, the context its diagnostics go through and the
/// files it has read.
class Compilation {
public:
  Compilation(const DriverOptions &options, MLIRContext &context)
      : options(options), context(context) {}

  /// Checks the options, then imports, runs the pipeline and emits.
  LogicalResult run();

private:
  /// The last stage `--until` names, or none (reported) if unknown.
  std::optional<Stage> parseLastStage();
  /// The artifact's options from the driver's, or none (reported) if the
  /// GPU targets are not valid.
  std::optional<BuildOptions> makeBuildOptions();
  /// Imports the input into `module` and runs the stages up to `lastStage`,
  /// recording the seconds of each in `elapsed`.
  LogicalResult importAndTransform(ModuleOp module, Stage lastStage,
                                   StageTimes &elapsed);
  /// Imports the single ONNX cell the input names, with its batch sizes.
  LogicalResult importSingleCell(ModuleOp module);
  /// Imports every cell the manifest names and binds them to it.
  LogicalResult importManifest(ModuleOp module);
  /// Writes what `options.emit` asks for, then the depfile.
  LogicalResult emitResult(ModuleOp module, Stage lastStage,
                           const BuildOptions &buildOptions,
                           const StageTimes &elapsed);
  /// Prints the generated CUDA of every cell that is not one batch size's
  /// specialization.
  LogicalResult printCuda(ModuleOp module, Stage lastStage,
                          const BuildOptions &buildOptions,
                          llvm::raw_ostream &os);
  /// Writes the files read as a Make rule for the output, if asked to.
  LogicalResult writeDepfile();

  /// Where errors that concern no file are reported.
  Location unknownLoc() { return UnknownLoc::get(&context); }

  const DriverOptions &options;
  MLIRContext &context;
  /// Every input file read, in order (for the depfile).
  std::vector<std::string> filesRead;
};
} // namespace

std::optional<Stage> Compilation::parseLastStage() {
  std::optional<Stage> lastStage = parseStage(options.untilStage);
  if (!lastStage)
    emitError(unknownLoc())
        << "unknown stage '" << options.untilStage
        << "' for --until; stages are: " << llvm::join(stageNames(), ", ");
  return lastStage;
}

std::optional<BuildOptions> Compilation::makeBuildOptions() {
  BuildOptions buildOptions;
  buildOptions.precision = options.precision;
  buildOptions.producer = options.producer;
  buildOptions.gemmEpilogues = options.gemmEpilogues;
  buildOptions.gemmEpilogueMinWeightBytes = options.gemmEpilogueMinWeightBytes;
  if (!options.archs.empty()) {
    std::string problem = parseArchs(options.archs, buildOptions);
    if (!problem.empty()) {
      emitError(unknownLoc()) << "--arch: " << problem;
      return std::nullopt;
    }
  }
  return buildOptions;
}

LogicalResult Compilation::run() {
  std::optional<Stage> lastStage = parseLastStage();
  if (!lastStage)
    return failure();
  std::optional<BuildOptions> buildOptions = makeBuildOptions();
  if (!buildOptions)
    return failure();
  if (options.emit == EmitKind::CellPack &&
      (options.outputPath == "-" || *lastStage != Stage::PlanMemory))
    return emitError(unknownLoc()) << "writing an artifact needs -o <file> "
                                      "and every stage (no --until)";
  OwningOpRef<ModuleOp> module = ModuleOp::create(unknownLoc());
  StageTimes elapsed;
  if (failed(importAndTransform(*module, *lastStage, elapsed)))
    return failure();
  return emitResult(*module, *lastStage, *buildOptions, elapsed);
}

LogicalResult Compilation::importAndTransform(ModuleOp module, Stage lastStage,
                                              StageTimes &elapsed) {
  auto started = std::chrono::steady_clock::now();
  auto secondsSince = [](auto &since) {
    auto now = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(now - since).count();
    since = now;
    return seconds;
  };
  filesRead.push_back(options.inputPath);
  LogicalResult imported = isOnnxPath(options.inputPath)
                               ? importSingleCell(module)
                               : importManifest(module);
  if (failed(imported) || failed(verify(module)))
    return failure();
  elapsed.emplace_back("import", secondsSince(started));
  if (failed(runPipeline(module, lastStage, options.pipeline)))
    return failure();
  elapsed.emplace_back("passes", secondsSince(started));
  return success();
}

LogicalResult Compilation::importSingleCell(ModuleOp module) {
  std::string name = options.cellName.empty()
                         ? cellNameFromPath(options.inputPath)
                         : options.cellName;
  if (failed(importCellFile(
          options.inputPath, name,
          FileLineColLoc::get(&context, options.inputPath, 0, 0), module)))
    return failure();
  SmallVector<int64_t> sizes(options.batchSizes.begin(),
                             options.batchSizes.end());
  if (sizes.empty())
    sizes = {1, 2, 4, 8, 16, 32, 64};
  if (!llvm::is_sorted(sizes) || sizes.front() < 1 ||
      std::adjacent_find(sizes.begin(), sizes.end()) != sizes.end())
    return emitError(unknownLoc())
           << "--batch-sizes must be positive and strictly increasing";
  setCellSchedule(module.lookupSymbol<mlir::cell::CellOp>(name), sizes, 0);
  return success();
}

LogicalResult Compilation::importManifest(ModuleOp module) {
  FailureOr<Manifest> manifest = readManifest(options.inputPath, context);
  if (failed(manifest))
    return failure();
  std::string base = options.onnxDir.empty()
                         ? llvm::sys::path::parent_path(options.inputPath).str()
                         : options.onnxDir;
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

LogicalResult Compilation::emitResult(ModuleOp module, Stage lastStage,
                                      const BuildOptions &buildOptions,
                                      const StageTimes &elapsed) {
  if (options.emit == EmitKind::CellPack) {
    if (failed(buildArtifact(module, buildOptions, options.outputPath, elapsed,
                             options.quiet ? llvm::nulls() : llvm::errs())))
      return failure();
    return writeDepfile();
  }
  std::string error;
  auto output = mlir::openOutputFile(options.outputPath, &error);
  if (!output)
    return emitError(unknownLoc()) << error;
  if (options.emit == EmitKind::Cuda) {
    if (failed(printCuda(module, lastStage, buildOptions, output->os())))
      return failure();
    output->keep();
    return writeDepfile();
  }
  printModule(module, output->os(), options.printWeights);
  output->keep();
  if (!options.quiet)
    printSummary(module, llvm::errs());
  return writeDepfile();
}

LogicalResult Compilation::printCuda(ModuleOp module, Stage lastStage,
                                     const BuildOptions &buildOptions,
                                     llvm::raw_ostream &os) {
  if (lastStage < Stage::SpecializeBatch)
    return emitError(unknownLoc())
           << "--emit=cuda needs the stages up to specialize-batch";
  for (auto cell : module.getOps<mlir::cell::CellOp>()) {
    if (cell->hasAttr(mlir::cell::CellDialect::kBatchSizeAttr))
      continue;
    FailureOr<codegen::CudaProgram> program = codegen::emitCuda(
        module, cell.getSymName(), buildOptions.writesGemmEpilogues(),
        buildOptions.gemmEpilogueMinWeightBytes);
    if (failed(program))
      return failure();
    os << program->source << "\n";
  }
  return success();
}

LogicalResult Compilation::writeDepfile() {
  if (options.depfilePath.empty())
    return success();
  std::string error;
  auto file = mlir::openOutputFile(options.depfilePath, &error);
  if (!file) {
    // An output without its depfile would look up to date to a build
    // system that then never learns what it was made from: remove it.
    if (options.outputPath != "-")
      llvm::sys::fs::remove(options.outputPath);
    return emitError(unknownLoc()) << "cannot write the depfile: " << error;
  }
  file->os() << makeEscaped(options.outputPath) << ":";
  for (const std::string &path : filesRead)
    file->os() << " \\\n  " << makeEscaped(path);
  file->os() << "\n";
  file->keep();
  return success();
}

LogicalResult cellc::runCompile(const DriverOptions &options) {
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
  return Compilation(options, context).run();
}
