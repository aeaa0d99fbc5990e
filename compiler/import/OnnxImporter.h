//===- OnnxImporter.h - ONNX graph to a `cell.cell` function ---*- C++ -*-===//
//
// Turns one ONNX model (read by OnnxModel.h) into a `cell.cell` op inside a
// module. Errors are MLIR diagnostics located at the ONNX node and naming its
// op type and opset; the import stops at the first error.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_IMPORT_ONNXIMPORTER_H
#define CELL_IMPORT_ONNXIMPORTER_H

#include "cell/IR/CellOps.h"
#include "compiler/import/OnnxModel.h"

#include "mlir/IR/BuiltinOps.h"

namespace cellc {

/// Opsets of the default ONNX domain that the importer understands.
constexpr int64_t kMinOpset = 9;
constexpr int64_t kMaxOpset = 18;

/// Imports `model` as a cell named `cellName` at the end of `module`. Graph
/// inputs become arguments and graph outputs results, each tagged with its ONNX
/// name (`cell.name`) and the default role (input/output); initializers become
/// `cell.constant` weights held as dense resource blobs. Returns failure after
/// emitting a diagnostic.
mlir::FailureOr<mlir::cell::CellOp>
importOnnxCell(const onnx_model::Model &model, llvm::StringRef cellName,
               mlir::ModuleOp module);

/// Loads the dialects the importer creates ops of into `context`.
void loadImporterDialects(mlir::MLIRContext &context);

} // namespace cellc

#endif // CELL_IMPORT_ONNXIMPORTER_H
