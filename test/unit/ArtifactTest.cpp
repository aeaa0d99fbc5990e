//===- ArtifactTest.cpp - Tests of the cellpack loader --------------------===//
//
// Builds small but complete artifacts with the FlatBuffers builder (one LSTM-
// like cell, two batch plans of a GEMM and a fused kernel, weights, a fake
// CUBIN and PTX; ArtifactBuilder.h), then checks that the loader accepts
// them, that its accessors and code selection work, and what `cellrun
// inspect` prints of them. The damage it rejects is tested in
// ArtifactLoadErrorsTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "ArtifactBuilder.h"

#include "artifact/Artifact.h"
#include "artifact/CodeSelection.h"
#include "cellrun/ArtifactJson.h"

#include "schema/Checksum.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace cellrun;
using namespace cellpack;
using namespace cellc::testing;
using flatbuffers::Offset;

namespace {

constexpr int64_t kInput = 4, kHidden = 8;

std::vector<uint8_t> weightBytes(size_t count, float scale) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i)
    values[i] = scale * static_cast<float>(i + 1);
  std::vector<uint8_t> bytes(count * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::string kernelNameFor(const Spec &spec, uint32_t batch) {
  return spec.kernelName.empty() ? "lstm_b" + std::to_string(batch) + "_k0"
                                 : spec.kernelName;
}

/// `data` as a [ubyte] whose bytes are 64-byte aligned (force_align: 64),
/// or `skew` bytes past such an address. Not ForceVectorAlignment:
/// FlatBuffers 2.0.8 asserts there that the alignment is at most
/// FLATBUFFERS_MAX_ALIGNMENT (32) in builds without NDEBUG, although 64
/// works.
Offset<flatbuffers::Vector<uint8_t>>
alignedBytes(flatbuffers::FlatBufferBuilder &fbb,
             const std::vector<uint8_t> &data, size_t skew = 0) {
  fbb.PreAlign(data.size() + skew, 64);
  return fbb.CreateVector(data);
}

Offset<ValueRef> ref(flatbuffers::FlatBufferBuilder &fbb, ValueKind kind,
                     uint64_t indexOrOffset, std::vector<int64_t> shape) {
  bool isWorkspace = kind == ValueKind::Workspace;
  return CreateValueRefDirect(
      fbb, kind, isWorkspace ? 0 : static_cast<uint32_t>(indexOrOffset),
      isWorkspace ? indexOrOffset : 0, DType::F32, &shape);
}

Offset<BatchPlan> buildPlan(flatbuffers::FlatBufferBuilder &fbb,
                            const Spec &spec, uint32_t batch) {
  int64_t b = batch;
  uint64_t workspace = b * kHidden * sizeof(float);
  uint64_t gemmOffset =
      spec.gemmOffsetFromEnd < 0 ? 0 : workspace - spec.gemmOffsetFromEnd;
  auto gemm = CreateGemmStep(
      fbb, ref(fbb, ValueKind::CellInput, 0, {b, kInput}),
      ref(fbb, ValueKind::Weight, spec.gemmWeightIndex, spec.gemmWeightShape),
      ref(fbb, ValueKind::Weight, 1, {kHidden}),
      ref(fbb, ValueKind::Workspace, gemmOffset, {b, kHidden}), b, kHidden,
      spec.gemmK, false, false, 1.0f, 0.5f, Precision::TF32);

  std::vector<Offset<KernelParam>> params;
  for (auto [kind, index] :
       std::vector<std::pair<ParamKind, uint32_t>>{{ParamKind::Input, 0},
                                                   {ParamKind::Input, 1},
                                                   {ParamKind::InputRows, 1},
                                                   {ParamKind::Output, 0},
                                                   {ParamKind::OutputRows, 0},
                                                   {ParamKind::Output, 1},
                                                   {ParamKind::OutputRows, 1},
                                                   {ParamKind::RowCount, 0}})
    params.push_back(CreateKernelParam(fbb, kind, index));
  std::vector<Offset<ValueRef>> inputs = {
      ref(fbb, ValueKind::Workspace, 0, {b, kHidden}),
      ref(fbb, ValueKind::CellInput, 1, {b, kHidden})};
  std::vector<Offset<ValueRef>> outputs = {
      ref(fbb, ValueKind::CellOutput, 0, {b, kHidden}),
      ref(fbb, ValueKind::CellOutput, 1, {b, kHidden})};
  std::vector<Access> inputAccess = {Access::Dense, spec.gatheredInputAccess};
  std::vector<Access> outputAccess = {Access::Scatter, Access::Scatter};
  std::vector<int64_t> valueShape = {b, kHidden};
  std::vector<Offset<PortableValue>> values;
  for (int i = 0; i < 4; ++i)
    values.push_back(CreatePortableValueDirect(fbb, DType::F32, &valueShape));
  std::vector<uint32_t> addOperands = {0, spec.regionOperand}, addResults = {2};
  std::vector<uint32_t> tanhOperands = {2}, tanhResults = {3};
  std::vector<Offset<PortableOp>> ops = {
      CreatePortableOpDirect(fbb, OpCode::Add, &addOperands, &addResults),
      CreatePortableOpDirect(fbb, OpCode::Tanh, &tanhOperands, &tanhResults)};
  std::vector<uint32_t> regionResults = {3, 3};
  auto region =
      CreatePortableRegionDirect(fbb, &values, 2, &ops, &regionResults);
  auto kernel = CreateKernelStepDirect(
      fbb, kernelNameFor(spec, batch).c_str(), spec.kernelShape, kHidden,
      spec.kernelBlockSize, &params, &inputs, &inputAccess, &outputs,
      &outputAccess, region);

  std::vector<Offset<TaskStep>> steps = {
      CreateTaskStep(
          fbb, spec.unknownStepKind ? static_cast<Step>(7) : Step::GemmStep,
          gemm.Union()),
      CreateTaskStep(fbb, Step::KernelStep, kernel.Union())};
  return CreateBatchPlanDirect(fbb, batch, &steps, workspace,
                               workspace + spec.peakExtra);
}

} // namespace

