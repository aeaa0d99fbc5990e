//===- ManifestChecks.cpp - Rules that relate a manifest's parts ---------===//
//
// After parsing: the structure's cells exist, states pair up, seq2seq and tree
// sections name real cells and roles. Everything here is decided from the
// manifest alone; types are compared later against the ONNX files
// (ManifestBinding.cpp).
//
//===----------------------------------------------------------------------===//
#include "compiler/manifest/Manifest.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace cellc;
using mlir::cell::Role;

namespace cellc {
LogicalResult checkManifest(const Manifest &manifest, MLIRContext &context);
} // namespace cellc

static const RoleSpec *findRole(const std::vector<RoleSpec> &specs,
                                StringRef name) {
  for (const RoleSpec &spec : specs)
    if (spec.name == name)
      return &spec;
  return nullptr;
}

static std::string cellNames(const Manifest &manifest) {
  std::vector<std::string> names;
  for (const CellSpec &cell : manifest.cells)
    names.push_back(cell.name);
  return llvm::join(names, ", ");
}

/// The cell named `name` in a structure section, or an error at `loc`.
static const CellSpec *requireCell(const Manifest &manifest, StringRef name,
                                   StringRef what, LocationAttr loc) {
  if (const CellSpec *cell = manifest.findCell(name))
    return cell;
  emitError(loc) << what << " '" << name
                 << "' is not a cell of the manifest (cells are: "
                 << cellNames(manifest) << ")";
  return nullptr;
}

/// Every state input is updated by exactly one state output, and every
/// `updates` names a state input. With `requireState`, at least one state.
static LogicalResult checkStatePairs(const CellSpec &cell, bool requireState) {
  llvm::StringSet<> updated;
  for (const RoleSpec &output : cell.outputs) {
    if (output.role != Role::State)
      continue;
    if (output.updates.empty())
      return emitError(output.loc)
             << "state output '" << output.name << "' of cell '" << cell.name
             << "' must say which state input it updates ('updates:')";
    const RoleSpec *input = findRole(cell.inputs, output.updates);
    if (!input || input->role != Role::State)
      return emitError(output.loc)
             << "state output '" << output.name << "' of cell '" << cell.name
             << "' updates '" << output.updates
             << "', which is not a state input of the cell";
    if (!updated.insert(output.updates).second)
      return emitError(output.loc)
             << "state input '" << output.updates << "' of cell '" << cell.name
             << "' is updated by two outputs";
  }
  bool hasState = false;
  for (const RoleSpec &input : cell.inputs) {
    if (input.role == Role::Child)
      return emitError(input.loc)
             << "input '" << input.name << "' of cell '" << cell.name
             << "' has role child, which only a tree's internal cell may use";
    if (input.role != Role::State)
      continue;
    hasState = true;
    if (!updated.count(input.name))
      return emitError(input.loc)
             << "state input '" << input.name << "' of cell '" << cell.name
             << "' is updated by no state output";
  }
  if (requireState && !hasState)
    return emitError(cell.loc) << "cell '" << cell.name
                               << "' has no state input; a recurrent cell "
                                  "needs at least one";
  return success();
}

/// Memory roles belong to a seq2seq decoder: each memory is filled from an
/// encoder output, and one memory_mask at most goes with them.
static LogicalResult checkMemoryRoles(const Manifest &manifest) {
  const CellSpec *decoder =
      manifest.seq2seq ? manifest.findCell(manifest.seq2seq->decoder) : nullptr;
  const CellSpec *encoder =
      manifest.seq2seq ? manifest.findCell(manifest.seq2seq->encoder) : nullptr;
  if (manifest.seq2seq && (!encoder || !decoder || encoder == decoder))
    return success(); // checkSeq2Seq says what is wrong
  for (const CellSpec &cell : manifest.cells) {
    const RoleSpec *memory = nullptr, *mask = nullptr;
    for (const RoleSpec &input : cell.inputs) {
      bool isMask = input.role == Role::MemoryMask;
      if (input.role != Role::Memory && !isMask)
        continue;
      if (&cell != decoder)
        return emitError(input.loc)
               << "input '" << input.name << "' of cell '" << cell.name
               << "' has role " << (isMask ? "memory_mask" : "memory")
               << ", which only a seq2seq decoder may use";
      if (isMask) {
        if (mask)
          return emitError(input.loc)
                 << "the decoder '" << cell.name
                 << "' has two memory_mask inputs, '" << mask->name << "' and '"
                 << input.name << "'";
        mask = &input;
        continue;
      }
      memory = &input;
      const RoleSpec *source = findRole(encoder->outputs, input.from);
      if (!source)
        return emitError(input.loc) << "memory '" << input.name
                                    << "' is filled 'from: " << input.from
                                    << "', which is no output of the encoder '"
                                    << encoder->name << "'";
    }
    if (mask && !memory)
      return emitError(mask->loc)
             << "memory_mask '" << mask->name << "' of cell '" << cell.name
             << "' masks no memory: give the decoder an input of role memory";
  }
  return success();
}

