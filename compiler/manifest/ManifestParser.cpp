//===- ManifestParser.cpp - YAML/JSON manifest into a Manifest -----------===//
//
// Walks the YAML node tree (LLVM's YAML parser; JSON is accepted as YAML) and
// fills a Manifest, reporting every problem as an MLIR diagnostic at the line
// and column of the offending key or value. The checks that relate cells to
// each other are in ManifestChecks.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/manifest/Manifest.h"

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

namespace {
class ManifestParser {
public:
  ManifestParser(llvm::SourceMgr &sourceMgr, StringRef path,
                 MLIRContext &context, const bool &syntaxFailed)
      : sourceMgr_(sourceMgr), path_(path), context_(context),
        syntaxFailed_(syntaxFailed) {}

  FailureOr<Manifest> parseDocument(yaml::Node *root);

private:
  LocationAttr locOf(yaml::Node *node) {
    // After a syntax error (a NUL byte, say) LLVM's YAML parser may hand out
    // nodes whose range points outside the text: the file, without a line.
    llvm::SMLoc start = node ? node->getSourceRange().Start : llvm::SMLoc();
    if (!start.isValid() || sourceMgr_.FindBufferContainingLoc(start) == 0)
      return FileLineColLoc::get(&context_, path_, 0, 0);
    auto [line, column] = sourceMgr_.getLineAndColumn(start);
    return FileLineColLoc::get(&context_, path_, line, column);
  }
  /// An error at `node`; silent once the YAML itself was malformed, since
  /// the syntax error already says what is wrong.
  /// YAML aliases (`*name`) cannot be resolved by LLVM's streaming YAML
  /// parser: an error that says so, rather than a wrong type.
  LogicalResult rejectAlias(yaml::Node *node) {
    if (auto *alias = dyn_cast_or_null<yaml::AliasNode>(node))
      return error(node) << "YAML aliases ('*" << alias->getName()
                         << "') are not supported in a manifest; write the "
                            "value out";
    return success();
  }

  InFlightDiagnostic error(yaml::Node *node) {
    InFlightDiagnostic diag = emitError(locOf(node));
    if (syntaxFailed_)
      diag.abandon();
    return diag;
  }

  /// Calls `handle(key, value)` for every entry of mapping `node`; keys must
  /// be among `allowed` and appear once; `required` keys must be present.
  LogicalResult
  forEachEntry(yaml::Node *node, StringRef what, ArrayRef<StringRef> allowed,
               ArrayRef<StringRef> required,
               function_ref<LogicalResult(StringRef, yaml::Node *)> handle);

  FailureOr<std::string> scalar(yaml::Node *node, StringRef what);
  FailureOr<int64_t> integer(yaml::Node *node, StringRef what, int64_t min,
                             int64_t max);
  FailureOr<bool> boolean(yaml::Node *node, StringRef what);
  FailureOr<std::string> identifier(yaml::Node *node, StringRef what);

  FailureOr<CellSpec> parseCell(yaml::Node *node);
  LogicalResult parseRoles(yaml::Node *node, bool outputs, CellSpec &cell);
  FailureOr<RoleSpec> parseRole(StringRef name, yaml::Node *node, bool output);
  LogicalResult parseBatchSizes(yaml::Node *node, CellSpec &cell);
  FailureOr<Seq2SeqSpec> parseSeq2Seq(yaml::Node *node);
  FailureOr<TreeSpec> parseTree(yaml::Node *node);

  llvm::SourceMgr &sourceMgr_;
  std::string path_;
  MLIRContext &context_;
  const bool &syntaxFailed_;
  /// The key whose value forEachEntry is handing out (for locations that
  /// should point at a name rather than at its value).
  yaml::Node *currentKey_ = nullptr;
};
} // namespace

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

