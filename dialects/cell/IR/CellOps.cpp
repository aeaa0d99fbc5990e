//===- CellOps.cpp - Generated op definitions of the `cell` dialect ------===//
//
// The TableGen-generated op classes. Shape inference lives in
// ShapeInference.cpp, folders in Folders.cpp, the cell function in
// CellFunction.cpp.
//
//===----------------------------------------------------------------------===//
#include "cell/IR/CellOps.h"

#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::cell;

#define GET_OP_CLASSES
#include "cell/IR/CellOps.cpp.inc"