/// The nested Model, finished in its own builder without identifier.
std::vector<uint8_t> cellc::testing::buildModel(const Spec &spec) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<int64_t> inputShape = {kInput}, hiddenShape = {kHidden};
  std::vector<Offset<TensorSpec>> inputs = {
      CreateTensorSpecDirect(fbb, "x", Role::Input, DType::F32, &inputShape),
      CreateTensorSpecDirect(fbb, "h", Role::State, DType::F32, &hiddenShape)};
  std::vector<Offset<TensorSpec>> outputs = {
      CreateTensorSpecDirect(fbb, "h_next", Role::State, DType::F32,
                             &hiddenShape, "h", -1, nullptr, true),
      CreateTensorSpecDirect(fbb, "y", Role::Output, DType::F32, &hiddenShape)};
  std::vector<int64_t> wShape = {kInput, kHidden};
  std::vector<uint8_t> w = weightBytes(kInput * kHidden, 0.5f);
  w.resize(w.size() + spec.weightDataDelta);
  std::vector<uint8_t> bias = weightBytes(kHidden, -1.0f);
  std::vector<Offset<Weight>> weights = {
      CreateWeight(fbb, fbb.CreateString("W"), DType::F32,
                   fbb.CreateVector(wShape),
                   alignedBytes(fbb, w, spec.weightSkew)),
      CreateWeight(fbb, fbb.CreateString("bias"), DType::F32,
                   fbb.CreateVector(hiddenShape), alignedBytes(fbb, bias))};
  std::vector<Offset<BatchPlan>> plans;
  for (uint32_t batch : spec.batchSizes)
    plans.push_back(buildPlan(fbb, spec, batch));
  std::vector<Offset<CellType>> cells = {CreateCellTypeDirect(
      fbb, "lstm", 3, &inputs, &outputs, &weights, &plans, 64)};
  if (spec.duplicateCell)
    cells.push_back(cells.front());

  std::vector<Offset<flatbuffers::String>> kernelNames;
  for (uint32_t batch : spec.batchSizes)
    kernelNames.push_back(
        fbb.CreateString("lstm_b" + std::to_string(batch) + "_k0"));
  std::vector<Offset<CodeImage>> cubins;
  for (const std::string &arch : spec.cubinArchs) {
    std::vector<uint8_t> image(256, 0xCB);
    std::memcpy(image.data(),
                "\x7f"
                "ELF",
                4);
    cubins.push_back(
        CreateCodeImage(fbb, fbb.CreateString(arch), alignedBytes(fbb, image)));
  }
  std::string ptx = ".version 8.0\n.target sm_80\n";
  std::vector<Offset<CellCode>> code;
  if (spec.withCode)
    code.push_back(CreateCellCodeDirect(
        fbb, "lstm", &kernelNames, &cubins,
        spec.ptxArch.empty() ? nullptr : spec.ptxArch.c_str(),
        spec.ptxArch.empty() ? nullptr : ptx.c_str(), "// cuda"));
  auto unfolding = CreateUnfoldingDirect(fbb, Structure::Chain, nullptr,
                                         nullptr, nullptr, "x", "y", 1, 2, 50);
  fbb.Finish(CreateModelDirect(fbb, spec.producer.c_str(), "tiny",
                               Precision::FP32, &cells, &code, unfolding));
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

