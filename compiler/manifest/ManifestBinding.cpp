//===- ManifestBinding.cpp - Manifest roles onto imported cells ----------===//
//
// Matches the manifest's role names with the ONNX names of the imported cell
// arguments and results, checks the types the roles imply (a state output has
// its state's type, a child input its source's type, tokens are integers),
// and writes the roles and the unfolding spec into the IR.
//
//===----------------------------------------------------------------------===//
#include "compiler/manifest/ManifestBinding.h"
#include "compiler/manifest/TokenVocabulary.h"

#include "cell/IR/CellOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace cellc;
using mlir::cell::CellDialect;
using mlir::cell::CellOp;
using mlir::cell::Role;

namespace {
/// The ONNX names of a cell's arguments or results, and their types.
struct NamedValues {
  std::vector<std::string> names;
  std::vector<Type> types;

  int find(StringRef name) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name)
        return static_cast<int>(i);
    return -1;
  }
};
} // namespace

static NamedValues argumentsOf(CellOp cell) {
  NamedValues values;
  for (unsigned i = 0; i < cell.getNumArguments(); ++i) {
    values.names.push_back(cell.getArgumentName(i).str());
    values.types.push_back(cell.getArgumentTypes()[i]);
  }
  return values;
}

static NamedValues resultsOf(CellOp cell) {
  NamedValues values;
  for (unsigned i = 0; i < cell.getNumResults(); ++i) {
    values.names.push_back(cell.getResultName(i).str());
    values.types.push_back(cell.getResultTypes()[i]);
  }
  return values;
}

/// Every ONNX name has a role and every role names an ONNX value.
static LogicalResult matchNames(const CellSpec &spec,
                                const std::vector<RoleSpec> &roles,
                                const NamedValues &values, StringRef what) {
  for (const RoleSpec &role : roles)
    if (values.find(role.name) < 0)
      return emitError(role.loc)
             << "cell '" << spec.name << "': '" << role.name
             << "' matches no ONNX " << what << " of " << spec.onnxPath
             << " (its " << what << "s are: " << llvm::join(values.names, ", ")
             << ")";
  for (const std::string &name : values.names)
    if (llvm::none_of(roles, [&](const RoleSpec &r) { return r.name == name; }))
      return emitError(spec.loc)
             << "cell '" << spec.name << "': ONNX " << what << " '" << name
             << "' has no role in the manifest";
  return success();
}

static DictionaryAttr roleAttrs(Builder &b, const RoleSpec &role) {
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr(CellDialect::kNameAttr, b.getStringAttr(role.name)),
      b.getNamedAttr(CellDialect::kRoleAttr,
                     mlir::cell::RoleAttr::get(b.getContext(), role.role))};
  if (!role.updates.empty())
    attrs.push_back(b.getNamedAttr(CellDialect::kUpdatesAttr,
                                   b.getStringAttr(role.updates)));
  if (role.role == Role::Child)
    attrs.push_back(b.getNamedAttr(CellDialect::kChildAttr,
                                   b.getI64IntegerAttr(role.child)));
  if (role.role == Role::Child || role.role == Role::Memory)
    attrs.push_back(
        b.getNamedAttr(CellDialect::kFromAttr, b.getStringAttr(role.from)));
  if (role.emit)
    attrs.push_back(b.getNamedAttr(CellDialect::kEmitAttr, b.getUnitAttr()));
  return b.getDictionaryAttr(attrs);
}

static LogicalResult bindCell(const CellSpec &spec, CellOp cell) {
  NamedValues args = argumentsOf(cell), results = resultsOf(cell);
  if (failed(matchNames(spec, spec.inputs, args, "input")) ||
      failed(matchNames(spec, spec.outputs, results, "output")))
    return failure();
  for (const RoleSpec &output : spec.outputs) {
    if (output.updates.empty())
      continue;
    if (args.find(output.updates) < 0)
      return emitError(output.loc)
             << "cell '" << spec.name << "': state output '" << output.name
             << "' updates '" << output.updates
             << "', which is not an input of the cell";
    Type outputType = results.types[results.find(output.name)];
    Type stateType = args.types[args.find(output.updates)];
    if (outputType != stateType)
      return emitError(output.loc)
             << "cell '" << spec.name << "': state output '" << output.name
             << "' has type " << outputType << " but the state input '"
             << output.updates << "' it updates has type " << stateType;
  }
  Builder b(cell.getContext());
  for (const RoleSpec &input : spec.inputs)
    cell.setArgAttrs(args.find(input.name), roleAttrs(b, input));
  for (const RoleSpec &output : spec.outputs)
    cell.setResultAttrs(results.find(output.name), roleAttrs(b, output));
  return success();
}

