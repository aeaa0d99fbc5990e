//===- Pipeline.cpp - The stages cellc runs after import -----------------===//
#include "compiler/pipeline/Pipeline.h"

#include "cell/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

const std::vector<std::string> &cellc::stageNames() {
  static const std::vector<std::string> names = {"import",
                                                 "prepare-weights",
                                                 "fold-token-projections",
                                                 "hoist-input-projections",
                                                 "merge-gemms",
                                                 "fuse-elementwise",
                                                 "specialize-batch",
                                                 "fuse-step",
                                                 "plan-memory"};
  return names;
}

std::optional<cellc::Stage> cellc::parseStage(llvm::StringRef name) {
  const std::vector<std::string> &names = stageNames();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name)
      return static_cast<Stage>(i);
  return std::nullopt;
}

LogicalResult cellc::runPipeline(ModuleOp module, Stage stopAfter,
                                 const PipelineOptions &options) {
  PassManager pm(module.getContext());
  auto reached = [&](Stage stage) { return stage <= stopAfter; };
  OpPassManager *cells = &pm.nest<cell::CellOp>();
  if (reached(Stage::PrepareWeights)) {
    cells->addPass(cell::createPrepareWeights());
    cells->addPass(createCanonicalizerPass());
  }
  if (reached(Stage::FoldTokenProjections) && options.foldTokenProjections) {
    cells->addPass(cell::createFoldTokenProjections());
    cells->addPass(createCanonicalizerPass());
  }
  if (reached(Stage::HoistInputProjections) && options.hoistInputProjections) {
    // A module pass (it adds cells): the per-cell stages after it nest anew.
    pm.addPass(cell::createHoistInputProjections());
    cells = &pm.nest<cell::CellOp>();
  }
  if (reached(Stage::MergeGemms)) {
    cells->addPass(cell::createMergeGemms());
    cells->addPass(createCanonicalizerPass());
  }
  if (reached(Stage::FuseElementwise))
    cells->addPass(cell::createFuseElementwise());
  if (reached(Stage::SpecializeBatch))
    pm.addPass(cell::createSpecializeBatch());
  if (reached(Stage::FuseStep) && options.fuseStepMaxBatch > 0) {
    cell::FuseStepOptions fuseStep;
    fuseStep.maxBatch = options.fuseStepMaxBatch;
    fuseStep.maxWeightBytes = options.fuseStepMaxWeightBytes;
    pm.addPass(cell::createFuseStep(fuseStep));
  }
  if (reached(Stage::PlanMemory))
    pm.addPass(cell::createPlanMemory());
  return pm.run(module);
}

void cellc::registerCompilerPasses() { cell::registerCellPasses(); }
