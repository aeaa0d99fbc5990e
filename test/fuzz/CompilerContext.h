//===- CompilerContext.h - A fresh MLIR context for one input ---*- C++ -*-===//
//
// What the compiler's fuzz targets give each input: a single-threaded
// context with the importer's dialects, whose error diagnostics are counted
// (and not printed), so a target can check that every refusal said why.
// Fresh per input: weights become resource blobs a shared context would
// keep for the whole run.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_FUZZ_COMPILERCONTEXT_H
#define CELL_TEST_FUZZ_COMPILERCONTEXT_H

#include "compiler/import/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

namespace cellfuzz {

struct CompilerContext {
  CompilerContext() {
    context.disableMultithreading();
    cellc::loadImporterDialects(context);
  }
  mlir::MLIRContext context;
  unsigned errors = 0;
  mlir::ScopedDiagnosticHandler countErrors{
      &context, [this](mlir::Diagnostic &diagnostic) {
        if (diagnostic.getSeverity() == mlir::DiagnosticSeverity::Error)
          ++errors;
        return mlir::success();
      }};
};

} // namespace cellfuzz

#endif // CELL_TEST_FUZZ_COMPILERCONTEXT_H
