//===- OnnxImportFuzzer.cpp - ONNX files through the reader and importer --===//
//
// The bytes as an ONNX model (ONNX's textual syntax when they start with '<'
// or a '#' comment, binary protobuf otherwise), read into plain structs and
// imported as a cell into a fresh MLIR context. Every input must end in a model
// and a cell, or in an error message; and a cell the importer accepts must pass
// the MLIR verifier (an import that succeeds with invalid IR aborts).
// scripts/fuzz.sh runs it under libFuzzer; ctest replays the corpus
// (fuzz.replay.onnx_import).
//
//===----------------------------------------------------------------------===//
#include "CompilerContext.h"
#include "compiler/import/OnnxImporter.h"
#include "compiler/import/OnnxModel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string contents(reinterpret_cast<const char *>(data), size);
  // ONNX's textual syntax starts with its header '<' (after blank lines and
  // '#' comments); a binary ModelProto starts with a field tag.
  size_t first = contents.find_first_not_of(" \t\r\n");
  bool textual = first != std::string::npos &&
                 (contents[first] == '<' || contents[first] == '#');
  cellc::onnx_model::Model model;
  std::string error;
  if (!cellc::onnx_model::parseModel(contents, textual, "fuzz.onnx", model,
                                     error)) {
    if (error.empty())
      std::abort(); // every refusal says why
    return 0;
  }
  cellfuzz::CompilerContext fresh;
  mlir::MLIRContext &context = fresh.context;
  const unsigned &errors = fresh.errors;
  mlir::OpBuilder builder(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(builder.getUnknownLoc());
  auto cell = cellc::importOnnxCell(model, "fuzz_cell", *module);
  if (mlir::failed(cell)) {
    if (errors == 0)
      std::abort(); // a failed import emits its diagnostic
    return 0;
  }
  if (std::getenv("CELL_FUZZ_VERBOSE"))
    std::fprintf(stderr, "fuzz: imported %s\n", model.graphName.c_str());
  if (mlir::failed(mlir::verify(*module))) {
    std::fprintf(stderr, "fuzz: the importer accepted a model whose cell "
                         "does not verify\n");
    std::abort();
  }
  return 0;
}
