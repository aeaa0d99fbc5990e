//===- ManifestSections.cpp - A manifest's cells, seq2seq and tree -------===//
//
// The ManifestParser methods that read the sections of a manifest: each cell
// (ONNX file, batch sizes, priority, the role of every input and output), the
// seq2seq section and the tree section.
//
//===----------------------------------------------------------------------===//
#include "compiler/manifest/ManifestParser.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace cellc;
namespace yaml = llvm::yaml;

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
