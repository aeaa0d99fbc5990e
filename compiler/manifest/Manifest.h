//===- Manifest.h - The model manifest (YAML/JSON) -------------*- C++ -*-===//
//
// What a manifest says (see docs/manifest.md): the cells with their ONNX files,
// batch sizes, priorities and the role of every input and output, and how a
// request unfolds into cells. parseManifest checks everything that can be
// checked without the ONNX files; bindManifest (ManifestBinding.h) checks the
// rest against the imported cells.
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_MANIFEST_MANIFEST_H
#define CELLC_MANIFEST_MANIFEST_H

#include "cell/IR/CellDialect.h"

#include "mlir/IR/Location.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <vector>

namespace cellc {

enum class Structure { Chain, Seq2Seq, Tree, Custom };
llvm::StringRef structureName(Structure structure);

/// The role of one ONNX input or output of a cell.
struct RoleSpec {
  std::string name; // ONNX input/output name
  mlir::cell::Role role = mlir::cell::Role::Input;
  std::string updates;    // state output: the state input it replaces
  int64_t child = -1;     // child input: index of the child
  std::string from;       // child input: the child cell's output it takes
  bool emit = false;      // state output: also returned at every step
  mlir::LocationAttr loc; // where the manifest says this
};

struct CellSpec {
  std::string name;
  std::string onnxPath; // as written in the manifest
  std::vector<int64_t> batchSizes;
  std::optional<int64_t> priority;
  std::vector<RoleSpec> inputs;
  std::vector<RoleSpec> outputs;
  mlir::LocationAttr loc;
  mlir::LocationAttr onnxLoc;
};

/// Where each key of a structure section was written, for messages.
struct KeyLocations {
  llvm::StringMap<mlir::LocationAttr> keys;
  mlir::LocationAttr section;
  mlir::LocationAttr operator[](llvm::StringRef key) const {
    auto it = keys.find(key);
    return it == keys.end() ? section : it->second;
  }
};

/// The largest max_decode_length cellc accepts: a decode of this many
/// tokens is far past any translation or summary, and a bound keeps a
/// model from decoding for ever (a request's result grows with each token).
constexpr int64_t kMaxDecodeLength = 65536;

struct Seq2SeqSpec {
  std::string encoder, decoder;
  std::vector<std::pair<std::string, std::string>> initialState; // dec <- enc
  std::string tokenInput, tokenOutput;
  int64_t bosToken = 0, eosToken = 0, maxDecodeLength = 0;
  /// An eos_token the decoder cannot produce is meant (decodes always run to
  /// max_decode_length).
  bool allowEosOutsideVocabulary = false;
  KeyLocations loc;
};

struct TreeSpec {
  std::string leaf, internal;
  int64_t arity = 0;
  KeyLocations loc;
};

struct Manifest {
  std::string path; // file the manifest was read from
  std::string name;
  Structure structure = Structure::Chain;
  std::vector<CellSpec> cells;
  std::optional<Seq2SeqSpec> seq2seq;
  std::optional<TreeSpec> tree;
  std::string customUnfolder;

  const CellSpec *findCell(llvm::StringRef cellName) const;
  /// The priority of a cell: as given, or the structure's default (later
  /// cells first: decoder over encoder, internal over leaf).
  int64_t effectivePriority(const CellSpec &cell) const;
};

/// Parses and checks the manifest text. Diagnostics go to `context` with
/// locations in `path` (line and column of the offending key or value).
mlir::FailureOr<Manifest> parseManifest(llvm::StringRef text,
                                        llvm::StringRef path,
                                        mlir::MLIRContext &context);

/// Reads `path` and parses it; a missing file is a diagnostic too.
mlir::FailureOr<Manifest> readManifest(llvm::StringRef path,
                                       mlir::MLIRContext &context);

} // namespace cellc

#endif // CELLC_MANIFEST_MANIFEST_H