/// The envelope around `model`: size prefix, "CPAK", version, checksum.
std::vector<uint8_t>
cellc::testing::wrapModel(const std::vector<uint8_t> &model, uint32_t version,
                          size_t payloadSkew) {
  flatbuffers::FlatBufferBuilder fbb;
  auto artifact = CreateArtifact(fbb, version,
                                 cellpack::checksum(model.data(), model.size()),
                                 alignedBytes(fbb, model, payloadSkew));
  FinishSizePrefixedArtifactBuffer(fbb, artifact);
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

std::vector<uint8_t> cellc::testing::buildArtifact(const Spec &spec) {
  return wrapModel(buildModel(spec));
}

std::shared_ptr<const LoadedArtifact>
cellc::testing::loadValid(const Spec &spec) {
  auto loaded = loadArtifactFromBytes(buildArtifact(spec), "tiny.cellpack");
  EXPECT_TRUE(loaded.ok()) << loaded.status().toString();
  return loaded.ok() ? *loaded : nullptr;
}

/// The loader's message for `bytes` (empty when it loads).
std::string cellc::testing::loadError(std::vector<uint8_t> bytes) {
  auto loaded = loadArtifactFromBytes(std::move(bytes), "bad.cellpack");
  return loaded.ok() ? "" : loaded.status().message();
}

std::string cellc::testing::specError(const Spec &spec) {
  return loadError(buildArtifact(spec));
}

namespace {

TEST(Artifact, ValidArtifactLoadsAndAccessorsWork) {
  auto artifact = loadValid();
  ASSERT_TRUE(artifact);
  EXPECT_EQ(artifact->formatVersion(), kFormatVersion);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(artifact->fileData()) % 64, 0u);
  EXPECT_EQ(artifact->model().model_name()->str(), "tiny");
  ASSERT_EQ(artifact->cells().size(), 1u);

  auto cell = artifact->cell("lstm");
  ASSERT_TRUE(cell.ok());
  EXPECT_EQ((*cell)->priority(), 3);
  EXPECT_EQ(artifact->code(**cell).kernel_names()->size(), 2u);
  EXPECT_EQ(artifact->batchSizes(**cell), (std::vector<uint32_t>{1, 8}));
  EXPECT_EQ(artifact->cell("gru").status().message(),
            "tiny.cellpack: no cell 'gru' (the cells are 'lstm')");

  EXPECT_EQ((*artifact->plan(**cell, 8))->batch_size(), 8u);
  EXPECT_EQ(artifact->plan(**cell, 4).status().code(), StatusCode::NotFound);
  for (auto [rows, batch] : {std::pair{1u, 1u}, {2u, 8u}, {8u, 8u}})
    EXPECT_EQ((*artifact->smallestPlanAtLeast(**cell, rows))->batch_size(),
              batch);
  auto tooMany = artifact->smallestPlanAtLeast(**cell, 9);
  EXPECT_EQ(tooMany.status().code(), StatusCode::OutOfRange);
  EXPECT_EQ(tooMany.status().message(),
            "tiny.cellpack: cell 'lstm': 9 rows exceed the largest batch "
            "size 8");
  EXPECT_EQ(artifact->smallestPlanAtLeast(**cell, 0).status().code(),
            StatusCode::InvalidArgument);

  auto w = artifact->weight(**cell, 0);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->name, "W");
  EXPECT_EQ(w->shape, (std::vector<int64_t>{kInput, kHidden}));
  EXPECT_EQ(w->bytes, kInput * kHidden * sizeof(float));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w->data) % 64, 0u);
  EXPECT_EQ(std::memcmp(w->data, weightBytes(kInput * kHidden, 0.5f).data(),
                        w->bytes),
            0);
  EXPECT_EQ(artifact->weight(**cell, 2).status().code(),
            StatusCode::OutOfRange);
}

