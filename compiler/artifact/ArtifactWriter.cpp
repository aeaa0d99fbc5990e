//===- ArtifactWriter.cpp - The compiled model as a .cellpack ------------===//
//
// Builds the Model (cell types with roles, weights, per-batch-size plans;
// compiled code; unfolding spec) in its own FlatBuffer, then wraps it in the
// size-prefixed Artifact envelope with the format version and the payload's
// checksum.
//
//===----------------------------------------------------------------------===//
#include "compiler/artifact/ArtifactWriter.h"
#include "compiler/artifact/PlanWriter.h"

#include "Checksum.h"
#include "cell/IR/WeightData.h"

using namespace mlir;
using namespace mlir::cell;
using namespace cellc;
namespace fb = flatbuffers;

static cellpack::Role toRole(Role role) {
  switch (role) {
  case Role::State:
    return cellpack::Role::State;
  case Role::Child:
    return cellpack::Role::Child;
  case Role::Output:
    return cellpack::Role::Output;
  case Role::Memory:
    return cellpack::Role::Memory;
  case Role::MemoryMask:
    return cellpack::Role::MemoryMask;
  default:
    return cellpack::Role::Input;
  }
}

static fb::Offset<cellpack::TensorSpec> tensorSpec(fb::FlatBufferBuilder &fbb,
                                                   DictionaryAttr attrs,
                                                   Type type, Role role) {
  auto tensor = type.cast<RankedTensorType>();
  std::vector<int64_t> rowShape(tensor.getShape().begin() + 1,
                                tensor.getShape().end());
  auto text = [&](StringRef key) -> const char * {
    auto value = attrs ? attrs.getAs<StringAttr>(key) : StringAttr();
    return value ? value.getValue().data() : nullptr;
  };
  auto child =
      attrs ? attrs.getAs<IntegerAttr>(CellDialect::kChildAttr) : IntegerAttr();
  std::string name =
      text(CellDialect::kNameAttr) ? text(CellDialect::kNameAttr) : "";
  return cellpack::CreateTensorSpecDirect(
      fbb, name.c_str(), toRole(role), toDType(tensor.getElementType()),
      &rowShape, text(CellDialect::kUpdatesAttr), child ? child.getInt() : -1,
      text(CellDialect::kFromAttr), attrs && attrs.get(CellDialect::kEmitAttr),
      text(CellDialect::kProjectedByAttr));
}

static FailureOr<fb::Offset<cellpack::CellType>>
writeCellType(fb::FlatBufferBuilder &fbb, CellOp generic,
              const CellBinary &binary, Precision precision) {
  std::vector<fb::Offset<cellpack::TensorSpec>> inputs, outputs;
  for (unsigned i = 0; i < generic.getNumArguments(); ++i)
    inputs.push_back(tensorSpec(fbb, generic.getArgAttrDict(i),
                                generic.getArgumentTypes()[i],
                                generic.getArgumentRole(i)));
  for (unsigned i = 0; i < generic.getNumResults(); ++i)
    outputs.push_back(tensorSpec(fbb, generic.getResultAttrDict(i),
                                 generic.getResultTypes()[i],
                                 generic.getResultRole(i)));
  WeightTable weights;
  std::vector<fb::Offset<cellpack::BatchPlan>> plans;
  int64_t slotBytes = 0;
  for (CellOp copy : batchCopiesOf(generic->getParentOfType<ModuleOp>(),
                                   generic.getSymName())) {
    SmallVector<const codegen::KernelInfo *> kernels;
    for (const codegen::KernelInfo &kernel : binary.program.kernels)
      if (kernel.cell == copy.getSymName())
        kernels.push_back(&kernel);
    auto plan = writeBatchPlan(fbb, copy, kernels, precision, weights);
    if (failed(plan))
      return failure();
    plans.push_back(*plan);
    slotBytes = copy->getAttrOfType<IntegerAttr>("cell.slot_bytes").getInt();
  }
  std::vector<fb::Offset<cellpack::Weight>> weightTables;
  for (auto [index, value] : llvm::enumerate(weights.values)) {
    std::optional<std::vector<char>> bytes = constantBytes(value);
    if (!bytes)
      return generic.emitOpError() << "has a weight whose data is missing";
    auto type = value.getType().cast<RankedTensorType>();
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    std::string name = weightName(value, "weight" + std::to_string(index));
    fbb.ForceVectorAlignment(bytes->size(), sizeof(uint8_t), 64);
    auto data = fbb.CreateVector(
        reinterpret_cast<const uint8_t *>(bytes->data()), bytes->size());
    weightTables.push_back(cellpack::CreateWeight(
        fbb, fbb.CreateString(name), toDType(type.getElementType()),
        fbb.CreateVector(shape), data));
  }
  auto priority = generic->getAttrOfType<IntegerAttr>("cell.priority");
  return cellpack::CreateCellTypeDirect(
      fbb, generic.getSymName().str().c_str(), priority ? priority.getInt() : 0,
      &inputs, &outputs, &weightTables, &plans, slotBytes);
}

