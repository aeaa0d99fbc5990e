//===- ManifestParser.cpp - YAML/JSON manifest into a Manifest -----------===//
//
// Walks the YAML node tree (LLVM's YAML parser; JSON is accepted as YAML) and
// fills a Manifest, reporting every problem as an MLIR diagnostic at the line
// and column of the offending key or value: the document, its scalars and
// mappings here, the cells, seq2seq and tree sections in ManifestSections.cpp.
// The checks that relate cells to each other are in ManifestChecks.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/manifest/ManifestParser.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

using namespace mlir;
using namespace cellc;
namespace yaml = llvm::yaml;

namespace cellc {
LogicalResult checkManifest(const Manifest &manifest, MLIRContext &context);
} // namespace cellc

LogicalResult ManifestParser::forEachEntry(
    yaml::Node *node, StringRef what, ArrayRef<StringRef> allowed,
    ArrayRef<StringRef> required,
    function_ref<LogicalResult(StringRef, yaml::Node *)> handle) {
  if (failed(rejectAlias(node)))
    return failure();
  auto *mapping = dyn_cast_or_null<yaml::MappingNode>(node);
  if (!mapping)
    return error(node) << what << " must be a mapping";
  llvm::StringSet<> seen;
  for (yaml::KeyValueNode &entry : *mapping) {
    auto *keyNode = dyn_cast_or_null<yaml::ScalarNode>(entry.getKey());
    if (!keyNode)
      return error(entry.getKey()) << "keys of " << what << " must be plain";
    SmallString<32> storage;
    std::string key = keyNode->getValue(storage).str();
    if (!allowed.empty() && !llvm::is_contained(allowed, key))
      return error(keyNode)
             << "unknown key '" << key << "' in " << what
             << " (expected one of: " << llvm::join(allowed, ", ") << ")";
    if (!seen.insert(key).second)
      return error(keyNode) << "key '" << key << "' appears twice in " << what;
    yaml::Node *value = entry.getValue();
    if (!value || isa<yaml::NullNode>(value))
      return error(keyNode)
             << "key '" << key << "' in " << what << " has no value";
    currentKey_ = keyNode;
    if (failed(handle(key, value)))
      return failure();
  }
  for (StringRef key : required)
    if (!seen.count(key))
      return error(node) << what << " needs the key '" << key << "'";
  return success();
}

FailureOr<std::string> ManifestParser::scalar(yaml::Node *node,
                                              StringRef what) {
  if (failed(rejectAlias(node)))
    return failure();
  auto *scalarNode = dyn_cast<yaml::ScalarNode>(node);
  if (!scalarNode)
    return error(node) << what << " must be a single value";
  SmallString<32> storage;
  return scalarNode->getValue(storage).str();
}

FailureOr<int64_t> ManifestParser::integer(yaml::Node *node, StringRef what,
                                           int64_t min, int64_t max) {
  FailureOr<std::string> text = scalar(node, what);
  if (failed(text))
    return failure();
  int64_t value;
  if (StringRef(*text).getAsInteger(10, value))
    return error(node) << what << " must be an integer, got '" << *text << "'";
  if (value < min || value > max)
    return error(node) << what << " must be in " << min << ".." << max
                       << ", got " << value;
  return value;
}

FailureOr<bool> ManifestParser::boolean(yaml::Node *node, StringRef what) {
  FailureOr<std::string> text = scalar(node, what);
  if (failed(text))
    return failure();
  if (*text == "true")
    return true;
  if (*text == "false")
    return false;
  return error(node) << what << " must be true or false, got '" << *text << "'";
}

FailureOr<std::string> ManifestParser::identifier(yaml::Node *node,
                                                  StringRef what) {
  FailureOr<std::string> text = scalar(node, what);
  if (failed(text))
    return failure();
  bool valid =
      !text->empty() && !llvm::isDigit(text->front()) &&
      llvm::all_of(*text, [](char c) { return llvm::isAlnum(c) || c == '_'; });
  if (!valid)
    return error(node) << what << " '" << *text
                       << "' must be an identifier ([A-Za-z_][A-Za-z0-9_]*)";
  return text;
}

LogicalResult ManifestParser::parseModelName(yaml::Node *node,
                                             Manifest &manifest) {
  FailureOr<std::string> name = scalar(node, "name");
  if (failed(name))
    return failure();
  if (name->empty() || !llvm::all_of(*name, [](char c) {
        return llvm::isAlnum(c) || c == '_' || c == '-' || c == '.';
      }))
    return error(node) << "model name '" << *name
                       << "' may only use [A-Za-z0-9_.-]";
  manifest.name = *name;
  return success();
}

LogicalResult ManifestParser::parseCells(yaml::Node *node, Manifest &manifest) {
  if (failed(rejectAlias(node)))
    return failure();
  auto *sequence = dyn_cast<yaml::SequenceNode>(node);
  if (!sequence)
    return error(node) << "cells must be a list";
  for (yaml::Node &item : *sequence) {
    FailureOr<CellSpec> cell = parseCell(&item);
    if (failed(cell))
      return failure();
    if (manifest.findCell(cell->name))
      return error(&item) << "cell '" << cell->name << "' is defined twice";
    manifest.cells.push_back(std::move(*cell));
  }
  if (manifest.cells.empty())
    return error(node) << "cells is empty";
  return success();
}