FailureOr<RoleSpec> ManifestParser::parseRole(StringRef name, yaml::Node *node,
                                              bool output) {
  RoleSpec spec;
  spec.name = name.str();
  spec.loc = locOf(currentKey_ ? currentKey_ : node);
  std::string what = (output ? "output '" : "input '") + name.str() + "'";
  std::optional<std::string> roleText;
  yaml::Node *roleNode = nullptr;
  LogicalResult parsed = forEachEntry(
      node, what, {"role", "updates", "child", "from", "emit"}, {"role"},
      [&](StringRef key, yaml::Node *value) -> LogicalResult {
        FailureOr<std::string> text = scalar(value, key);
        if (failed(text))
          return failure();
        if (key == "role") {
          roleText = *text;
          roleNode = value;
        } else if (key == "updates") {
          spec.updates = *text;
        } else if (key == "from") {
          spec.from = *text;
        } else if (key == "child") {
          FailureOr<int64_t> child = integer(value, "child", 0, 1 << 16);
          if (failed(child))
            return failure();
          spec.child = *child;
        } else {
          FailureOr<bool> emit = boolean(value, "emit");
          if (failed(emit))
            return failure();
          spec.emit = *emit;
        }
        return success();
      });
  if (failed(parsed))
    return failure();
  std::optional<mlir::cell::Role> role = mlir::cell::symbolizeRole(*roleText);
  bool allowed = role && (output ? (*role == mlir::cell::Role::State ||
                                    *role == mlir::cell::Role::Output)
                                 : *role != mlir::cell::Role::Output);
  if (!allowed)
    return error(roleNode) << "role '" << *roleText << "' of " << what
                           << " must be one of: "
                           << (output ? "state, output"
                                      : "input, state, child, memory, "
                                        "memory_mask");
  spec.role = *role;
  bool isChild = spec.role == mlir::cell::Role::Child;
  bool isMemory = spec.role == mlir::cell::Role::Memory;
  bool isStateOutput = output && spec.role == mlir::cell::Role::State;
  if (!spec.updates.empty() && !isStateOutput)
    return error(node) << "'updates' belongs to a state output, not to "
                       << what;
  if (spec.emit && !isStateOutput)
    return error(node) << "'emit' belongs to a state output, not to " << what;
  if (isMemory && (spec.child >= 0 || spec.from.empty()))
    return error(node) << what
                       << " has role memory and needs 'from' (the encoder "
                          "output that fills it), not 'child'";
  if (!isMemory &&
      (isChild != (spec.child >= 0) || isChild != !spec.from.empty()))
    return error(node) << what
                       << (isChild ? " has role child and needs 'child' and "
                                     "'from'"
                                   : ": 'child' and 'from' belong to role "
                                     "child ('from' also to role memory)");
  return spec;
}

LogicalResult ManifestParser::parseRoles(yaml::Node *node, bool outputs,
                                         CellSpec &cell) {
  std::string what = "the " + std::string(outputs ? "outputs" : "inputs") +
                     " of cell '" + cell.name + "'";
  std::vector<RoleSpec> &specs = outputs ? cell.outputs : cell.inputs;
  if (failed(forEachEntry(
          node, what, {}, {}, [&](StringRef key, yaml::Node *value) {
            FailureOr<RoleSpec> spec = parseRole(key, value, outputs);
            if (failed(spec))
              return failure();
            specs.push_back(std::move(*spec));
            return success();
          })))
    return failure();
  if (specs.empty())
    return error(node) << what << " list no names";
  return success();
}

LogicalResult ManifestParser::parseBatchSizes(yaml::Node *node,
                                              CellSpec &cell) {
  if (failed(rejectAlias(node)))
    return failure();
  auto *sequence = dyn_cast<yaml::SequenceNode>(node);
  if (!sequence)
    return error(node) << "batch_sizes of cell '" << cell.name
                       << "' must be a list such as [1, 2, 4, 8]";
  for (yaml::Node &item : *sequence) {
    FailureOr<int64_t> size = integer(&item, "a batch size", 1, 65536);
    if (failed(size))
      return failure();
    if (!cell.batchSizes.empty() && *size <= cell.batchSizes.back())
      return error(&item) << "batch_sizes of cell '" << cell.name
                          << "' must increase strictly; " << *size
                          << " follows " << cell.batchSizes.back();
    cell.batchSizes.push_back(*size);
  }
  if (cell.batchSizes.empty())
    return error(node) << "batch_sizes of cell '" << cell.name << "' is empty";
  return success();
}

FailureOr<CellSpec> ManifestParser::parseCell(yaml::Node *node) {
  CellSpec cell;
  cell.loc = locOf(node);
  LogicalResult parsed = forEachEntry(
      node, "a cell",
      {"name", "onnx", "batch_sizes", "priority", "inputs", "outputs"},
      {"name", "onnx", "batch_sizes", "inputs", "outputs"},
      [&](StringRef key, yaml::Node *value) -> LogicalResult {
        if (key == "name") {
          FailureOr<std::string> name = identifier(value, "cell name");
          if (failed(name))
            return failure();
          cell.name = *name;
          return success();
        }
        if (key == "onnx") {
          FailureOr<std::string> path = scalar(value, "onnx");
          if (failed(path))
            return failure();
          cell.onnxPath = *path;
          cell.onnxLoc = locOf(value);
          return success();
        }
        if (key == "batch_sizes")
          return parseBatchSizes(value, cell);
        if (key == "priority") {
          FailureOr<int64_t> priority =
              integer(value, "priority", -1000000, 1000000);
          if (failed(priority))
            return failure();
          cell.priority = *priority;
          return success();
        }
        return parseRoles(value, key == "outputs", cell);
      });
  if (failed(parsed))
    return failure();
  return cell;
}

