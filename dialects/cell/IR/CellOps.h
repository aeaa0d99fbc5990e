//===- CellOps.h - Operations of the `cell` dialect ------------*- C++ -*-===//
#ifndef CELL_IR_CELLOPS_H
#define CELL_IR_CELLOPS_H

#include "cell/IR/CellDialect.h"
#include "mlir/IR/FunctionInterfaces.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "cell/IR/CellOps.h.inc"

namespace mlir::cell {
/// The batch-specialized copies of cell `generic` in `module` (cells with
/// `cell.generic = @generic`), by increasing batch size.
llvm::SmallVector<CellOp> batchCopiesOf(mlir::Operation *module,
                                        llvm::StringRef generic);
} // namespace mlir::cell

#endif // CELL_IR_CELLOPS_H