TEST(Artifact, LoadsFromAFileAndReportsAMissingOne) {
  std::string path = ::testing::TempDir() + "artifact-test-" +
                     std::to_string(::getpid()) + ".cellpack";
  std::vector<uint8_t> bytes = buildArtifact();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  auto loaded = loadArtifact(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().toString();
  EXPECT_EQ((*loaded)->fileSize(), bytes.size());
  EXPECT_EQ((*loaded)->displayName(), path);
  std::remove(path.c_str());

  auto missing = loadArtifact(path);
  EXPECT_EQ(missing.status().code(), StatusCode::NotFound);
  EXPECT_EQ(missing.status().message(),
            path + ": cannot open: No such file or directory");
  EXPECT_EQ(loadArtifact("/").status().message(), "/: is a directory");
}

TEST(Artifact, CodeSelectionPrefersTheCubinThenPtx) {
  auto artifact = loadValid(); // sm_80 CUBIN, compute_80 PTX
  ASSERT_TRUE(artifact);
  auto sm80 = selectCode(*artifact, "lstm", 80);
  ASSERT_TRUE(sm80.ok()) << sm80.status().toString();
  EXPECT_EQ(sm80->kind, CodeChoice::Kind::Cubin);
  EXPECT_EQ(sm80->arch, "sm_80");
  EXPECT_EQ(sm80->size, 256u);
  EXPECT_EQ(std::memcmp(sm80->data,
                        "\x7f"
                        "ELF",
                        4),
            0);
  auto sm90 = selectCode(*artifact, "lstm", 90); // JIT from compute_80
  ASSERT_TRUE(sm90.ok());
  EXPECT_EQ(sm90->kind, CodeChoice::Kind::Ptx);
  EXPECT_EQ(sm90->arch, "compute_80");
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(sm90->data)),
            ".version 8.0\n.target sm_80\n");
  EXPECT_EQ(selectCode(*artifact, "lstm", 75).status().message(),
            "tiny.cellpack: cell 'lstm': no CUBIN for sm_75 and no usable PTX "
            "(PTX is compute_80); the artifact has CUBINs for sm_80");
  EXPECT_EQ(selectCode(*artifact, "gru", 80).status().code(),
            StatusCode::NotFound);
}

// The CUDA backend launches a cell's kernels programmatically only when the
// chosen image is for sm_90 or later (GridDependency.h's wait is compiled
// from there on).
TEST(Artifact, CodeArchNumbers) {
  EXPECT_EQ(codeArchNumber("sm_90"), 90);
  EXPECT_EQ(codeArchNumber("sm_90a"), 90);
  EXPECT_EQ(codeArchNumber("sm_100f"), 100);
  EXPECT_EQ(codeArchNumber("compute_80"), 80);
  EXPECT_EQ(codeArchNumber("compute_90a"), 90);
  EXPECT_EQ(codeArchNumber("sm_"), -1);
  EXPECT_EQ(codeArchNumber("sm_9x"), -1);
  EXPECT_EQ(codeArchNumber("gfx90a"), -1);
  EXPECT_EQ(codeArchNumber(""), -1);
}

