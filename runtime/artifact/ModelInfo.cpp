//===- ModelInfo.cpp - What a loaded cellpack holds, schema-free ----------===//
//
// describeModel copies what an application may want to know of a model out
// of the FlatBuffers tables into the plain types of cellrun/Model.h, so that
// no public header names the file format.
//
//===----------------------------------------------------------------------===//
#include "artifact/Artifact.h"

#include <map>

namespace cellrun {

const char *elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return "f32";
  case ElementType::F64:
    return "f64";
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  case ElementType::I64:
    return "i64";
  case ElementType::I32:
    return "i32";
  case ElementType::I16:
    return "i16";
  case ElementType::I8:
    return "i8";
  case ElementType::Bool:
    return "bool";
  }
  return "?";
}

const char *unfoldingName(UnfoldingKind unfolding) {
  switch (unfolding) {
  case UnfoldingKind::Chain:
    return "chain";
  case UnfoldingKind::Seq2Seq:
    return "seq2seq";
  case UnfoldingKind::Tree:
    return "tree";
  case UnfoldingKind::Custom:
    return "custom";
  }
  return "?";
}

const char *precisionName(ComputePrecision precision) {
  switch (precision) {
  case ComputePrecision::FP32:
    return "fp32";
  case ComputePrecision::TF32:
    return "tf32";
  case ComputePrecision::BF16:
    return "bf16";
  case ComputePrecision::FP16:
    return "fp16";
  }
  return "?";
}

std::pair<int, size_t> poolRowType(const cellpack::TensorSpec &spec) {
  size_t bytes = dtypeSize(spec.dtype());
  if (spec.row_shape())
    for (int64_t dim : *spec.row_shape())
      bytes *= static_cast<size_t>(dim);
  return {static_cast<int>(spec.dtype()), bytes};
}

namespace {

std::string text(const flatbuffers::String *string) {
  return string ? string->str() : std::string();
}

const char *roleName(cellpack::Role role) {
  switch (role) {
  case cellpack::Role::Input:
    return "input";
  case cellpack::Role::State:
    return "state";
  case cellpack::Role::Child:
    return "child";
  case cellpack::Role::Output:
    return "output";
  case cellpack::Role::Memory:
    return "memory";
  case cellpack::Role::MemoryMask:
    return "memory_mask";
  }
  return "?";
}

// The loader has checked every enum value against the schema, so the
// public enums (declared in the schema's order) take them as they are.
std::vector<CellTensorInfo> describeTensors(
    const flatbuffers::Vector<flatbuffers::Offset<cellpack::TensorSpec>>
        *specs) {
  std::vector<CellTensorInfo> tensors;
  for (uint32_t i = 0; specs && i < specs->size(); ++i) {
    const cellpack::TensorSpec &spec = *specs->Get(i);
    CellTensorInfo tensor;
    tensor.name = spec.name()->str();
    tensor.role = roleName(spec.role());
    tensor.type = static_cast<ElementType>(spec.dtype());
    if (spec.row_shape())
      tensor.rowShape.assign(spec.row_shape()->begin(),
                             spec.row_shape()->end());
    tensor.emitted = spec.emit();
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

CellInfo describeCell(const LoadedArtifact &artifact,
                      const cellpack::CellType &cell) {
  CellInfo info;
  info.name = cell.name()->str();
  info.inputs = describeTensors(cell.inputs());
  info.outputs = describeTensors(cell.outputs());
  info.batchSizes = artifact.batchSizes(cell);
  if (const auto *weights = cell.weights()) {
    info.weightCount = weights->size();
    for (const cellpack::Weight *weight : *weights)
      info.weightBytes += weight->data() ? weight->data()->size() : 0;
  }
  const cellpack::CellCode &code = artifact.code(cell);
  info.kernelCount = code.kernel_names() ? code.kernel_names()->size() : 0;
  if (code.cubins())
    for (const cellpack::CodeImage *image : *code.cubins())
      info.gpuArchitectures.push_back(image->arch()->str());
  if (code.ptx() && code.ptx()->size())
    info.ptxArchitecture = text(code.ptx_arch());
  return info;
}

} // namespace

ModelInfo describeModel(const LoadedArtifact &artifact) {
  static_assert(static_cast<int>(ElementType::Bool) ==
                    static_cast<int>(cellpack::DType::Bool),
                "ElementType follows the schema's DType");
  static_assert(static_cast<int>(UnfoldingKind::Custom) ==
                    static_cast<int>(cellpack::Structure::Custom),
                "Unfolding follows the schema's Structure");
  static_assert(static_cast<int>(ComputePrecision::FP16) ==
                    static_cast<int>(cellpack::Precision::FP16),
                "Precision follows the schema's Precision");
  const cellpack::Model &model = artifact.model();
  ModelInfo info;
  info.source = artifact.displayName();
  info.fileBytes = artifact.fileSize();
  info.formatVersion = artifact.formatVersion();
  info.checksum = artifact.checksum();
  info.name = text(model.model_name());
  info.producer = text(model.producer());
  const cellpack::Unfolding &unfolding = *model.unfolding();
  info.unfolding = static_cast<UnfoldingKind>(unfolding.structure());
  info.unfolder = text(unfolding.unfolder());
  info.precision = static_cast<ComputePrecision>(model.precision());
  if (info.unfolding == UnfoldingKind::Seq2Seq) {
    info.beginToken = unfolding.bos_token();
    info.endToken = unfolding.eos_token();
    info.maxDecodeLength = unfolding.max_decode_length();
  }
  std::map<std::pair<int, size_t>, bool> rowTypes;
  for (const cellpack::CellType *cell : artifact.cells()) {
    info.cells.push_back(describeCell(artifact, *cell));
    for (const auto *specs : {cell->inputs(), cell->outputs()})
      for (uint32_t i = 0; specs && i < specs->size(); ++i)
        rowTypes[poolRowType(*specs->Get(i))] = true;
  }
  for (const auto &[type, unused] : rowTypes)
    info.poolBytesPerRow += type.second;
  return info;
}

} // namespace cellrun
