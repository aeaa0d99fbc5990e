//===- BuildArtifact.cpp - From a compiled module to a .cellpack ---------===//
#include "compiler/driver/BuildArtifact.h"

#include "compiler/codegen/KernelEmitter.h"

#include "cell/IR/CellOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/ToolOutputFile.h"

#include <chrono>
#include <set>

using namespace mlir;
using namespace cellc;

std::string cellc::parseArchs(const std::vector<std::string> &archs,
                              BuildOptions &options) {
  options.cubinArchs.clear();
  options.ptxArch.clear();
  for (const std::string &arch : archs) {
    if (std::string problem = codegen::checkArch(arch); !problem.empty())
      return problem;
    if (StringRef(arch).startswith("compute_")) {
      if (!options.ptxArch.empty())
        return "at most one PTX target (compute_XX) may be given, got " +
               options.ptxArch + " and " + arch;
      options.ptxArch = arch;
    } else {
      options.cubinArchs.push_back(arch);
    }
  }
  if (options.cubinArchs.empty() && options.ptxArch.empty())
    return "--arch names no target";
  return "";
}

namespace {
class Stopwatch {
public:
  double lap() {
    auto now = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(now - start_).count();
    start_ = now;
    return seconds;
  }

private:
  std::chrono::steady_clock::time_point start_ =
      std::chrono::steady_clock::now();
};
} // namespace

LogicalResult
cellc::buildArtifact(ModuleOp module, const BuildOptions &options,
                     StringRef outputPath,
                     ArrayRef<std::pair<std::string, double>> elapsed,
                     llvm::raw_ostream &report) {
  Stopwatch clock;
  double codegenSeconds = 0, nvrtcSeconds = 0;
  ArtifactInputs inputs{module, {}, options.precision, options.producer};
  std::set<int64_t> batchSizes;
  size_t kernels = 0;
  for (auto cell : module.getOps<mlir::cell::CellOp>()) {
    if (auto batch = cell->getAttrOfType<IntegerAttr>(
            mlir::cell::CellDialect::kBatchSizeAttr)) {
      batchSizes.insert(batch.getInt());
      continue;
    }
    clock.lap();
    FailureOr<codegen::CudaProgram> program = codegen::emitCuda(
        module, cell.getSymName(), options.writesGemmEpilogues(),
        options.gemmEpilogueMinWeightBytes);
    if (failed(program))
      return failure();
    codegenSeconds += clock.lap();
    codegen::CompileOptions compileOptions;
    compileOptions.cubinArchs = options.cubinArchs;
    compileOptions.ptxArch = options.ptxArch;
    compileOptions.kernelNames = program->kernelNames();
    CellBinary binary{std::move(*program), {}};
    std::string error;
    if (!codegen::compileCuda(binary.program.source,
                              cell.getSymName().str() + ".cu", compileOptions,
                              binary.compiled, error))
      return cell.emitOpError() << "CUDA compilation failed:\n" << error;
    nvrtcSeconds += clock.lap();
    kernels += binary.program.kernels.size();
    inputs.binaries.push_back(std::move(binary));
  }
  FailureOr<std::vector<uint8_t>> bytes = writeArtifact(inputs);
  if (failed(bytes))
    return failure();
  std::string error;
  auto output = openOutputFile(outputPath, &error);
  if (!output)
    return emitError(UnknownLoc::get(module.getContext())) << error;
  output->os().write(reinterpret_cast<const char *>(bytes->data()),
                     bytes->size());
  output->keep();
  double writeSeconds = clock.lap();

  report << "cellc: " << inputs.binaries.size() << " cell(s), batch sizes {"
         << llvm::join(
                llvm::map_range(batchSizes,
                                [](int64_t b) { return std::to_string(b); }),
                ", ")
         << "}, " << kernels << " kernels for "
         << llvm::join(options.cubinArchs, ", ")
         << (options.ptxArch.empty() ? "" : " + PTX " + options.ptxArch)
         << "\n  ";
  for (const auto &[stage, seconds] : elapsed)
    report << stage << " " << llvm::format("%.2f", seconds) << " s | ";
  report << "CUDA codegen " << llvm::format("%.2f", codegenSeconds)
         << " s | NVRTC " << llvm::format("%.2f", nvrtcSeconds) << " s | write "
         << llvm::format("%.2f", writeSeconds) << " s\n  wrote " << outputPath
         << " (" << llvm::format("%.1f", bytes->size() / 1048576.0)
         << " MiB)\n";
  return success();
}