static LogicalResult checkSeq2Seq(const Manifest &manifest,
                                  const Seq2SeqSpec &spec) {
  const CellSpec *encoder =
      requireCell(manifest, spec.encoder, "encoder", spec.loc["encoder"]);
  const CellSpec *decoder =
      encoder
          ? requireCell(manifest, spec.decoder, "decoder", spec.loc["decoder"])
          : nullptr;
  if (!encoder || !decoder)
    return failure();
  if (encoder == decoder)
    return emitError(spec.loc["decoder"])
           << "the encoder and the decoder must differ";
  if (failed(checkStatePairs(*encoder, true)) ||
      failed(checkStatePairs(*decoder, true)))
    return failure();
  const RoleSpec *tokenIn = findRole(decoder->inputs, spec.tokenInput);
  if (!tokenIn || tokenIn->role != Role::Input)
    return emitError(spec.loc["token_input"])
           << "token_input '" << spec.tokenInput
           << "' must be an input of role input of the "
              "decoder '"
           << decoder->name << "'";
  const RoleSpec *tokenOut = findRole(decoder->outputs, spec.tokenOutput);
  if (!tokenOut || tokenOut->role != Role::Output)
    return emitError(spec.loc["token_output"])
           << "token_output '" << spec.tokenOutput
           << "' must be an output of role output of "
              "the decoder '"
           << decoder->name << "'";
  for (const RoleSpec &input : decoder->inputs)
    if (input.role == Role::Input && input.name != spec.tokenInput)
      return emitError(input.loc)
             << "decoder input '" << input.name
             << "' has role input, but a decoder step is fed only its "
                "token_input '"
             << spec.tokenInput << "'";
  llvm::StringSet<> initialized;
  for (const auto &[decoderInput, encoderInput] : spec.initialState) {
    const RoleSpec *target = findRole(decoder->inputs, decoderInput);
    if (!target || target->role != Role::State)
      return emitError(spec.loc["initial_state"])
             << "initial_state: '" << decoderInput
             << "' is not a state input of the decoder";
    const RoleSpec *source = findRole(encoder->inputs, encoderInput);
    if (!source || source->role != Role::State)
      return emitError(spec.loc["initial_state"])
             << "initial_state: '" << encoderInput
             << "' is not a state input of the encoder";
    initialized.insert(decoderInput);
  }
  for (const RoleSpec &input : decoder->inputs)
    if (input.role == Role::State && !initialized.count(input.name))
      return emitError(spec.loc["initial_state"])
             << "initial_state does not say where decoder state '" << input.name
             << "' starts from";
  if (spec.bosToken == spec.eosToken)
    return emitError(spec.loc["eos_token"])
           << "bos_token and eos_token must differ";
  if (manifest.cells.size() != 2)
    return emitError(spec.loc.section)
           << "a seq2seq model has exactly two cells, not "
           << manifest.cells.size();
  return success();
}

