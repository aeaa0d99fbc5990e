//===- ArtifactJson.cpp - A loaded cellpack as JSON -----------------------===//
//
// One function per schema table, each writing its fields in schema order.
// Enum values are written by name. Absent strings are null, absent vectors
// empty arrays; optional TensorSpec fields appear only when set.
//
//===----------------------------------------------------------------------===//
#include "cellrun/ArtifactJson.h"

#include "cellrun/JsonWriter.h"

#include <cstdio>
#include <sstream>

namespace cellrun {
namespace {

using namespace cellpack;

/// The enum's name in the schema; "unknown(N)" for a value outside it (the
/// loader rejects those, so only a bug shows one).
template <typename E> std::string nameOf(E value, const char *(*name)(E)) {
  const char *text = name(value);
  if (text && *text)
    return text;
  return "unknown(" + std::to_string(static_cast<int>(value)) + ")";
}

class ArtifactJsonWriter {
public:
  explicit ArtifactJsonWriter(std::ostream &out) : json_(out) {}

  void write(const LoadedArtifact &artifact) {
    const Model &model = artifact.model();
    json_.beginObject();
    json_.member("format_version", artifact.formatVersion());
    char checksum[24];
    std::snprintf(checksum, sizeof checksum, "0x%016llx",
                  static_cast<unsigned long long>(artifact.checksum()));
    json_.member("checksum", checksum);
    string("producer", model.producer());
    string("model_name", model.model_name());
    json_.member("precision", nameOf(model.precision(), EnumNamePrecision));
    json_.key("unfolding");
    unfolding(*model.unfolding());
    json_.key("cells");
    json_.beginArray();
    for (const CellType *cell : *model.cells())
      cellType(*cell, artifact.code(*cell));
    json_.endArray();
    json_.endObject();
    json_.finish();
  }

private:
  void string(const char *key, const flatbuffers::String *text) {
    json_.key(key);
    if (text)
      json_.value(text->string_view());
    else
      json_.null();
  }

  template <typename V> void inlineArray(const char *key, const V *values) {
    json_.key(key);
    json_.beginInlineArray();
    for (uint32_t i = 0; values && i < values->size(); ++i)
      json_.value(values->Get(i));
    json_.endArray();
  }

  void stringArray(
      const char *key,
      const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>
          *values) {
    json_.key(key);
    json_.beginInlineArray();
    for (uint32_t i = 0; values && i < values->size(); ++i)
      json_.value(values->Get(i)->string_view());
    json_.endArray();
  }

  void unfolding(const Unfolding &unfolding) {
    json_.beginObject();
    json_.member("structure", nameOf(unfolding.structure(), EnumNameStructure));
    string("encoder", unfolding.encoder());
    string("decoder", unfolding.decoder());
    json_.key("initial_state");
    json_.beginArray();
    for (uint32_t i = 0;
         unfolding.initial_state() && i < unfolding.initial_state()->size();
         ++i) {
      const StatePair *pair = unfolding.initial_state()->Get(i);
      json_.beginObject();
      string("decoder_input", pair->decoder_input());
      string("encoder_input", pair->encoder_input());
      json_.endObject();
    }
    json_.endArray();
    string("token_input", unfolding.token_input());
    string("token_output", unfolding.token_output());
    json_.member("bos_token", unfolding.bos_token());
    json_.member("eos_token", unfolding.eos_token());
    json_.member("max_decode_length", unfolding.max_decode_length());
    string("leaf", unfolding.leaf());
    string("internal", unfolding.internal());
    json_.member("arity", unfolding.arity());
    string("unfolder", unfolding.unfolder());
    json_.endObject();
  }

  void cellType(const CellType &cell, const CellCode &code) {
    json_.beginObject();
    json_.member("name", cell.name()->string_view());
    json_.member("priority", cell.priority());
    json_.member("slot_bytes", cell.slot_bytes());
    tensorSpecs("inputs", cell.inputs());
    tensorSpecs("outputs", cell.outputs());
    json_.key("weights");
    json_.beginArray();
    for (uint32_t i = 0; cell.weights() && i < cell.weights()->size(); ++i) {
      const Weight *weight = cell.weights()->Get(i);
      json_.beginObject();
      json_.member("name", weight->name()->string_view());
      json_.member("dtype", nameOf(weight->dtype(), EnumNameDType));
      inlineArray("shape", weight->shape());
      json_.member("bytes", weight->data() ? weight->data()->size() : 0u);
      json_.endObject();
    }
    json_.endArray();
    json_.key("plans");
    json_.beginArray();
    for (const BatchPlan *plan : *cell.plans())
      batchPlan(*plan);
    json_.endArray();
    json_.key("code");
    cellCode(code);
    json_.endObject();
  }

  void tensorSpecs(
      const char *key,
      const flatbuffers::Vector<flatbuffers::Offset<TensorSpec>> *specs) {
    json_.key(key);
    json_.beginArray();
    for (uint32_t i = 0; specs && i < specs->size(); ++i) {
      const TensorSpec *spec = specs->Get(i);
      json_.beginObject();
      json_.member("name", spec->name()->string_view());
      json_.member("role", nameOf(spec->role(), EnumNameRole));
      json_.member("dtype", nameOf(spec->dtype(), EnumNameDType));
      inlineArray("row_shape", spec->row_shape());
      if (spec->updates())
        string("updates", spec->updates());
      if (spec->child() != -1)
        json_.member("child", spec->child());
      if (spec->from())
        string("from", spec->from());
      if (spec->emit())
        json_.member("emit", true);
      json_.endObject();
    }
    json_.endArray();
  }

