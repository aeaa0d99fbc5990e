//===- ModelStructure.cpp - The unfolding spec, resolved to indices -------===//
#include "request/ModelStructure.h"

#include <algorithm>
#include <map>
#include <string>

using namespace cellrun;

size_t cellrun::tensorRowBytes(const cellpack::TensorSpec &spec) {
  size_t bytes = dtypeSize(spec.dtype());
  if (spec.row_shape())
    for (int64_t dim : *spec.row_shape())
      bytes *= static_cast<size_t>(dim);
  return bytes;
}

namespace {

Status fail(const LoadedArtifact &artifact, const std::string &message) {
  return Status(StatusCode::DataLoss,
                artifact.displayName() + ": unfolding: " + message);
}

int32_t findTensor(
    const flatbuffers::Vector<flatbuffers::Offset<cellpack::TensorSpec>> *specs,
    const std::string &name) {
  if (specs)
    for (uint32_t i = 0; i < specs->size(); ++i)
      if (specs->Get(i)->name()->str() == name)
        return static_cast<int32_t>(i);
  return -1;
}

/// For every cell input that reaches a Gather's indices (through casts and
/// reshapes) in a kernel whose table is a weight: the table's length.
std::map<uint32_t, int64_t> tableLimits(const cellpack::CellType &cell) {
  std::map<uint32_t, int64_t> limits;
  if (!cell.plans() || cell.plans()->size() == 0)
    return limits;
  const cellpack::BatchPlan *plan = cell.plans()->Get(0);
  if (!plan->steps())
    return limits;
  for (const cellpack::TaskStep *step : *plan->steps()) {
    const cellpack::KernelStep *kernel = step->step_as_KernelStep();
    if (!kernel || !kernel->inputs() || !kernel->region() ||
        !kernel->region()->values() || !kernel->region()->ops())
      continue;
    const cellpack::PortableRegion *region = kernel->region();
    std::vector<int64_t> origin(region->values()->size(), -1);
    for (uint32_t v = 0;
         v < region->num_inputs() && v < kernel->inputs()->size(); ++v)
      if (kernel->inputs()->Get(v)->kind() == cellpack::ValueKind::CellInput)
        origin[v] = kernel->inputs()->Get(v)->index();
    for (const cellpack::PortableOp *op : *region->ops()) {
      if (!op->operands() || !op->results() || op->operands()->size() == 0)
        continue;
      auto code = op->opcode();
      uint32_t first = op->operands()->Get(0);
      if (code == cellpack::OpCode::Cast ||
          code == cellpack::OpCode::Identity ||
          code == cellpack::OpCode::Reshape ||
          code == cellpack::OpCode::Squeeze ||
          code == cellpack::OpCode::Unsqueeze) {
        for (uint32_t result : *op->results())
          if (result < origin.size() && first < origin.size())
            origin[result] = origin[first];
      }
      if (code != cellpack::OpCode::Gather || op->operands()->size() != 2)
        continue;
      uint32_t indices = op->operands()->Get(1);
      if (first >= region->num_inputs() || first >= kernel->inputs()->size() ||
          indices >= origin.size() || origin[indices] < 0)
        continue;
      const cellpack::ValueRef *table = kernel->inputs()->Get(first);
      if (table->kind() != cellpack::ValueKind::Weight || !table->shape())
        continue;
      int64_t axis = op->axis();
      if (axis < 0)
        axis += table->shape()->size();
      if (axis >= 0 && axis < static_cast<int64_t>(table->shape()->size()))
        limits[origin[indices]] = table->shape()->Get(axis);
    }
  }
  return limits;
}

/// The derived fields of every part and of the structure (ModelStructure.h).
void finishRoles(ModelStructure &structure) {
  for (CellRoles &roles : structure.cells) {
    const auto *inputs = roles.cell->inputs();
    const auto *outputs = roles.cell->outputs();
    roles.inputCount = inputs ? inputs->size() : 0;
    roles.outputCount = outputs ? outputs->size() : 0;
    roles.emittedAndStates = roles.emitted;
    for (uint32_t o = 0; o < roles.outputCount; ++o) {
      const cellpack::TensorSpec &spec = *outputs->Get(o);
      roles.outputNames.push_back(spec.name()->str());
      roles.finalNames.push_back("final_" + spec.name()->str());
      roles.outputTypes.push_back(spec.dtype());
      roles.outputRowBytes.push_back(tensorRowBytes(spec));
      roles.allOutputs.push_back(o);
    }
    for (uint32_t output : roles.stateOutputs)
      if (std::find(roles.emittedAndStates.begin(),
                    roles.emittedAndStates.end(),
                    output) == roles.emittedAndStates.end())
        roles.emittedAndStates.push_back(output);
  }
  structure.tokenOutputs = {structure.decoderTokenOutput};
}

/// The cell that projects input `spec` of cell `name`: one input (what
/// requests give) and one output of `spec`'s row type, and itself no
/// projected input.
Result<const cellpack::CellType *>
projectionOf(const LoadedArtifact &artifact, const std::string &name,
             const cellpack::TensorSpec &spec) {
  std::string by = spec.projected_by()->str();
  std::string what = "cell '" + name + "': input '" + spec.name()->str() +
                     "' is projected by '" + by + "', ";
  auto cell = artifact.cell(by);
  if (!cell.ok())
    return fail(artifact, what + "which is not in the artifact");
  const cellpack::CellType &projection = *cell.value();
  const auto *inputs = projection.inputs();
  const auto *outputs = projection.outputs();
  if (!inputs || inputs->size() != 1 || !outputs || outputs->size() != 1 ||
      inputs->Get(0)->role() != cellpack::Role::Input ||
      inputs->Get(0)->projected_by() ||
      outputs->Get(0)->role() != cellpack::Role::Output)
    return fail(artifact, what + "which is not one input to one output");
  const cellpack::TensorSpec &product = *outputs->Get(0);
  if (product.dtype() != spec.dtype() ||
      tensorRowBytes(product) != tensorRowBytes(spec))
    return fail(artifact, what + "whose output rows are not the input's");
  return &projection;
}

/// Whether an input of another cell of `artifact` is projected by `cell`.
bool projects(const LoadedArtifact &artifact, const cellpack::CellType &cell) {
  for (const cellpack::CellType *other : artifact.cells())
    for (uint32_t i = 0; other->inputs() && i < other->inputs()->size(); ++i)
      if (const auto *by = other->inputs()->Get(i)->projected_by())
        if (by->string_view() == cell.name()->string_view())
          return true;
  return false;
}

Result<CellRoles> rolesOf(const LoadedArtifact &artifact,
                          const std::string &name, const char *part) {
  auto cell = artifact.cell(name);
  if (!cell.ok())
    return fail(artifact, std::string("the ") + part + " cell '" + name +
                              "' is not in the artifact");
  CellRoles roles;
  roles.cell = cell.value();
  auto cells = artifact.cells();
  for (uint32_t i = 0; i < cells.size(); ++i)
    if (cells[i] == roles.cell)
      roles.index = i;
  const auto *inputs = roles.cell->inputs();
  const auto *outputs = roles.cell->outputs();
  uint32_t inputCount = inputs ? inputs->size() : 0;
  roles.updatedBy.assign(inputCount, -1);
  roles.childIndex.assign(inputCount, -1);
  roles.childOutput.assign(inputCount, -1);
  auto limits = tableLimits(*roles.cell);
  for (uint32_t i = 0; i < inputCount; ++i) {
    const cellpack::TensorSpec *spec = inputs->Get(i);
    if (spec->role() == cellpack::Role::Input) {
      const cellpack::CellType *projection = nullptr;
      const cellpack::TensorSpec *given = spec;
      if (spec->projected_by()) {
        auto found = projectionOf(artifact, name, *spec);
        if (!found.ok())
          return found.status();
        projection = found.value();
        given = projection->inputs()->Get(0);
      }
      roles.dataInputs.push_back(i);
      roles.dataLimits.push_back(!projection && limits.count(i) ? limits[i]
                                                                : 0);
      roles.dataRowBytes.push_back(tensorRowBytes(*given));
      roles.dataTypes.push_back(given->dtype());
      roles.dataSpecs.push_back(given);
      roles.dataProjections.push_back(projection);
    }
    if (spec->role() == cellpack::Role::Child)
      roles.childIndex[i] = spec->child();
  }
  if (outputs)
    for (uint32_t o = 0; o < outputs->size(); ++o) {
      const cellpack::TensorSpec *spec = outputs->Get(o);
      if (spec->emit() || spec->role() == cellpack::Role::Output)
        roles.emitted.push_back(o);
      if (spec->role() == cellpack::Role::State) {
        roles.stateOutputs.push_back(o);
        if (spec->updates()) {
          int32_t input = findTensor(inputs, spec->updates()->str());
          if (input < 0)
            return fail(artifact, "cell '" + name + "': output '" +
                                      spec->name()->str() + "' updates '" +
                                      spec->updates()->str() +
                                      "', which is not an input");
          roles.updatedBy[input] = static_cast<int32_t>(o);
        }
      }
    }
  return roles;
}

/// The decoder's memory and memory_mask inputs: each memory [positions,
/// width] is filled from an encoder output of `width` elements of its type,
/// all memories have the same positions and the mask is float [positions].
Status resolveMemories(const LoadedArtifact &artifact,
                       const cellpack::CellType &encoder,
                       const cellpack::CellType &decoder,
                       ModelStructure &structure) {
  const auto *inputs = decoder.inputs();
  for (uint32_t i = 0; inputs && i < inputs->size(); ++i) {
    const cellpack::TensorSpec &spec = *inputs->Get(i);
    std::string name = spec.name()->str();
    if (spec.role() == cellpack::Role::MemoryMask) {
      if (structure.memoryMaskInput >= 0)
        return fail(artifact, "the decoder has two memory_mask inputs");
      structure.memoryMaskInput = static_cast<int32_t>(i);
      continue;
    }
    if (spec.role() != cellpack::Role::Memory)
      continue;
    std::string from = spec.from() ? spec.from()->str() : "";
    int32_t output = findTensor(encoder.outputs(), from);
    const auto *shape = spec.row_shape();
    if (output < 0 || !shape || shape->size() != 2 || shape->Get(0) < 1 ||
        shape->Get(1) < 1)
      return fail(artifact, "memory '" + name + "' is filled from '" + from +
                                "', which is no encoder output, or is not "
                                "[positions, width] a row");
    const cellpack::TensorSpec &source = *encoder.outputs()->Get(output);
    size_t positionBytes = tensorRowBytes(spec) / shape->Get(0);
    if (source.dtype() != spec.dtype() ||
        tensorRowBytes(source) != positionBytes)
      return fail(artifact, "memory '" + name + "' holds rows of " +
                                std::to_string(positionBytes) +
                                " bytes, but the encoder's '" + from +
                                "' has " +
                                std::to_string(tensorRowBytes(source)));
    uint32_t positions = static_cast<uint32_t>(shape->Get(0));
    if (structure.memoryPositions != 0 &&
        structure.memoryPositions != positions)
      return fail(artifact, "the decoder's memories differ in positions");
    structure.memoryPositions = positions;
    structure.memories.push_back(
        {i, static_cast<uint32_t>(output), positionBytes});
  }
  if (structure.memoryMaskInput >= 0) {
    const cellpack::TensorSpec &mask = *inputs->Get(structure.memoryMaskInput);
    if (structure.memories.empty() || mask.dtype() != cellpack::DType::F32 ||
        tensorRowBytes(mask) != structure.memoryPositions * sizeof(float))
      return fail(artifact, "the memory_mask is not one float a position of "
                            "the decoder's memory");
  }
  return Status::ok();
}

/// Memory roles belong to a seq2seq decoder only.
Status refuseMemories(const LoadedArtifact &artifact,
                      const cellpack::CellType &cell) {
  if (cell.inputs())
    for (const cellpack::TensorSpec *spec : *cell.inputs())
      if (spec->role() == cellpack::Role::Memory ||
          spec->role() == cellpack::Role::MemoryMask)
        return fail(artifact, "cell '" + cell.name()->str() + "': input '" +
                                  spec->name()->str() +
                                  "' is a memory, which only a seq2seq "
                                  "decoder may have");
  return Status::ok();
}

/// The text of an optional flatbuffers string ("" when absent).
std::string textOf(const flatbuffers::String *s) {
  return s ? s->str() : std::string();
}

/// A chain: one cell, and the cells that project its inputs (named by them).
Status analyzeChain(const LoadedArtifact &artifact, ModelStructure &structure) {
  std::vector<const cellpack::CellType *> steps;
  for (const cellpack::CellType *cell : artifact.cells())
    if (!projects(artifact, *cell))
      steps.push_back(cell);
  if (steps.size() != 1)
    return fail(artifact,
                "a chain has exactly one cell (besides the cells that "
                "project its inputs), this artifact has " +
                    std::to_string(steps.size()));
  auto roles = rolesOf(artifact, steps[0]->name()->str(), "chain");
  if (!roles.ok())
    return roles.status();
  structure.cells.push_back(std::move(roles).value());
  return Status::ok();
}

/// The decoder's token input and output, whether the token feeds back on
/// the device, BOS, EOS and the decode length.
Status resolveDecoderTokens(const LoadedArtifact &artifact,
                            const cellpack::Unfolding &unfolding,
                            const cellpack::CellType &dec,
                            ModelStructure &structure) {
  int32_t tokenIn = findTensor(dec.inputs(), textOf(unfolding.token_input()));
  int32_t tokenOut =
      findTensor(dec.outputs(), textOf(unfolding.token_output()));
  if (tokenIn < 0 || tokenOut < 0)
    return fail(artifact, "the decoder has no token input '" +
                              textOf(unfolding.token_input()) +
                              "' or token output '" +
                              textOf(unfolding.token_output()) + "'");
  structure.decoderTokenInput = tokenIn;
  structure.decoderTokenOutput = tokenOut;
  const cellpack::TensorSpec &tokenInSpec = *dec.inputs()->Get(tokenIn);
  const cellpack::TensorSpec &tokenOutSpec = *dec.outputs()->Get(tokenOut);
  structure.tokenFeedbackOnDevice =
      tokenInSpec.dtype() == tokenOutSpec.dtype() &&
      tensorRowBytes(tokenInSpec) == tensorRowBytes(tokenOutSpec);
  structure.bosToken = unfolding.bos_token();
  structure.eosToken = unfolding.eos_token();
  structure.maxDecodeLength = unfolding.max_decode_length();
  if (structure.maxDecodeLength < 1 ||
      structure.maxDecodeLength > kMaxDecodeLength)
    return fail(artifact, "max_decode_length " +
                              std::to_string(structure.maxDecodeLength) +
                              " is not in 1.." +
                              std::to_string(kMaxDecodeLength));
  structure.decodeLimit = structure.maxDecodeLength;
  return Status::ok();
}

/// The decoder inputs whose initial state is an updated encoder state.
Status resolveInitialState(const LoadedArtifact &artifact,
                           const cellpack::Unfolding &unfolding,
                           const CellRoles &encoder,
                           const cellpack::CellType &dec,
                           ModelStructure &structure) {
  structure.initialFromEncoder.assign(dec.inputs()->size(), -1);
  if (unfolding.initial_state())
    for (const cellpack::StatePair *pair : *unfolding.initial_state()) {
      int32_t to = findTensor(dec.inputs(), textOf(pair->decoder_input()));
      int32_t from =
          findTensor(encoder.cell->inputs(), textOf(pair->encoder_input()));
      int32_t output = from < 0 ? -1 : encoder.updatedBy[from];
      if (to < 0 || output < 0)
        return fail(artifact, "initial state '" +
                                  textOf(pair->decoder_input()) + "' <- '" +
                                  textOf(pair->encoder_input()) +
                                  "' names no decoder input or no updated "
                                  "encoder state");
      structure.initialFromEncoder[to] = output;
    }
  return Status::ok();
}

/// A seq2seq model: its encoder and decoder cells, the decoder's tokens,
/// initial state and memories.
Status analyzeSeq2Seq(const LoadedArtifact &artifact,
                      const cellpack::Unfolding &unfolding,
                      ModelStructure &structure) {
  auto encoder = rolesOf(artifact, textOf(unfolding.encoder()), "encoder");
  auto decoder = rolesOf(artifact, textOf(unfolding.decoder()), "decoder");
  if (!encoder.ok() || !decoder.ok())
    return !encoder.ok() ? encoder.status() : decoder.status();
  const cellpack::CellType &dec = *decoder->cell;
  if (Status tokens = resolveDecoderTokens(artifact, unfolding, dec, structure);
      !tokens.isOk())
    return tokens;
  // BOS is the decoder's first token: it must index the table its token
  // input reads (from the end when negative, as a Gather does).
  for (size_t d = 0; d < decoder->dataInputs.size(); ++d) {
    int64_t limit = decoder->dataLimits[d];
    if (decoder->dataInputs[d] != structure.decoderTokenInput || limit <= 0)
      continue;
    if (structure.bosToken < -limit || structure.bosToken >= limit)
      return fail(artifact, "bos_token " + std::to_string(structure.bosToken) +
                                " is outside the decoder's vocabulary (0.." +
                                std::to_string(limit - 1) + ")");
  }
  if (Status initial = resolveInitialState(artifact, unfolding, encoder.value(),
                                           dec, structure);
      !initial.isOk())
    return initial;
  if (Status memory = resolveMemories(artifact, *encoder->cell, dec, structure);
      !memory.isOk())
    return memory;
  structure.cells.push_back(std::move(encoder).value());
  structure.cells.push_back(std::move(decoder).value());
  return Status::ok();
}

/// A tree: its leaf and internal cells, its arity, and the leaf and
/// internal output each child input of the internal cell takes.
Status analyzeTree(const LoadedArtifact &artifact,
                   const cellpack::Unfolding &unfolding,
                   ModelStructure &structure) {
  auto leaf = rolesOf(artifact, textOf(unfolding.leaf()), "leaf");
  auto internal = rolesOf(artifact, textOf(unfolding.internal()), "internal");
  if (!leaf.ok() || !internal.ok())
    return !leaf.ok() ? leaf.status() : internal.status();
  structure.arity = unfolding.arity();
  if (structure.arity < 1)
    return fail(artifact, "a tree's arity must be at least 1");
  CellRoles &node = internal.value();
  const auto *inputs = node.cell->inputs();
  for (uint32_t i = 0; i < inputs->size(); ++i) {
    if (node.childIndex[i] < 0)
      continue;
    if (node.childIndex[i] >= structure.arity)
      return fail(artifact, "child input '" + inputs->Get(i)->name()->str() +
                                "' is of child " +
                                std::to_string(node.childIndex[i]) +
                                " of an arity-" +
                                std::to_string(structure.arity) + " tree");
    std::string from = textOf(inputs->Get(i)->from());
    int32_t output = findTensor(node.cell->outputs(), from);
    int32_t leafOutput = findTensor(leaf->cell->outputs(), from);
    if (output < 0 || output != leafOutput)
      return fail(artifact, "child input '" + inputs->Get(i)->name()->str() +
                                "' takes '" + from +
                                "', which the leaf and internal cells do "
                                "not both output at the same position");
    node.childOutput[i] = output;
  }
  structure.cells.push_back(std::move(leaf).value());
  structure.cells.push_back(std::move(internal).value());
  return Status::ok();
}

/// A custom model: its unfolder's name and every cell of the artifact.
Status analyzeCustom(const LoadedArtifact &artifact,
                     const cellpack::Unfolding &unfolding,
                     ModelStructure &structure) {
  structure.unfolder = textOf(unfolding.unfolder());
  for (const cellpack::CellType *cell : artifact.cells()) {
    auto roles = rolesOf(artifact, cell->name()->str(), "custom");
    if (!roles.ok())
      return roles.status();
    structure.cells.push_back(std::move(roles).value());
  }
  return Status::ok();
}

/// The checks on every part once the structure is resolved: memories only
/// in a seq2seq decoder, projected inputs only in a chain.
Status checkParts(const LoadedArtifact &artifact,
                  const ModelStructure &structure) {
  for (uint32_t part = 0; part < structure.cells.size(); ++part)
    if (!(structure.kind == cellpack::Structure::Seq2Seq && part == 1))
      if (Status status = refuseMemories(artifact, *structure.cells[part].cell);
          !status.isOk())
        return status;
  // The engine projects a chain's inputs at admission, nothing else's.
  for (const CellRoles &roles : structure.cells)
    for (size_t d = 0; d < roles.dataProjections.size(); ++d)
      if (roles.dataProjections[d] &&
          structure.kind != cellpack::Structure::Chain)
        return fail(artifact, "cell '" + roles.cell->name()->str() +
                                  "': input '" +
                                  roles.dataSpecs[d]->name()->str() +
                                  "' is projected at admission, which only "
                                  "a chain's inputs can be");
  return Status::ok();
}

/// The parts of `structure` for its kind of unfolding.
Status analyzeParts(const LoadedArtifact &artifact,
                    const cellpack::Unfolding &unfolding,
                    ModelStructure &structure) {
  switch (unfolding.structure()) {
  case cellpack::Structure::Chain:
    return analyzeChain(artifact, structure);
  case cellpack::Structure::Seq2Seq:
    return analyzeSeq2Seq(artifact, unfolding, structure);
  case cellpack::Structure::Tree:
    return analyzeTree(artifact, unfolding, structure);
  case cellpack::Structure::Custom:
    return analyzeCustom(artifact, unfolding, structure);
  }
  return Status::ok();
}

} // namespace

Result<ModelStructure> cellrun::analyzeModel(const LoadedArtifact &artifact) {
  const cellpack::Unfolding &unfolding = *artifact.model().unfolding();
  ModelStructure structure;
  structure.kind = unfolding.structure();
  if (Status status = analyzeParts(artifact, unfolding, structure);
      !status.isOk())
    return status;
  if (Status status = checkParts(artifact, structure); !status.isOk())
    return status;
  finishRoles(structure);
  return structure;
}
