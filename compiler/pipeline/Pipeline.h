//===- Pipeline.h - The stages cellc runs after import ---------*- C++ -*-===//
#ifndef CELLC_PIPELINE_PIPELINE_H
#define CELLC_PIPELINE_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace cellc {

/// The compiler's stages, in order. `import` is the module as imported and
/// bound to the manifest; each later stage is one pass (canonicalization runs
/// after the passes that leave foldable ops behind).
enum class Stage {
  Import,
  PrepareWeights,
  FoldTokenProjections,
  HoistInputProjections,
  MergeGemms,
  FuseElementwise,
  SpecializeBatch,
  FuseStep,
  PlanMemory,
};

struct PipelineOptions {
  /// Largest batch size whose steps become a single kernel (0: none).
  int64_t fuseStepMaxBatch = 16;
  /// Largest total size of a step's GEMM weights for it to become one
  /// kernel (larger ones run their GEMMs on their own).
  int64_t fuseStepMaxWeightBytes = 512 * 1024;
  /// Whether an embedding lookup's projection becomes a lookup table
  /// (cell-fold-token-projections).
  bool foldTokenProjections = true;
  /// Whether a chain's feature-input projection becomes a cell run once per
  /// request at admission (cell-hoist-input-projections): the step then
  /// reads only its recurrent weights, and a request's projection is one
  /// GEMM over all of its steps (docs/compiler.md).
  bool hoistInputProjections = true;
};

/// Stage names as `cellc --until` takes them, in order.
const std::vector<std::string> &stageNames();
std::optional<Stage> parseStage(llvm::StringRef name);

/// Runs every stage after import up to and including `stopAfter`; failures
/// are reported as diagnostics.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, Stage stopAfter,
                                const PipelineOptions &options = {});

/// Registers the dialect's passes (for tools that parse pass pipelines).
void registerCompilerPasses();

} // namespace cellc

#endif // CELLC_PIPELINE_PIPELINE_H
