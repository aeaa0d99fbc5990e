//===- ArtifactJson.cpp - A loaded cellpack as JSON -----------------------===//
//
// One function per schema table, each building its fields in schema order
// as an nlohmann ordered_json-like document whose floats stay float (so
// 0.1 is written as 0.1). Enum values are written by name. Absent strings
// are null, absent vectors empty arrays; optional TensorSpec fields appear
// only when set. Strings that are not UTF-8 (a damaged artifact's names)
// are written with U+FFFD in place of the bad bytes.
//
//===----------------------------------------------------------------------===//
#include "cellrun/ArtifactJson.h"

#include "artifact/Artifact.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

namespace cellrun {
namespace {

using namespace cellpack;

/// Keys in the order they are set; float fields written with a float's
/// shortest digits.
using Json =
    nlohmann::basic_json<nlohmann::ordered_map, std::vector, std::string, bool,
                         std::int64_t, std::uint64_t, float>;

/// The enum's name in the schema; "unknown(N)" for a value outside it (the
/// loader rejects those, so only a bug shows one).
template <typename E> std::string nameOf(E value, const char *(*name)(E)) {
  const char *text = name(value);
  if (text && *text)
    return text;
  return "unknown(" + std::to_string(static_cast<int>(value)) + ")";
}

Json stringOrNull(const flatbuffers::String *text) {
  return text ? Json(text->str()) : Json(nullptr);
}

template <typename V> Json arrayOf(const V *values) {
  Json list = Json::array();
  for (uint32_t i = 0; values && i < values->size(); ++i)
    list.push_back(values->Get(i));
  return list;
}

Json stringArray(
    const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>
        *values) {
  Json list = Json::array();
  for (uint32_t i = 0; values && i < values->size(); ++i)
    list.push_back(values->Get(i)->str());
  return list;
}

Json unfoldingJson(const Unfolding &unfolding) {
  Json json;
  json["structure"] = nameOf(unfolding.structure(), EnumNameStructure);
  json["encoder"] = stringOrNull(unfolding.encoder());
  json["decoder"] = stringOrNull(unfolding.decoder());
  Json pairs = Json::array();
  for (uint32_t i = 0;
       unfolding.initial_state() && i < unfolding.initial_state()->size();
       ++i) {
    const StatePair *pair = unfolding.initial_state()->Get(i);
    Json item;
    item["decoder_input"] = stringOrNull(pair->decoder_input());
    item["encoder_input"] = stringOrNull(pair->encoder_input());
    pairs.push_back(std::move(item));
  }
  json["initial_state"] = std::move(pairs);
  json["token_input"] = stringOrNull(unfolding.token_input());
  json["token_output"] = stringOrNull(unfolding.token_output());
  json["bos_token"] = unfolding.bos_token();
  json["eos_token"] = unfolding.eos_token();
  json["max_decode_length"] = unfolding.max_decode_length();
  json["leaf"] = stringOrNull(unfolding.leaf());
  json["internal"] = stringOrNull(unfolding.internal());
  json["arity"] = unfolding.arity();
  json["unfolder"] = stringOrNull(unfolding.unfolder());
  return json;
}

Json tensorSpecs(
    const flatbuffers::Vector<flatbuffers::Offset<TensorSpec>> *specs) {
  Json list = Json::array();
  for (uint32_t i = 0; specs && i < specs->size(); ++i) {
    const TensorSpec *spec = specs->Get(i);
    Json json;
    json["name"] = spec->name()->str();
    json["role"] = nameOf(spec->role(), EnumNameRole);
    json["dtype"] = nameOf(spec->dtype(), EnumNameDType);
    json["row_shape"] = arrayOf(spec->row_shape());
    if (spec->updates())
      json["updates"] = stringOrNull(spec->updates());
    if (spec->child() != -1)
      json["child"] = spec->child();
    if (spec->from())
      json["from"] = stringOrNull(spec->from());
    if (spec->emit())
      json["emit"] = true;
    if (spec->projected_by())
      json["projected_by"] = spec->projected_by()->str();
    list.push_back(std::move(json));
  }
  return list;
}

/// The members of a ValueRef.
Json valueRefJson(const ValueRef &ref) {
  Json json;
  json["kind"] = nameOf(ref.kind(), EnumNameValueKind);
  if (ref.kind() == ValueKind::Workspace)
    json["offset"] = ref.offset();
  else
    json["index"] = ref.index();
  json["dtype"] = nameOf(ref.dtype(), EnumNameDType);
  json["shape"] = arrayOf(ref.shape());
  return json;
}

Json valueRef(const ValueRef *ref) {
  return ref ? valueRefJson(*ref) : Json(nullptr);
}

Json gemmStep(const GemmStep &gemm) {
  Json json;
  json["kind"] = "gemm";
  json["m"] = gemm.m();
  json["n"] = gemm.n();
  json["k"] = gemm.k();
  json["trans_a"] = gemm.trans_a();
  json["trans_b"] = gemm.trans_b();
  json["alpha"] = gemm.alpha();
  json["beta"] = gemm.beta();
  json["precision"] = nameOf(gemm.precision(), EnumNamePrecision);
  json["a"] = valueRef(gemm.a());
  json["b"] = valueRef(gemm.b());
  json["c"] = valueRef(gemm.c());
  json["d"] = valueRef(gemm.d());
  return json;
}

Json operands(const flatbuffers::Vector<flatbuffers::Offset<ValueRef>> *refs,
              const flatbuffers::Vector<Access> *access) {
  Json list = Json::array();
  for (uint32_t i = 0; refs && i < refs->size(); ++i) {
    Json json = valueRefJson(*refs->Get(i));
    if (access && i < access->size())
      json["access"] = nameOf(access->Get(i), EnumNameAccess);
    list.push_back(std::move(json));
  }
  return list;
}

Json kernelStep(const KernelStep &kernel) {
  Json json;
  json["kind"] = "kernel";
  json["name"] = kernel.name()->str();
  json["shape"] = nameOf(kernel.shape(), EnumNameKernelShape);
  json["row_width"] = kernel.row_width();
  json["block_size"] = kernel.block_size();
  if (kernel.shape() == KernelShape::RowReduction)
    json["blocks_per_row"] = kernel.blocks_per_row();
  json["inputs"] = operands(kernel.inputs(), kernel.input_access());
  json["outputs"] = operands(kernel.outputs(), kernel.output_access());
  Json params = Json::array();
  for (uint32_t i = 0; kernel.params() && i < kernel.params()->size(); ++i) {
    const KernelParam *param = kernel.params()->Get(i);
    Json item;
    item["kind"] = nameOf(param->kind(), EnumNameParamKind);
    if (param->kind() != ParamKind::RowCount)
      item["index"] = param->index();
    params.push_back(std::move(item));
  }
  json["params"] = std::move(params);
  const PortableRegion &region = *kernel.region();
  Json ops = Json::array();
  for (uint32_t i = 0; region.ops() && i < region.ops()->size(); ++i)
    ops.push_back(nameOf(region.ops()->Get(i)->opcode(), EnumNameOpCode));
  json["region"]["values"] = region.values() ? region.values()->size() : 0u;
  json["region"]["ops"] = std::move(ops);
  if (const GemmEpilogue *epilogue = kernel.gemm_epilogue()) {
    json["gemm_epilogue"]["kernel"] = epilogue->kernel()->str();
    json["gemm_epilogue"]["segments"] = epilogue->segments();
    json["gemm_epilogue"]["gemm_input"] = epilogue->gemm_input();
  }
  return json;
}

Json batchPlan(const BatchPlan &plan) {
  Json json;
  json["batch_size"] = plan.batch_size();
  json["workspace_bytes"] = plan.workspace_bytes();
  json["peak_bytes"] = plan.peak_bytes();
  Json steps = Json::array();
  for (uint32_t i = 0; plan.steps() && i < plan.steps()->size(); ++i) {
    const TaskStep *step = plan.steps()->Get(i);
    if (const GemmStep *gemm = step->step_as_GemmStep())
      steps.push_back(gemmStep(*gemm));
    else if (const KernelStep *kernel = step->step_as_KernelStep())
      steps.push_back(kernelStep(*kernel));
    else
      steps.push_back(nullptr); // Rejected by the loader.
  }
  json["steps"] = std::move(steps);
  return json;
}

Json cellCode(const CellCode &code) {
  Json json;
  Json cubins = Json::array();
  for (uint32_t i = 0; code.cubins() && i < code.cubins()->size(); ++i) {
    const CodeImage *image = code.cubins()->Get(i);
    Json item;
    item["arch"] = image->arch()->str();
    item["bytes"] = image->cubin() ? image->cubin()->size() : 0u;
    cubins.push_back(std::move(item));
  }
  json["cubins"] = std::move(cubins);
  json["ptx_arch"] = stringOrNull(code.ptx_arch());
  json["ptx_bytes"] = code.ptx() ? code.ptx()->size() : 0u;
  json["kernel_names"] = stringArray(code.kernel_names());
  return json;
}

Json cellType(const CellType &cell, const CellCode &code) {
  Json json;
  json["name"] = cell.name()->str();
  json["priority"] = cell.priority();
  json["slot_bytes"] = cell.slot_bytes();
  json["inputs"] = tensorSpecs(cell.inputs());
  json["outputs"] = tensorSpecs(cell.outputs());
  Json weights = Json::array();
  for (uint32_t i = 0; cell.weights() && i < cell.weights()->size(); ++i) {
    const Weight *weight = cell.weights()->Get(i);
    Json item;
    item["name"] = weight->name()->str();
    item["dtype"] = nameOf(weight->dtype(), EnumNameDType);
    item["shape"] = arrayOf(weight->shape());
    item["bytes"] = weight->data() ? weight->data()->size() : 0u;
    weights.push_back(std::move(item));
  }
  json["weights"] = std::move(weights);
  Json plans = Json::array();
  for (const BatchPlan *plan : *cell.plans())
    plans.push_back(batchPlan(*plan));
  json["plans"] = std::move(plans);
  json["code"] = cellCode(code);
  return json;
}

Json artifactDocument(const LoadedArtifact &artifact) {
  const Model &model = artifact.model();
  Json json;
  json["format_version"] = artifact.formatVersion();
  char checksum[24];
  std::snprintf(checksum, sizeof checksum, "0x%016llx",
                static_cast<unsigned long long>(artifact.checksum()));
  json["checksum"] = checksum;
  json["producer"] = stringOrNull(model.producer());
  json["model_name"] = stringOrNull(model.model_name());
  json["precision"] = nameOf(model.precision(), EnumNamePrecision);
  json["unfolding"] = unfoldingJson(*model.unfolding());
  Json cells = Json::array();
  for (const CellType *cell : *model.cells())
    cells.push_back(cellType(*cell, artifact.code(*cell)));
  json["cells"] = std::move(cells);
  return json;
}

} // namespace

void writeArtifactJson(const LoadedArtifact &artifact, std::ostream &out) {
  out << artifactDocument(artifact).dump(2, ' ', false,
                                         Json::error_handler_t::replace)
      << '\n';
}

std::string artifactJson(const LoadedArtifact &artifact) {
  std::ostringstream out;
  writeArtifactJson(artifact, out);
  return out.str();
}

} // namespace cellrun
