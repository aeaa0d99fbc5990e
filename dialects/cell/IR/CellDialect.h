//===- CellDialect.h - The `cell` dialect ----------------------*- C++ -*-===//
//
// Declares the dialect, its role enum and attribute. Include CellOps.h for ops.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_IR_CELLDIALECT_H
#define CELL_IR_CELLDIALECT_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"

#include "cell/IR/CellDialect.h.inc"
#include "cell/IR/CellEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "cell/IR/CellAttrs.h.inc"

#endif // CELL_IR_CELLDIALECT_H
