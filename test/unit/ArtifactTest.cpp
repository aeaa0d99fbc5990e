//===- ArtifactTest.cpp - Tests of the cellpack loader --------------------===//
//
// Builds small but complete artifacts with the FlatBuffers builder (one LSTM-
// like cell, two batch plans of a GEMM and a fused kernel, weights, a fake
// CUBIN and PTX), then checks that the loader accepts them, that its
// accessors and code selection work, and that every kind of damage is
// rejected with its message: truncation, a flipped weight byte, a wrong
// identifier, another format version, semantic errors, random garbage.
//
//===----------------------------------------------------------------------===//
#include "artifact/Artifact.h"
#include "artifact/CodeSelection.h"
#include "cellrun/ArtifactJson.h"

#include "schema/Checksum.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace cellrun;
using namespace cellpack;
using flatbuffers::Offset;

namespace {

/// What buildModel makes; every field defaults to the valid artifact.
struct Spec {
  std::string producer = "cellc test";
  std::vector<uint32_t> batchSizes = {1, 8};
  std::vector<std::string> cubinArchs = {"sm_80"};
  std::string ptxArch = "compute_80"; // "" for no PTX
  std::string kernelName;             // "" for lstm_b<B>_k0 (listed)
  uint32_t gemmWeightIndex = 0;
  int64_t gemmOffsetFromEnd = -1; // >= 0: d at workspace_bytes - this
  int64_t gemmK = 4;
  std::vector<int64_t> gemmWeightShape = {4, 8}; // as the GEMM's b reads W
  int weightDataDelta = 0;                       // bytes added to W's data
  size_t weightSkew = 0; // W's data this many bytes off 64-alignment
  uint64_t peakExtra = 0;
  Access gatheredInputAccess = Access::Gather;
  uint32_t regionOperand = 1;
  bool unknownStepKind = false;
  bool duplicateCell = false;
  bool withCode = true;
};

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
  auto kernel = CreateKernelStepDirect(fbb, kernelNameFor(spec, batch).c_str(),
                                       KernelShape::Elementwise, kHidden, 128,
                                       &params, &inputs, &inputAccess, &outputs,
                                       &outputAccess, region);

  std::vector<Offset<TaskStep>> steps = {
      CreateTaskStep(
          fbb, spec.unknownStepKind ? static_cast<Step>(7) : Step::GemmStep,
          gemm.Union()),
      CreateTaskStep(fbb, Step::KernelStep, kernel.Union())};
  return CreateBatchPlanDirect(fbb, batch, &steps, workspace,
                               workspace + spec.peakExtra);
}

/// The nested Model, finished in its own builder without identifier.
std::vector<uint8_t> buildModel(const Spec &spec) {
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
std::vector<uint8_t> wrapModel(const std::vector<uint8_t> &model,
                               uint32_t version = kFormatVersion,
                               size_t payloadSkew = 0) {
  flatbuffers::FlatBufferBuilder fbb;
  auto artifact = CreateArtifact(fbb, version,
                                 cellpack::checksum(model.data(), model.size()),
                                 alignedBytes(fbb, model, payloadSkew));
  FinishSizePrefixedArtifactBuffer(fbb, artifact);
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

std::vector<uint8_t> buildArtifact(const Spec &spec = Spec()) {
  return wrapModel(buildModel(spec));
}

std::shared_ptr<const LoadedArtifact> loadValid(const Spec &spec = Spec()) {
  auto loaded = loadArtifactFromBytes(buildArtifact(spec), "tiny.cellpack");
  EXPECT_TRUE(loaded.ok()) << loaded.status().toString();
  return loaded.ok() ? *loaded : nullptr;
}

/// The loader's message for `bytes` (empty when it loads).
std::string loadError(std::vector<uint8_t> bytes) {
  auto loaded = loadArtifactFromBytes(std::move(bytes), "bad.cellpack");
  return loaded.ok() ? "" : loaded.status().message();
}

std::string specError(const Spec &spec) {
  return loadError(buildArtifact(spec));
}

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

TEST(Artifact, TruncatedFilesAreRejected) {
  std::vector<uint8_t> bytes = buildArtifact();
  size_t following = bytes.size() - 4;
  for (size_t keep : {bytes.size() - 1, bytes.size() / 2}) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + keep);
    EXPECT_EQ(loadError(cut), "bad.cellpack: truncated: the size prefix says " +
                                  std::to_string(following) + " bytes but " +
                                  std::to_string(keep - 4) + " follow");
  }
  EXPECT_EQ(loadError({1, 2, 3}), "bad.cellpack: truncated: the file has 3 "
                                  "bytes, fewer than the 8 of a cellpack "
                                  "header");
  EXPECT_EQ(loadError({}), "bad.cellpack: truncated: the file has 0 bytes, "
                           "fewer than the 8 of a cellpack header");
}