static fb::Offset<cellpack::CellCode> writeCode(fb::FlatBufferBuilder &fbb,
                                                const CellBinary &binary) {
  std::vector<fb::Offset<fb::String>> names;
  for (const std::string &name : binary.program.kernelNames())
    names.push_back(fbb.CreateString(name));
  std::vector<fb::Offset<cellpack::CodeImage>> images;
  for (const codegen::CompiledArch &arch : binary.compiled.cubins) {
    fbb.ForceVectorAlignment(arch.cubin.size(), sizeof(uint8_t), 64);
    auto cubin =
        fbb.CreateVector(reinterpret_cast<const uint8_t *>(arch.cubin.data()),
                         arch.cubin.size());
    images.push_back(
        cellpack::CreateCodeImage(fbb, fbb.CreateString(arch.arch), cubin));
  }
  return cellpack::CreateCellCodeDirect(
      fbb, binary.program.cell.c_str(), &names, &images,
      binary.compiled.ptxArch.c_str(), binary.compiled.ptx.c_str(),
      binary.program.source.c_str());
}

static fb::Offset<cellpack::Unfolding>
writeUnfolding(fb::FlatBufferBuilder &fbb, ModuleOp module) {
  auto spec = module->getAttrOfType<DictionaryAttr>("cell.unfolding");
  auto text = [&](StringRef key) -> fb::Offset<fb::String> {
    auto value = spec ? spec.getAs<StringAttr>(key) : StringAttr();
    return value ? fbb.CreateString(value.getValue().str()) : 0;
  };
  auto number = [&](StringRef key) -> int64_t {
    auto value = spec ? spec.getAs<IntegerAttr>(key) : IntegerAttr();
    return value ? value.getInt() : 0;
  };
  std::vector<fb::Offset<cellpack::StatePair>> pairs;
  if (auto initial =
          spec ? spec.getAs<DictionaryAttr>("initial_state") : DictionaryAttr())
    for (NamedAttribute pair : initial)
      pairs.push_back(cellpack::CreateStatePair(
          fbb, fbb.CreateString(pair.getName().str()),
          fbb.CreateString(pair.getValue().cast<StringAttr>().str())));
  StringRef structure = "custom";
  if (auto value = spec ? spec.getAs<StringAttr>("structure") : StringAttr())
    structure = value.getValue();
  auto kind = structure == "chain"     ? cellpack::Structure::Chain
              : structure == "seq2seq" ? cellpack::Structure::Seq2Seq
              : structure == "tree"    ? cellpack::Structure::Tree
                                       : cellpack::Structure::Custom;
  auto encoder = text("encoder"), decoder = text("decoder");
  auto tokenInput = text("token_input"), tokenOutput = text("token_output");
  auto leaf = text("leaf"), internal = text("internal");
  auto unfolder = text("unfolder");
  return cellpack::CreateUnfolding(
      fbb, kind, encoder, decoder, fbb.CreateVector(pairs), tokenInput,
      tokenOutput, number("bos_token"), number("eos_token"),
      number("max_decode_length"), leaf, internal, number("arity"), unfolder);
}

FailureOr<std::vector<uint8_t>>
cellc::writeArtifact(const ArtifactInputs &inputs) {
  ModuleOp module = inputs.module;
  fb::FlatBufferBuilder fbb(1 << 20);
  std::vector<fb::Offset<cellpack::CellType>> cells;
  std::vector<fb::Offset<cellpack::CellCode>> code;
  for (CellOp cell : module.getOps<CellOp>()) {
    if (cell->hasAttr(CellDialect::kBatchSizeAttr))
      continue;
    const CellBinary *binary = nullptr;
    for (const CellBinary &candidate : inputs.binaries)
      if (candidate.program.cell == cell.getSymName())
        binary = &candidate;
    if (!binary)
      return cell.emitOpError("has no generated code");
    auto type = writeCellType(fbb, cell, *binary, inputs.precision);
    if (failed(type))
      return failure();
    cells.push_back(*type);
    code.push_back(writeCode(fbb, *binary));
  }
  auto name = module->getAttrOfType<StringAttr>("cell.model");
  auto unfolding = writeUnfolding(fbb, module);
  auto model = cellpack::CreateModelDirect(
      fbb, inputs.producer.c_str(), name ? name.getValue().data() : "",
      static_cast<cellpack::Precision>(inputs.precision), &cells, &code,
      unfolding);
  fbb.Finish(model);

  fb::FlatBufferBuilder envelope(fbb.GetSize() + 1024);
  envelope.ForceVectorAlignment(fbb.GetSize(), sizeof(uint8_t), 64);
  auto payload = envelope.CreateVector(fbb.GetBufferPointer(), fbb.GetSize());
  auto artifact = cellpack::CreateArtifact(
      envelope, cellpack::kFormatVersion,
      cellpack::checksum(fbb.GetBufferPointer(), fbb.GetSize()), payload);
  envelope.FinishSizePrefixed(artifact, cellpack::ArtifactIdentifier());
  return std::vector<uint8_t>(envelope.GetBufferPointer(),
                              envelope.GetBufferPointer() + envelope.GetSize());
}
