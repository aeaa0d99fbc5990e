//===- Passes.h - Passes over the `cell` dialect ---------------*- C++ -*-===//
#ifndef CELL_TRANSFORMS_PASSES_H
#define CELL_TRANSFORMS_PASSES_H

#include "cell/IR/CellOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::cell {

#define GEN_PASS_DECL
#include "cell/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "cell/Transforms/Passes.h.inc"

} // namespace mlir::cell

#endif // CELL_TRANSFORMS_PASSES_H
