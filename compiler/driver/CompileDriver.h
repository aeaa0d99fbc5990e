//===- CompileDriver.h - One whole run of the cell compiler ----*- C++ -*-===//
//
// The order of a compile, from a manifest (or a single ONNX cell) to what
// cellc prints or writes: import, the pipeline's stages, then the MLIR, the
// CUDA or the .cellpack (code generation, NVRTC, artifact writing) and the
// depfile. Errors are printed on stderr as "file:line:col: error: ...".
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_DRIVER_COMPILEDRIVER_H
#define CELLC_DRIVER_COMPILEDRIVER_H

#include "compiler/artifact/ArtifactWriter.h"
#include "compiler/pipeline/Pipeline.h"

#include "mlir/Support/LogicalResult.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cellc {

/// What a compile produces.
enum class EmitKind { Mlir, Cuda, CellPack };

/// Everything a compile is asked for (cellc's command line, parsed).
struct DriverOptions {
  /// A manifest (.yaml, .json) or a single ONNX cell (.onnx, .onnxtxt).
  std::string inputPath;
  /// Where the result goes ("-": stdout).
  std::string outputPath = "-";
  EmitKind emit = EmitKind::CellPack;
  /// Directory for the manifest's relative ONNX paths ("": the manifest's).
  std::string onnxDir;
  /// With EmitKind::Mlir, print the weight blobs too.
  bool printWeights = false;
  /// Batch sizes of a single ONNX cell (empty: 1, 2, 4, ..., 64).
  std::vector<int64_t> batchSizes;
  /// Name of a single ONNX cell ("": the file's stem).
  std::string cellName;
  /// Name of the last stage to run (as `--until` takes it).
  std::string untilStage = "plan-memory";
  /// GPU targets as `--arch` takes them (empty: the default ones).
  std::vector<std::string> archs;
  Precision precision = Precision::FP32;
  /// GEMM-and-epilogue kernels where a step can have one (BuildOptions).
  bool gemmEpilogues = true;
  int64_t gemmEpilogueMinWeightBytes = 512 * 1024;
  PipelineOptions pipeline;
  /// Where to write the Make rule of the files read ("": nowhere).
  std::string depfilePath;
  /// Leave out the summary on stderr.
  bool quiet = false;
  /// The artifact's producer string.
  std::string producer;
};

/// Runs a whole compile as `options` ask, printing its diagnostics on stderr;
/// fails (after reporting why) if any step does.
mlir::LogicalResult runCompile(const DriverOptions &options);

} // namespace cellc

#endif // CELLC_DRIVER_COMPILEDRIVER_H
