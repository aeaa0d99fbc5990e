//===- cell-opt.cpp - mlir-opt for the `cell` dialect ---------------------===//
//
// Parses, verifies, transforms and prints `cell` IR. Used by the lit tests for
// round trips, verifier diagnostics and pass tests.
//
//===----------------------------------------------------------------------===//
#include "cell/IR/CellDialect.h"
#include "cell/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::cell::registerCellPasses();

  mlir::DialectRegistry registry;
  registry.insert<mlir::cell::CellDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "cell-opt: optimizer driver for the `cell` dialect\n",
      registry));
}
