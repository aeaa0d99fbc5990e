//===- BuildArtifact.h - From a compiled module to a .cellpack -*- C++ -*-===//
#ifndef CELLC_DRIVER_BUILDARTIFACT_H
#define CELLC_DRIVER_BUILDARTIFACT_H

#include "compiler/artifact/ArtifactWriter.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace cellc {

struct BuildOptions {
  std::vector<std::string> cubinArchs = {"sm_80", "sm_90"};
  std::string ptxArch = "compute_80";
  Precision precision = Precision::FP32;
  std::string producer;
  /// GEMM-and-epilogue kernels for the steps that can have them (fp32 and
  /// tf32 only; codegen::emitCuda).
  bool gemmEpilogues = true;
  /// ... for GEMMs whose weights take at least this many bytes.
  int64_t gemmEpilogueMinWeightBytes = 512 * 1024;
  bool writesGemmEpilogues() const {
    return gemmEpilogues &&
           (precision == Precision::FP32 || precision == Precision::TF32);
  }
};

/// Parses "--arch" values: sm_XX become CUBIN targets, at most one
/// compute_XX the PTX target. Returns an error message or "".
std::string parseArchs(const std::vector<std::string> &archs,
                       BuildOptions &options);

/// Generates the CUDA of every cell of `module` (after the whole pipeline),
/// compiles it with NVRTC, writes the artifact to `outputPath` and reports
/// progress on `report`. `elapsed` holds the seconds of the earlier stages.
mlir::LogicalResult
buildArtifact(mlir::ModuleOp module, const BuildOptions &options,
              llvm::StringRef outputPath,
              llvm::ArrayRef<std::pair<std::string, double>> elapsed,
              llvm::raw_ostream &report);

} // namespace cellc

#endif // CELLC_DRIVER_BUILDARTIFACT_H
