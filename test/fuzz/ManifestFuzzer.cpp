//===- ManifestFuzzer.cpp - Manifests through the parser and the binder ---===//
//
// The bytes as a model manifest (YAML or JSON), parsed and checked; a
// manifest that parses is bound to cells imported from the example ONNX
// files its cells name (h64/lstm.onnx, h64/encoder.onnx, ... of the main
// build's examples, read once), so the role, structure and type checks run on
// mutated manifests too. Every input must end in a bound module or in an error
// diagnostic; a bound module must verify. scripts/fuzz.sh runs it under
// libFuzzer; ctest replays the corpus (fuzz.replay.manifest).
//
//===----------------------------------------------------------------------===//
#include "ExamplesDir.h"

#include "CompilerContext.h"
#include "compiler/import/OnnxImporter.h"
#include "compiler/import/OnnxModel.h"
#include "compiler/manifest/Manifest.h"
#include "compiler/manifest/ManifestBinding.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

namespace {

/// The small examples' cells, keyed by example and the path its manifest
/// gives ("seq2seq/h64/encoder.onnx").
const std::map<std::string, cellc::onnx_model::Model> &exampleCells() {
  static const auto cells = [] {
    std::map<std::string, cellc::onnx_model::Model> read;
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    for (const auto &example :
         fs::directory_iterator(cellfuzz::examplesDir())) {
      fs::path dir = example.path() / "h64";
      if (fs::is_directory(dir))
        for (const auto &file : fs::directory_iterator(dir))
          if (file.path().extension() == ".onnx")
            files.push_back(file.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto &file : files) {
      std::string key = file.parent_path().parent_path().filename().string() +
                        "/h64/" + file.filename().string();
      cellc::onnx_model::Model model;
      std::string error;
      if (!cellc::onnx_model::readModel(file.string(), model, error)) {
        std::fprintf(stderr, "fuzz: %s\n", error.c_str());
        std::exit(2);
      }
      read.emplace(key, std::move(model));
    }
    if (!read.count("lstm/h64/lstm.onnx")) {
      std::fprintf(stderr, "fuzz: no example ONNX files under %s\n",
                   cellfuzz::examplesDir().c_str());
      std::exit(2);
    }
    return read;
  }();
  return cells;
}

/// The cell a manifest's `onnx:` path names: that path in the example the
/// manifest's name starts with ("seq2seq_eos" -> seq2seq), else in any
/// example, else the LSTM (the binder then reports what does not match).
const cellc::onnx_model::Model &cellFor(const cellc::Manifest &manifest,
                                        const std::string &onnxPath) {
  const auto &cells = exampleCells();
  const cellc::onnx_model::Model *anyExample = nullptr;
  for (const auto &[key, model] : cells) {
    size_t slash = key.find('/');
    if (key.compare(slash + 1, std::string::npos, onnxPath) != 0)
      continue;
    if (manifest.name.rfind(key.substr(0, slash), 0) == 0)
      return model;
    if (!anyExample)
      anyExample = &model;
  }
  return anyExample ? *anyExample : cells.at("lstm/h64/lstm.onnx");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  cellfuzz::CompilerContext fresh;
  mlir::MLIRContext &context = fresh.context;
  const unsigned &errors = fresh.errors;
  mlir::FailureOr<cellc::Manifest> manifest =
      cellc::parseManifest(text, "fuzz.yaml", context);
  if (mlir::failed(manifest)) {
    if (errors == 0)
      std::abort(); // a refused manifest says why
    return 0;
  }
  mlir::OpBuilder builder(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(builder.getUnknownLoc());
  for (const cellc::CellSpec &cell : manifest->cells) {
    if (mlir::failed(cellc::importOnnxCell(cellFor(*manifest, cell.onnxPath),
                                           cell.name, *module)))
      return 0; // e.g. two cells of one name
  }
  if (mlir::failed(cellc::bindManifest(*manifest, *module))) {
    if (errors == 0)
      std::abort();
    return 0;
  }
  if (std::getenv("CELL_FUZZ_VERBOSE"))
    std::fprintf(stderr, "fuzz: bound %s\n", manifest->name.c_str());
  if (mlir::failed(mlir::verify(*module))) {
    std::fprintf(stderr, "fuzz: a bound manifest left a module that does "
                         "not verify\n");
    std::abort();
  }
  return 0;
}