  void batchPlan(const BatchPlan &plan) {
    json_.beginObject();
    json_.member("batch_size", plan.batch_size());
    json_.member("workspace_bytes", plan.workspace_bytes());
    json_.member("peak_bytes", plan.peak_bytes());
    json_.key("steps");
    json_.beginArray();
    for (uint32_t i = 0; plan.steps() && i < plan.steps()->size(); ++i) {
      const TaskStep *step = plan.steps()->Get(i);
      if (const GemmStep *gemm = step->step_as_GemmStep())
        gemmStep(*gemm);
      else if (const KernelStep *kernel = step->step_as_KernelStep())
        kernelStep(*kernel);
      else
        json_.null(); // Rejected by the loader.
    }
    json_.endArray();
    json_.endObject();
  }

  /// The members of a ValueRef, inside an object the caller opened.
  void valueRefMembers(const ValueRef &ref) {
    json_.member("kind", nameOf(ref.kind(), EnumNameValueKind));
    if (ref.kind() == ValueKind::Workspace)
      json_.member("offset", ref.offset());
    else
      json_.member("index", ref.index());
    json_.member("dtype", nameOf(ref.dtype(), EnumNameDType));
    inlineArray("shape", ref.shape());
  }

  void valueRef(const char *key, const ValueRef *ref) {
    json_.key(key);
    if (!ref)
      return json_.null();
    json_.beginObject();
    valueRefMembers(*ref);
    json_.endObject();
  }

  void gemmStep(const GemmStep &gemm) {
    json_.beginObject();
    json_.member("kind", "gemm");
    json_.member("m", gemm.m());
    json_.member("n", gemm.n());
    json_.member("k", gemm.k());
    json_.member("trans_a", gemm.trans_a());
    json_.member("trans_b", gemm.trans_b());
    json_.member("alpha", gemm.alpha());
    json_.member("beta", gemm.beta());
    json_.member("precision", nameOf(gemm.precision(), EnumNamePrecision));
    valueRef("a", gemm.a());
    valueRef("b", gemm.b());
    valueRef("c", gemm.c());
    valueRef("d", gemm.d());
    json_.endObject();
  }

  void operands(const char *key,
                const flatbuffers::Vector<flatbuffers::Offset<ValueRef>> *refs,
                const flatbuffers::Vector<Access> *access) {
    json_.key(key);
    json_.beginArray();
    for (uint32_t i = 0; refs && i < refs->size(); ++i) {
      json_.beginObject();
      valueRefMembers(*refs->Get(i));
      if (access && i < access->size())
        json_.member("access", nameOf(access->Get(i), EnumNameAccess));
      json_.endObject();
    }
    json_.endArray();
  }

  void kernelStep(const KernelStep &kernel) {
    json_.beginObject();
    json_.member("kind", "kernel");
    json_.member("name", kernel.name()->string_view());
    json_.member("shape", nameOf(kernel.shape(), EnumNameKernelShape));
    json_.member("row_width", kernel.row_width());
    json_.member("block_size", kernel.block_size());
    operands("inputs", kernel.inputs(), kernel.input_access());
    operands("outputs", kernel.outputs(), kernel.output_access());
    json_.key("params");
    json_.beginArray();
    for (uint32_t i = 0; kernel.params() && i < kernel.params()->size(); ++i) {
      const KernelParam *param = kernel.params()->Get(i);
      json_.beginObject();
      json_.member("kind", nameOf(param->kind(), EnumNameParamKind));
      if (param->kind() != ParamKind::RowCount)
        json_.member("index", param->index());
      json_.endObject();
    }
    json_.endArray();
    const PortableRegion &region = *kernel.region();
    json_.key("region");
    json_.beginObject();
    json_.member("values", region.values() ? region.values()->size() : 0u);
    json_.key("ops");
    json_.beginInlineArray();
    for (uint32_t i = 0; region.ops() && i < region.ops()->size(); ++i)
      json_.value(nameOf(region.ops()->Get(i)->opcode(), EnumNameOpCode));
    json_.endArray();
    json_.endObject();
    json_.endObject();
  }

  void cellCode(const CellCode &code) {
    json_.beginObject();
    json_.key("cubins");
    json_.beginArray();
    for (uint32_t i = 0; code.cubins() && i < code.cubins()->size(); ++i) {
      const CodeImage *image = code.cubins()->Get(i);
      json_.beginObject();
      json_.member("arch", image->arch()->string_view());
      json_.member("bytes", image->cubin() ? image->cubin()->size() : 0u);
      json_.endObject();
    }
    json_.endArray();
    string("ptx_arch", code.ptx_arch());
    json_.member("ptx_bytes", code.ptx() ? code.ptx()->size() : 0u);
    stringArray("kernel_names", code.kernel_names());
    json_.endObject();
  }

  JsonWriter json_;
};

} // namespace

void writeArtifactJson(const LoadedArtifact &artifact, std::ostream &out) {
  ArtifactJsonWriter(out).write(artifact);
}

std::string artifactJson(const LoadedArtifact &artifact) {
  std::ostringstream out;
  writeArtifactJson(artifact, out);
  return out.str();
}

} // namespace cellrun