TEST(Artifact, CodeSelectionWithoutAMatch) {
  Spec spec;
  spec.cubinArchs = {"sm_80", "sm_100", "sm_90a"};
  spec.ptxArch = "compute_100";
  auto artifact = loadValid(spec);
  ASSERT_TRUE(artifact);
  EXPECT_EQ(selectCode(*artifact, "lstm", 89).status().message(),
            "tiny.cellpack: cell 'lstm': no CUBIN for sm_89 and no usable PTX "
            "(PTX is compute_100); the artifact has CUBINs for sm_80, sm_100, "
            "sm_90a");
  EXPECT_EQ(selectCode(*artifact, "lstm", 90)->arch, "sm_90a");
  EXPECT_EQ(selectCode(*artifact, "lstm", 100)->arch, "sm_100");
  EXPECT_EQ(selectCode(*artifact, "lstm", 120)->arch, "compute_100");

  spec.cubinArchs = {};
  spec.ptxArch = "compute_90a"; // arch-specific PTX: only for exactly sm_90
  artifact = loadValid(spec);
  ASSERT_TRUE(artifact);
  EXPECT_EQ(selectCode(*artifact, "lstm", 90)->kind, CodeChoice::Kind::Ptx);
  EXPECT_EQ(selectCode(*artifact, "lstm", 100).status().message(),
            "tiny.cellpack: cell 'lstm': no CUBIN for sm_100 and no usable "
            "PTX (PTX is compute_90a); the artifact has no CUBINs");
  spec.cubinArchs = {"sm_80"};
  spec.ptxArch = "";
  artifact = loadValid(spec);
  ASSERT_TRUE(artifact);
  EXPECT_NE(
      selectCode(*artifact, "lstm", 90)
          .status()
          .message()
          .find("no usable PTX (there is no PTX); the artifact has CUBINs for "
                "sm_80"),
      std::string::npos);
}

/// `json` without line breaks and the indentation after them, so arrays
/// read as on one line: "[4,8]".
std::string withoutLineBreaks(const std::string &json) {
  std::string flat;
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] != '\n') {
      flat += json[i];
      continue;
    }
    while (i + 1 < json.size() && json[i + 1] == ' ')
      ++i;
  }
  return flat;
}

TEST(ArtifactJson, InspectOutputOfTheValidArtifact) {
  Spec spec;
  spec.producer = "cellc \"test\"\n\x01";
  auto artifact = loadValid(spec);
  ASSERT_TRUE(artifact);
  std::string json = artifactJson(*artifact);
  char checksum[40];
  std::snprintf(checksum, sizeof checksum, "\"checksum\": \"0x%016llx\",",
                static_cast<unsigned long long>(artifact->checksum()));
  // Every member and every array element on a line of its own, indented
  // by two spaces a level; keys in schema order; floats with a float's
  // shortest digits.
  for (const std::string &expected : {
           "{\n  \"format_version\": " + std::to_string(kFormatVersion) + ",\n",
           std::string(checksum),
           std::string(R"("producer": "cellc \"test\"\n\u0001",)"),
           std::string(R"("model_name": "tiny",)"),
           std::string(R"("bos_token": 1,)"),
           std::string("\"row_shape\": [\n"
                       "            8\n"
                       "          ],\n"
                       "          \"updates\": \"h\",\n"
                       "          \"emit\": true\n"),
           std::string(R"("kind": "gemm",)"),
           std::string(R"("alpha": 1.0,)"),
           std::string(R"("beta": 0.5,)"),
           std::string(R"("precision": "TF32",)"),
           std::string(R"("kind": "Workspace",)"),
           std::string(R"("access": "Gather")"),
           std::string("\"kind\": \"RowCount\"\n"),
           std::string("        \"cubins\": [\n"
                       "          {\n"
                       "            \"arch\": \"sm_80\",\n"
                       "            \"bytes\": 256\n"
                       "          }\n"
                       "        ],\n"
                       "        \"ptx_arch\": \"compute_80\",\n"),
           std::string("        \"kernel_names\": [\n"
                       "          \"lstm_b1_k0\",\n"
                       "          \"lstm_b8_k0\"\n"
                       "        ]\n"),
       })
    EXPECT_NE(json.find(expected), std::string::npos) << expected;
  std::string flat = withoutLineBreaks(json);
  for (const char *expected : {R"("shape": [4,8])", R"("ops": ["Add","Tanh"])",
                               R"("initial_state": [],)"})
    EXPECT_NE(flat.find(expected), std::string::npos) << expected;
  EXPECT_EQ(json.substr(json.size() - 2), "}\n");
}

TEST(ArtifactJson, BytesThatAreNotUtf8AreReplaced) {
  Spec spec;
  spec.producer = "cellc \xff\xfe";
  auto artifact = loadValid(spec);
  ASSERT_TRUE(artifact);
  std::string json = artifactJson(*artifact);
  EXPECT_NE(json.find("\"producer\": \"cellc \xEF\xBF\xBD\xEF\xBF\xBD\","),
            std::string::npos)
      << json.substr(0, 200);
}

} // namespace
