//===- ModulePrinter.h - How cellc shows what it imported ------*- C++ -*-===//
#ifndef CELLC_DRIVER_MODULEPRINTER_H
#define CELLC_DRIVER_MODULEPRINTER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace cellc {

/// Prints `module` as MLIR. Unless `withWeights`, the weight blobs (the
/// trailing `{-# dialect_resources ... #-}` section) are replaced by a comment
/// giving their number and size, so weights are never dumped inline.
void printModule(mlir::ModuleOp module, llvm::raw_ostream &os,
                 bool withWeights);

/// One line per cell: name, signature with roles, op count, weight bytes,
/// batch sizes and priority.
void printSummary(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace cellc

#endif // CELLC_DRIVER_MODULEPRINTER_H