static Type typeOf(CellOp cell, StringRef name, bool result) {
  NamedValues values = result ? resultsOf(cell) : argumentsOf(cell);
  int index = values.find(name);
  return index < 0 ? Type() : values.types[index];
}

/// A token is one integer per batch row: tensor<?xi64> or tensor<?xi32>.
static bool isTokenType(Type type) {
  auto tensor = type.dyn_cast<RankedTensorType>();
  return tensor && tensor.getRank() == 1 &&
         tensor.getElementType().isSignlessInteger() &&
         tensor.getElementType().getIntOrFloatBitWidth() >= 32;
}

/// A memory is [batch, positions, width] and is filled from an encoder
/// output [batch, width] of its element type; a memory_mask is float
/// [batch, positions] with the memories' positions.
static LogicalResult checkMemoryTypes(const CellSpec &decoderSpec,
                                      CellOp encoder, CellOp decoder) {
  int64_t positions = ShapedType::kDynamic;
  std::string first;
  const RoleSpec *mask = nullptr;
  for (const RoleSpec &input : decoderSpec.inputs) {
    if (input.role == Role::MemoryMask)
      mask = &input;
    if (input.role != Role::Memory)
      continue;
    auto memory = typeOf(decoder, input.name, false).cast<RankedTensorType>();
    auto source =
        typeOf(encoder, input.from, true).dyn_cast<RankedTensorType>();
    if (memory.getRank() != 3 || ShapedType::isDynamic(memory.getDimSize(1)) ||
        ShapedType::isDynamic(memory.getDimSize(2)))
      return emitError(input.loc)
             << "memory '" << input.name << "' has type " << memory
             << "; a memory is [batch, positions, width] with fixed positions "
                "(the longest source it holds) and width";
    if (!source || source.getRank() != 2 ||
        source.getDimSize(1) != memory.getDimSize(2) ||
        source.getElementType() != memory.getElementType())
      return emitError(input.loc)
             << "memory '" << input.name << "' (" << memory
             << ") holds one row of the encoder's '" << input.from
             << "' a position, but that output has type " << source;
    if (!first.empty() && memory.getDimSize(1) != positions)
      return emitError(input.loc)
             << "memory '" << input.name << "' has " << memory.getDimSize(1)
             << " positions but memory '" << first << "' has " << positions;
    positions = memory.getDimSize(1);
    first = input.name;
  }
  if (!mask)
    return success();
  auto type = typeOf(decoder, mask->name, false).cast<RankedTensorType>();
  if (type.getRank() != 2 || !type.getElementType().isF32() ||
      type.getDimSize(1) != positions)
    return emitError(mask->loc)
           << "memory_mask '" << mask->name << "' has type " << type
           << " but must be tensor<?x" << positions
           << "xf32> (1 where the memory holds a source step, 0 past it)";
  return success();
}

static LogicalResult checkSeq2SeqTypes(const Seq2SeqSpec &spec, CellOp encoder,
                                       CellOp decoder) {
  for (const auto &[decoderInput, encoderInput] : spec.initialState) {
    Type target = typeOf(decoder, decoderInput, false);
    Type source = typeOf(encoder, encoderInput, false);
    if (target != source)
      return emitError(spec.loc["initial_state"])
             << "initial_state: decoder state '" << decoderInput
             << "' has type " << target << " but encoder state '"
             << encoderInput << "' has type " << source;
  }
  Type tokenIn = typeOf(decoder, spec.tokenInput, false);
  Type tokenOut = typeOf(decoder, spec.tokenOutput, true);
  if (!isTokenType(tokenIn) || tokenIn != tokenOut)
    return emitError(spec.loc["token_input"])
           << "token_input '" << spec.tokenInput << "' (" << tokenIn
           << ") and token_output '" << spec.tokenOutput << "' (" << tokenOut
           << ") must both be one integer per row (tensor<?xi64>)";
  return success();
}

