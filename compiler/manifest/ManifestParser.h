//===- ManifestParser.h - YAML/JSON manifest into a Manifest ---*- C++ -*-===//
//
// The parser behind parseManifest, shared by ManifestParser.cpp (the document,
// its scalars and mappings) and ManifestSections.cpp (cells, roles, seq2seq
// and tree). Internal to the manifest library: callers use Manifest.h.
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_MANIFEST_MANIFESTPARSER_H
#define CELLC_MANIFEST_MANIFESTPARSER_H

#include "compiler/manifest/Manifest.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

#include <string>

namespace cellc {

/// Walks a manifest's YAML node tree into a Manifest, reporting every
/// problem at the line and column of the offending key or value.
class ManifestParser {
public:
  ManifestParser(llvm::SourceMgr &sourceMgr, llvm::StringRef path,
                 mlir::MLIRContext &context, const bool &syntaxFailed)
      : sourceMgr_(sourceMgr), path_(path), context_(context),
        syntaxFailed_(syntaxFailed) {}

  mlir::FailureOr<Manifest> parseDocument(llvm::yaml::Node *root);

private:
  mlir::LocationAttr locOf(llvm::yaml::Node *node) {
    // After a syntax error (a NUL byte, say) LLVM's YAML parser may hand out
    // nodes whose range points outside the text: the file, without a line.
    llvm::SMLoc start = node ? node->getSourceRange().Start : llvm::SMLoc();
    if (!start.isValid() || sourceMgr_.FindBufferContainingLoc(start) == 0)
      return mlir::FileLineColLoc::get(&context_, path_, 0, 0);
    auto [line, column] = sourceMgr_.getLineAndColumn(start);
    return mlir::FileLineColLoc::get(&context_, path_, line, column);
  }
  /// YAML aliases (`*name`) cannot be resolved by LLVM's streaming YAML
  /// parser: an error that says so, rather than a wrong type.
  mlir::LogicalResult rejectAlias(llvm::yaml::Node *node) {
    if (auto *alias = llvm::dyn_cast_or_null<llvm::yaml::AliasNode>(node))
      return error(node) << "YAML aliases ('*" << alias->getName()
                         << "') are not supported in a manifest; write the "
                            "value out";
    return mlir::success();
  }

  /// An error at `node`; silent once the YAML itself was malformed, since
  /// the syntax error already says what is wrong.
  mlir::InFlightDiagnostic error(llvm::yaml::Node *node) {
    mlir::InFlightDiagnostic diag = mlir::emitError(locOf(node));
    if (syntaxFailed_)
      diag.abandon();
    return diag;
  }

  /// Calls `handle(key, value)` for every entry of mapping `node`; keys must
  /// be among `allowed` and appear once; `required` keys must be present.
  mlir::LogicalResult
  forEachEntry(llvm::yaml::Node *node, llvm::StringRef what,
               llvm::ArrayRef<llvm::StringRef> allowed,
               llvm::ArrayRef<llvm::StringRef> required,
               llvm::function_ref<mlir::LogicalResult(llvm::StringRef,
                                                      llvm::yaml::Node *)>
                   handle);

  mlir::FailureOr<std::string> scalar(llvm::yaml::Node *node,
                                      llvm::StringRef what);
  mlir::FailureOr<int64_t> integer(llvm::yaml::Node *node, llvm::StringRef what,
                                   int64_t min, int64_t max);
  mlir::FailureOr<bool> boolean(llvm::yaml::Node *node, llvm::StringRef what);
  mlir::FailureOr<std::string> identifier(llvm::yaml::Node *node,
                                          llvm::StringRef what);

  mlir::FailureOr<CellSpec> parseCell(llvm::yaml::Node *node);
  mlir::LogicalResult parseRoles(llvm::yaml::Node *node, bool outputs,
                                 CellSpec &cell);
  mlir::FailureOr<RoleSpec> parseRole(llvm::StringRef name,
                                      llvm::yaml::Node *node, bool output);
  mlir::LogicalResult parseBatchSizes(llvm::yaml::Node *node, CellSpec &cell);
  mlir::FailureOr<Seq2SeqSpec> parseSeq2Seq(llvm::yaml::Node *node);
  mlir::FailureOr<TreeSpec> parseTree(llvm::yaml::Node *node);
  /// The model's `name`: letters, digits, '_', '-' and '.'.
  mlir::LogicalResult parseModelName(llvm::yaml::Node *node,
                                     Manifest &manifest);
  /// The `cells` list, each cell defined once.
  mlir::LogicalResult parseCells(llvm::yaml::Node *node, Manifest &manifest);
  /// The `custom` section: the name of the unfolder.
  mlir::LogicalResult parseCustom(llvm::yaml::Node *node, Manifest &manifest);
  /// The structure that `name` (the value at `node`) names.
  mlir::FailureOr<Structure> structureOf(llvm::StringRef name,
                                         llvm::yaml::Node *node);

  llvm::SourceMgr &sourceMgr_;
  std::string path_;
  mlir::MLIRContext &context_;
  const bool &syntaxFailed_;
  /// The key whose value forEachEntry is handing out (for locations that
  /// should point at a name rather than at its value).
  llvm::yaml::Node *currentKey_ = nullptr;
};

} // namespace cellc

#endif // CELLC_MANIFEST_MANIFESTPARSER_H