TEST(Artifact, FlippedWeightByteFailsTheChecksum) {
  auto artifact = loadValid();
  ASSERT_TRUE(artifact);
  const cellpack::CellType *cell = *artifact->cell("lstm");
  size_t weightOffset =
      (*artifact->weight(*cell, 0)).data - artifact->fileData();
  std::vector<uint8_t> bytes(artifact->fileData(),
                             artifact->fileData() + artifact->fileSize());
  // The weight's first float (0.5f) is where the loader says it is.
  float first;
  std::memcpy(&first, &bytes[weightOffset], sizeof first);
  ASSERT_EQ(first, 0.5f);
  bytes[weightOffset + 5] ^= 0x10;
  auto loaded = loadArtifactFromBytes(bytes, "bad.cellpack");
  EXPECT_EQ(loaded.status().code(), StatusCode::DataLoss);
  EXPECT_EQ(loaded.status().message().rfind(
                "bad.cellpack: payload checksum mismatch: the file is "
                "corrupted (stored 0x",
                0),
            0u)
      << loaded.status().message();
}

TEST(Artifact, WrongIdentifierIsRejected) {
  std::vector<uint8_t> bytes = buildArtifact();
  std::memcpy(&bytes[8], "PK\x03\x04", 4);
  EXPECT_EQ(loadError(bytes),
            "bad.cellpack: not a cellpack: file identifier is 'PK\\x03\\x04'");
  // Another file fails the size prefix too; it is still "not a cellpack".
  std::string text = "name,value\nalpha,1\n";
  EXPECT_EQ(loadError({text.begin(), text.end()}),
            "bad.cellpack: not a cellpack: file identifier is 'ue\\x0aa'");
}

TEST(Artifact, OtherFormatVersionsAreRejected) {
  std::vector<uint8_t> model = buildModel(Spec());
  std::string current = std::to_string(kFormatVersion);
  auto newer =
      loadArtifactFromBytes(wrapModel(model, kFormatVersion + 1), "m.cellpack");
  EXPECT_EQ(newer.status().code(), StatusCode::Unsupported);
  EXPECT_EQ(newer.status().message(),
            "m.cellpack: format version " + std::to_string(kFormatVersion + 1) +
                " is newer than this cellrun reads (" + current +
                "); rebuild cellrun or recompile with a matching cellc");
  EXPECT_EQ(loadError(wrapModel(model, kFormatVersion - 1)),
            "bad.cellpack: format version " +
                std::to_string(kFormatVersion - 1) +
                " is older than this cellrun reads (" + current +
                "); recompile the model with a matching cellc");
  // A future version is reported as such even if its Model does not parse.
  std::vector<uint8_t> garbage(model.size(), 0xEE);
  EXPECT_NE(loadError(wrapModel(garbage, 7)).find("format version 7 is newer"),
            std::string::npos);
}