static LogicalResult checkTreeTypes(const CellSpec &internalSpec, CellOp leaf,
                                    CellOp internal) {
  for (const RoleSpec &input : internalSpec.inputs) {
    if (input.role != Role::Child)
      continue;
    Type childType = typeOf(internal, input.name, false);
    Type sourceType = typeOf(leaf, input.from, true);
    if (childType != sourceType)
      return emitError(input.loc)
             << "child input '" << input.name << "' has type " << childType
             << " but the '" << input.from << "' it takes has type "
             << sourceType;
  }
  for (unsigned i = 0; i < leaf.getNumResults(); ++i) {
    StringRef name = leaf.getResultName(i);
    Type internalType = typeOf(internal, name, true);
    if (internalType != leaf.getResultTypes()[i])
      return emitError(internalSpec.loc)
             << "internal output '" << name << "' has type " << internalType
             << " but the leaf's has type " << leaf.getResultTypes()[i];
  }
  return success();
}

static DictionaryAttr unfoldingAttr(Builder &b, const Manifest &manifest) {
  SmallVector<NamedAttribute> attrs = {b.getNamedAttr(
      "structure", b.getStringAttr(structureName(manifest.structure)))};
  if (const auto &s = manifest.seq2seq) {
    SmallVector<NamedAttribute> initial;
    for (const auto &[to, from] : s->initialState)
      initial.push_back(b.getNamedAttr(to, b.getStringAttr(from)));
    attrs.append(
        {b.getNamedAttr("encoder", b.getStringAttr(s->encoder)),
         b.getNamedAttr("decoder", b.getStringAttr(s->decoder)),
         b.getNamedAttr("initial_state", b.getDictionaryAttr(initial)),
         b.getNamedAttr("token_input", b.getStringAttr(s->tokenInput)),
         b.getNamedAttr("token_output", b.getStringAttr(s->tokenOutput)),
         b.getNamedAttr("bos_token", b.getI64IntegerAttr(s->bosToken)),
         b.getNamedAttr("eos_token", b.getI64IntegerAttr(s->eosToken)),
         b.getNamedAttr("max_decode_length",
                        b.getI64IntegerAttr(s->maxDecodeLength))});
  }
  if (const auto &t = manifest.tree)
    attrs.append({b.getNamedAttr("leaf", b.getStringAttr(t->leaf)),
                  b.getNamedAttr("internal", b.getStringAttr(t->internal)),
                  b.getNamedAttr("arity", b.getI64IntegerAttr(t->arity))});
  if (!manifest.customUnfolder.empty())
    attrs.push_back(
        b.getNamedAttr("unfolder", b.getStringAttr(manifest.customUnfolder)));
  return b.getDictionaryAttr(attrs);
}

void cellc::setCellSchedule(CellOp cell, ArrayRef<int64_t> batchSizes,
                            int64_t priority) {
  Builder b(cell.getContext());
  cell->setAttr("cell.batch_sizes", b.getDenseI64ArrayAttr(batchSizes));
  cell->setAttr("cell.priority", b.getI64IntegerAttr(priority));
}

LogicalResult cellc::bindManifest(const Manifest &manifest, ModuleOp module) {
  auto lookup = [&](StringRef name) {
    return module.lookupSymbol<CellOp>(name);
  };
  for (const CellSpec &spec : manifest.cells) {
    CellOp cell = lookup(spec.name);
    if (!cell)
      return emitError(spec.loc)
             << "cell '" << spec.name << "' was not imported";
    if (failed(bindCell(spec, cell)))
      return failure();
    setCellSchedule(cell, spec.batchSizes, manifest.effectivePriority(spec));
  }
  if (const auto &s = manifest.seq2seq)
    if (failed(checkSeq2SeqTypes(*s, lookup(s->encoder), lookup(s->decoder))) ||
        failed(checkSeq2SeqTokens(*s, lookup(s->decoder))) ||
        failed(checkMemoryTypes(*manifest.findCell(s->decoder),
                                lookup(s->encoder), lookup(s->decoder))))
      return failure();
  if (const auto &t = manifest.tree)
    if (failed(checkTreeTypes(*manifest.findCell(t->internal), lookup(t->leaf),
                              lookup(t->internal))))
      return failure();
  Builder b(module.getContext());
  module->setAttr("cell.model", b.getStringAttr(manifest.name));
  module->setAttr("cell.unfolding", unfoldingAttr(b, manifest));
  return success();
}