LogicalResult ManifestParser::parseCustom(yaml::Node *node,
                                          Manifest &manifest) {
  return forEachEntry(node, "custom", {"unfolder"}, {"unfolder"},
                      [&](StringRef, yaml::Node *name) {
                        FailureOr<std::string> unfolder =
                            identifier(name, "unfolder");
                        if (failed(unfolder))
                          return failure();
                        manifest.customUnfolder = *unfolder;
                        return success();
                      });
}

FailureOr<Structure> ManifestParser::structureOf(StringRef name,
                                                 yaml::Node *node) {
  static const std::pair<StringRef, Structure> kStructures[] = {
      {"chain", Structure::Chain},
      {"seq2seq", Structure::Seq2Seq},
      {"tree", Structure::Tree},
      {"custom", Structure::Custom}};
  auto known = llvm::find_if(
      kStructures, [&](const auto &entry) { return entry.first == name; });
  if (known == std::end(kStructures))
    return error(node) << "structure '" << name
                       << "' must be one of: chain, seq2seq, tree, "
                          "custom";
  return known->second;
}

FailureOr<Manifest> ManifestParser::parseDocument(yaml::Node *root) {
  Manifest manifest;
  manifest.path = path_;
  std::optional<std::string> structure;
  yaml::Node *structureNode = nullptr;
  LogicalResult parsed =
      forEachEntry(root, "the manifest",
                   {"name", "structure", "cells", "seq2seq", "tree", "custom"},
                   {"name", "structure", "cells"},
                   [&](StringRef key, yaml::Node *value) -> LogicalResult {
                     if (key == "name")
                       return parseModelName(value, manifest);
                     if (key == "structure") {
                       FailureOr<std::string> text = scalar(value, "structure");
                       if (failed(text))
                         return failure();
                       structure = *text;
                       structureNode = value;
                       return success();
                     }
                     if (key == "cells")
                       return parseCells(value, manifest);
                     if (key == "seq2seq") {
                       FailureOr<Seq2SeqSpec> spec = parseSeq2Seq(value);
                       if (failed(spec))
                         return failure();
                       manifest.seq2seq = std::move(*spec);
                       return success();
                     }
                     if (key == "tree") {
                       FailureOr<TreeSpec> spec = parseTree(value);
                       if (failed(spec))
                         return failure();
                       manifest.tree = std::move(*spec);
                       return success();
                     }
                     return parseCustom(value, manifest);
                   });
  if (failed(parsed))
    return failure();
  FailureOr<Structure> known = structureOf(*structure, structureNode);
  if (failed(known))
    return failure();
  manifest.structure = *known;
  return manifest;
}

const CellSpec *Manifest::findCell(StringRef cellName) const {
  for (const CellSpec &cell : cells)
    if (cell.name == cellName)
      return &cell;
  return nullptr;
}

int64_t Manifest::effectivePriority(const CellSpec &cell) const {
  if (cell.priority)
    return *cell.priority;
  if (seq2seq && cell.name == seq2seq->decoder)
    return 1;
  if (tree && cell.name == tree->internal)
    return 1;
  return 0;
}

StringRef cellc::structureName(Structure structure) {
  switch (structure) {
  case Structure::Chain:
    return "chain";
  case Structure::Seq2Seq:
    return "seq2seq";
  case Structure::Tree:
    return "tree";
  case Structure::Custom:
    return "custom";
  }
  return "unknown";
}

FailureOr<Manifest> cellc::parseManifest(StringRef text, StringRef path,
                                         MLIRContext &context) {
  llvm::SourceMgr sourceMgr;
  // YAML syntax errors arrive through the source manager; turn them into
  // diagnostics at their line and column.
  struct SyntaxErrors {
    MLIRContext *context;
    std::string path;
    bool failed = false;
  } syntax{&context, path.str()};
  sourceMgr.setDiagHandler(
      [](const llvm::SMDiagnostic &diag, void *opaque) {
        auto *state = static_cast<SyntaxErrors *>(opaque);
        state->failed = true;
        emitError(FileLineColLoc::get(state->context, state->path,
                                      diag.getLineNo(), diag.getColumnNo() + 1))
            << "YAML syntax error: " << diag.getMessage();
      },
      &syntax);
  yaml::Stream stream(text, sourceMgr);
  ManifestParser parser(sourceMgr, path, context, syntax.failed);
  auto document = stream.begin();
  if (document == stream.end() || !document->getRoot() || syntax.failed) {
    if (!syntax.failed)
      emitError(FileLineColLoc::get(&context, path, 1, 1))
          << "the manifest is empty";
    return failure();
  }
  FailureOr<Manifest> manifest = parser.parseDocument(document->getRoot());
  if (syntax.failed || failed(manifest))
    return failure();
  if (++document != stream.end() && document->getRoot() &&
      !isa<yaml::NullNode>(document->getRoot())) {
    emitError(FileLineColLoc::get(&context, path, 1, 1))
        << "the manifest must be a single YAML document";
    return failure();
  }
  if (syntax.failed || failed(checkManifest(*manifest, context)))
    return failure();
  return manifest;
}

FailureOr<Manifest> cellc::readManifest(StringRef path, MLIRContext &context) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    emitError(FileLineColLoc::get(&context, path, 0, 0))
        << "cannot read the manifest: " << buffer.getError().message();
    return failure();
  }
  return parseManifest((*buffer)->getBuffer(), path, context);
}