FailureOr<Seq2SeqSpec> ManifestParser::parseSeq2Seq(yaml::Node *node) {
  Seq2SeqSpec spec;
  spec.loc.section = locOf(node);
  LogicalResult parsed = forEachEntry(
      node, "seq2seq",
      {"encoder", "decoder", "initial_state", "token_input", "token_output",
       "bos_token", "eos_token", "max_decode_length",
       "allow_eos_outside_vocabulary"},
      {"encoder", "decoder", "initial_state", "token_input", "token_output",
       "bos_token", "eos_token", "max_decode_length"},
      [&](StringRef key, yaml::Node *value) -> LogicalResult {
        spec.loc.keys[key] = locOf(value);
        if (key == "allow_eos_outside_vocabulary") {
          FailureOr<bool> allow = boolean(value, key);
          if (failed(allow))
            return failure();
          spec.allowEosOutsideVocabulary = *allow;
          return success();
        }
        if (key == "initial_state")
          return forEachEntry(value, "initial_state", {}, {},
                              [&](StringRef decoderInput, yaml::Node *from) {
                                FailureOr<std::string> encoderInput =
                                    scalar(from, "initial_state entry");
                                if (failed(encoderInput))
                                  return failure();
                                spec.initialState.emplace_back(
                                    decoderInput.str(), *encoderInput);
                                return success();
                              });
        if (key == "bos_token" || key == "eos_token" ||
            key == "max_decode_length") {
          FailureOr<int64_t> number =
              key == "max_decode_length"
                  ? integer(value, key, 1, kMaxDecodeLength)
                  : integer(value, key, 0, INT32_MAX);
          if (failed(number))
            return failure();
          (key == "bos_token"   ? spec.bosToken
           : key == "eos_token" ? spec.eosToken
                                : spec.maxDecodeLength) = *number;
          return success();
        }
        FailureOr<std::string> text = scalar(value, key);
        if (failed(text))
          return failure();
        (key == "encoder"       ? spec.encoder
         : key == "decoder"     ? spec.decoder
         : key == "token_input" ? spec.tokenInput
                                : spec.tokenOutput) = *text;
        return success();
      });
  if (failed(parsed))
    return failure();
  return spec;
}

FailureOr<TreeSpec> ManifestParser::parseTree(yaml::Node *node) {
  TreeSpec spec;
  spec.loc.section = locOf(node);
  LogicalResult parsed =
      forEachEntry(node, "tree", {"leaf", "internal", "arity"},
                   {"leaf", "internal", "arity"},
                   [&](StringRef key, yaml::Node *value) -> LogicalResult {
                     if (key == "arity") {
                       FailureOr<int64_t> arity =
                           integer(value, "arity", 1, 64);
                       if (failed(arity))
                         return failure();
                       spec.arity = *arity;
                       return success();
                     }
                     FailureOr<std::string> text = scalar(value, key);
                     if (failed(text))
                       return failure();
                     (key == "leaf" ? spec.leaf : spec.internal) = *text;
                     return success();
                   });
  if (failed(parsed))
    return failure();
  return spec;
}

FailureOr<Manifest> ManifestParser::parseDocument(yaml::Node *root) {
  Manifest manifest;
  manifest.path = path_;
  std::optional<std::string> structure;
  yaml::Node *structureNode = nullptr;
  LogicalResult parsed = forEachEntry(
      root, "the manifest",
      {"name", "structure", "cells", "seq2seq", "tree", "custom"},
      {"name", "structure", "cells"},
      [&](StringRef key, yaml::Node *value) -> LogicalResult {
        if (key == "name") {
          FailureOr<std::string> name = scalar(value, "name");
          if (failed(name))
            return failure();
          if (name->empty() || !llvm::all_of(*name, [](char c) {
                return llvm::isAlnum(c) || c == '_' || c == '-' || c == '.';
              }))
            return error(value) << "model name '" << *name
                                << "' may only use [A-Za-z0-9_.-]";
          manifest.name = *name;
          return success();
        }
        if (key == "structure") {
          FailureOr<std::string> text = scalar(value, "structure");
          if (failed(text))
            return failure();
          structure = *text;
          structureNode = value;
          return success();
        }
        if (key == "cells") {
          if (failed(rejectAlias(value)))
            return failure();
          auto *sequence = dyn_cast<yaml::SequenceNode>(value);
          if (!sequence)
            return error(value) << "cells must be a list";
          for (yaml::Node &item : *sequence) {
            FailureOr<CellSpec> cell = parseCell(&item);
            if (failed(cell))
              return failure();
            if (manifest.findCell(cell->name))
              return error(&item)
                     << "cell '" << cell->name << "' is defined twice";
            manifest.cells.push_back(std::move(*cell));
          }
          if (manifest.cells.empty())
            return error(value) << "cells is empty";
          return success();
        }
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
        return forEachEntry(value, "custom", {"unfolder"}, {"unfolder"},
                            [&](StringRef, yaml::Node *name) {
                              FailureOr<std::string> unfolder =
                                  identifier(name, "unfolder");
                              if (failed(unfolder))
                                return failure();
                              manifest.customUnfolder = *unfolder;
                              return success();
                            });
      });
  if (failed(parsed))
    return failure();
  static const std::pair<StringRef, Structure> kStructures[] = {
      {"chain", Structure::Chain},
      {"seq2seq", Structure::Seq2Seq},
      {"tree", Structure::Tree},
      {"custom", Structure::Custom}};
  auto known = llvm::find_if(kStructures, [&](const auto &entry) {
    return entry.first == *structure;
  });
  if (known == std::end(kStructures))
    return error(structureNode) << "structure '" << *structure
                                << "' must be one of: chain, seq2seq, tree, "
                                   "custom";
  manifest.structure = known->second;
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