TEST(Artifact, MisalignedPayloadIsRejected) {
  std::vector<uint8_t> bytes = wrapModel(buildModel(Spec()), kFormatVersion, 8);
  std::string message = loadError(bytes);
  EXPECT_EQ(message.rfind("bad.cellpack: the payload is at offset ", 0), 0u)
      << message;
  EXPECT_NE(message.find(", not a multiple of 64 (force_align of the schema)"),
            std::string::npos)
      << message;
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

TEST(Artifact, SemanticErrorsNameCellAndBatchSize) {
  struct Case {
    std::function<void(Spec &)> change;
    std::string message;
  };
  const std::string plan1 = "bad.cellpack: cell 'lstm', batch size 1, step ";
  std::vector<Case> cases = {
      {[](Spec &s) {
         s.batchSizes = {8, 1};
       },
       "bad.cellpack: cell 'lstm': batch size 1 follows 8; batch sizes must "
       "be strictly increasing"},
      {[](Spec &s) {
         s.batchSizes = {8, 8};
       },
       "bad.cellpack: cell 'lstm': batch size 8 follows 8; batch sizes must "
       "be strictly increasing"},
      {[](Spec &s) {
         s.batchSizes = {0, 8};
       },
       "bad.cellpack: cell 'lstm': batch size 0 is not allowed (>= 1)"},
      {[](Spec &s) { s.gemmOffsetFromEnd = 4; },
       plan1 + "0 (gemm): d: workspace offset 28 + 32 bytes exceeds "
               "workspace_bytes 32"},
      {[](Spec &s) { s.kernelName = "lstm_fused"; },
       plan1 + "1 (kernel 'lstm_fused'): the kernel is not among the "
               "kernel_names of the cell's code"},
      {[](Spec &s) { s.gemmWeightIndex = 7; },
       plan1 + "0 (gemm): b: weight index 7 is out of range (the cell has "
               "2)"},
      {[](Spec &s) { s.weightDataDelta = -1; },
       "bad.cellpack: cell 'lstm': weight 'W' has 127 bytes of data but its "
       "shape [4, 8] of F32 needs 128"},
      {[](Spec &s) { s.gemmK = 5; },
       plan1 + "0 (gemm): a has shape [1, 4] but m=1, k=5, trans_a=false "
               "need [1, 5]"},
      {[](Spec &s) {
         s.gemmWeightShape = {2, 16};
       },
       plan1 + "0 (gemm): b: it reads F32 [2, 16] (128 bytes) but weight "
               "'W' has the shape [4, 8]"},
      {[](Spec &s) { s.peakExtra = 1; },
       "bad.cellpack: cell 'lstm', batch size 1: peak_bytes 33 exceed "
       "workspace_bytes 32"},
      {[](Spec &s) { s.gatheredInputAccess = Access::Dense; },
       plan1 + "1 (kernel 'lstm_b1_k0'): param 2 (InputRows of input 1): "
               "the input is Dense, not Gather"},
      {[](Spec &s) { s.regionOperand = 4; },
       plan1 + "1 (kernel 'lstm_b1_k0'): region: op 0 (Add) operand 1 is "
               "value 4, out of range (the region has 4 values)"},
      {[](Spec &s) { s.unknownStepKind = true; },
       plan1 + "0: unknown step kind 7"},
      {[](Spec &s) { s.duplicateCell = true; },
       "bad.cellpack: cell 'lstm' is defined twice"},
      {[](Spec &s) { s.withCode = false; },
       "bad.cellpack: cell 'lstm' has no code entry; it needs exactly one"},
      {[](Spec &s) { s.weightSkew = 4; },
       "bad.cellpack: cell 'lstm': weight 'W': data is not 64-byte aligned "
       "in the file (force_align of the schema)"},
      {[](Spec &s) { s.batchSizes = {}; },
       "bad.cellpack: cell 'lstm' has no batch plans"},
  };
  for (const Case &c : cases) {
    Spec spec;
    c.change(spec);
    EXPECT_EQ(specError(spec), c.message) << "expected: " << c.message;
  }
}

TEST(Artifact, RandomGarbageIsRejectedWithoutCrashing) {
  std::mt19937 random(1234);
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> bytes(random() % 600);
    for (uint8_t &byte : bytes)
      byte = static_cast<uint8_t>(random());
    if (i % 2 && bytes.size() >= 12) { // Past the prefix and identifier.
      uint32_t following = static_cast<uint32_t>(bytes.size() - 4);
      std::memcpy(bytes.data(), &following, 4);
      std::memcpy(&bytes[8], "CPAK", 4);
    }
    EXPECT_NE(loadError(bytes), "") << "garbage " << i << " loaded";
  }
}

TEST(Artifact, DamagedModelsWithValidChecksumsNeverCrash) {
  // Mutates the Model and re-wraps it with a correct checksum, so the
  // damage reaches the nested Verifier and the semantic checks. Whatever
  // loads must be readable through every accessor.
  std::vector<uint8_t> model = buildModel(Spec());
  std::mt19937 random(42);
  int rejected = 0, loaded = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> damaged = model;
    for (int flips = 1 + random() % 3; flips > 0; --flips)
      damaged[random() % damaged.size()] = static_cast<uint8_t>(random());
    auto artifact = loadArtifactFromBytes(wrapModel(damaged), "fuzz");
    if (!artifact.ok()) {
      ++rejected;
      continue;
    }
    ++loaded;
    std::string json = artifactJson(**artifact);
    EXPECT_EQ(json.back(), '\n');
    for (const cellpack::CellType *cell : (*artifact)->cells()) {
      (void)selectCode(**artifact, cell->name()->str(), 90);
      for (uint32_t index = 0; index < 3; ++index)
        (void)(*artifact)->weight(*cell, index);
      (void)(*artifact)->smallestPlanAtLeast(*cell, 5);
    }
  }
  EXPECT_GT(rejected, 100);
  EXPECT_GT(loaded, 0); // some bytes (weights, names) are free to change
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