static LogicalResult checkTree(const Manifest &manifest, const TreeSpec &spec) {
  const CellSpec *leaf =
      requireCell(manifest, spec.leaf, "leaf", spec.loc["leaf"]);
  const CellSpec *internal = leaf
                                 ? requireCell(manifest, spec.internal,
                                               "internal", spec.loc["internal"])
                                 : nullptr;
  if (!leaf || !internal)
    return failure();
  if (leaf == internal)
    return emitError(spec.loc["internal"])
           << "the leaf and internal cells must differ";
  for (const CellSpec *cell : {leaf, internal})
    for (const RoleSpec &output : cell->outputs)
      if (output.role == Role::State && !output.updates.empty())
        return emitError(output.loc)
               << "in a tree, state output '" << output.name
               << "' is the node's own state and updates nothing";
  for (const RoleSpec &input : leaf->inputs)
    if (input.role != Role::Input)
      return emitError(input.loc)
             << "leaf input '" << input.name << "' must have role input";
  std::vector<llvm::StringSet<>> taken(spec.arity);
  for (const RoleSpec &input : internal->inputs) {
    if (input.role == Role::State)
      return emitError(input.loc) << "internal input '" << input.name
                                  << "' must have role child or input";
    if (input.role != Role::Child)
      continue;
    if (input.child >= spec.arity)
      return emitError(input.loc)
             << "child " << input.child << " is out of range for arity "
             << spec.arity;
    const RoleSpec *source = findRole(leaf->outputs, input.from);
    if (!source || source->role != Role::State)
      return emitError(input.loc)
             << "'from: " << input.from
             << "' names no state output of the leaf '" << leaf->name << "'";
    if (!taken[input.child].insert(input.from).second)
      return emitError(input.loc) << "child " << input.child << "'s '"
                                  << input.from << "' is taken twice";
  }
  for (int64_t child = 0; child < spec.arity; ++child)
    if (taken[child].empty())
      return emitError(spec.loc["arity"])
             << "no input of the internal cell '" << internal->name
             << "' takes child " << child;
  for (const RoleSpec &output : leaf->outputs) {
    const RoleSpec *match = findRole(internal->outputs, output.name);
    if (output.role == Role::State && (!match || match->role != Role::State))
      return emitError(internal->loc)
             << "the internal cell must have a state output '" << output.name
             << "' like the leaf: a node's state does not depend on its kind";
  }
  if (manifest.cells.size() != 2)
    return emitError(spec.loc.section)
           << "a tree model has exactly two cells, not "
           << manifest.cells.size();
  return success();
}

/// The section a structure needs, and no section of another structure.
static LogicalResult checkSections(const Manifest &manifest,
                                   MLIRContext &context) {
  auto loc = FileLineColLoc::get(&context, manifest.path, 1, 1);
  Structure structure = manifest.structure;
  auto expect = [&](bool present, Structure owner, StringRef key) {
    if (present && structure != owner)
      return emitError(loc)
                 << "section '" << key << "' belongs to structure " << key
                 << ", but this model is " << structureName(structure),
             failure();
    if (!present && structure == owner)
      return emitError(loc)
                 << "structure " << key << " needs a section '" << key << "'",
             failure();
    return success();
  };
  return success(
      succeeded(expect(manifest.seq2seq.has_value(), Structure::Seq2Seq,
                       "seq2seq")) &&
      succeeded(expect(manifest.tree.has_value(), Structure::Tree, "tree")) &&
      succeeded(expect(!manifest.customUnfolder.empty(), Structure::Custom,
                       "custom")));
}

LogicalResult cellc::checkManifest(const Manifest &manifest,
                                   MLIRContext &context) {
  if (failed(checkSections(manifest, context)))
    return failure();
  if (failed(checkMemoryRoles(manifest)))
    return failure();
  switch (manifest.structure) {
  case Structure::Chain:
    if (manifest.cells.size() != 1)
      return emitError(manifest.cells[1].loc)
             << "a chain model has exactly one cell, not "
             << manifest.cells.size();
    return checkStatePairs(manifest.cells.front(), /*requireState=*/true);
  case Structure::Seq2Seq:
    return checkSeq2Seq(manifest, *manifest.seq2seq);
  case Structure::Tree:
    return checkTree(manifest, *manifest.tree);
  case Structure::Custom:
    return success();
  }
  return success();
}
