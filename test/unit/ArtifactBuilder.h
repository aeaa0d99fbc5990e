//===- ArtifactBuilder.h - Small cellpacks for the loader tests -*- C++ -*-===//
//
// What the artifact tests share (defined in ArtifactTest.cpp): a small but
// complete artifact built with the FlatBuffers builder (one LSTM-like cell,
// two batch plans of a GEMM and a fused kernel, weights, a fake CUBIN and
// PTX) from a Spec whose every field defaults to the valid one, and the
// loader's answer for it.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_ARTIFACTBUILDER_H
#define CELL_TEST_ARTIFACTBUILDER_H

#include "artifact/Artifact.h"

#include "schema/Checksum.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cellc::testing {

/// What buildModel makes; every field defaults to the valid artifact.
struct Spec {
  std::string producer = "cellc test";
  std::vector<uint32_t> batchSizes = {1, 8};
  std::vector<std::string> cubinArchs = {"sm_80"};
  std::string ptxArch = "compute_80"; // "" for no PTX
  std::string kernelName;             // "" for lstm_b<B>_k0 (listed)
  cellpack::KernelShape kernelShape = cellpack::KernelShape::Elementwise;
  uint32_t kernelBlockSize = 128;
  uint32_t gemmWeightIndex = 0;
  int64_t gemmOffsetFromEnd = -1; // >= 0: d at workspace_bytes - this
  int64_t gemmK = 4;
  std::vector<int64_t> gemmWeightShape = {4, 8}; // as the GEMM's b reads W
  int weightDataDelta = 0;                       // bytes added to W's data
  size_t weightSkew = 0; // W's data this many bytes off 64-alignment
  uint64_t peakExtra = 0;
  cellpack::Access gatheredInputAccess = cellpack::Access::Gather;
  uint32_t regionOperand = 1;
  bool unknownStepKind = false;
  bool duplicateCell = false;
  bool withCode = true;
};

/// The nested Model, finished in its own builder without identifier.
std::vector<uint8_t> buildModel(const Spec &spec);

/// The envelope around `model`: size prefix, "CPAK", version, checksum.
std::vector<uint8_t> wrapModel(const std::vector<uint8_t> &model,
                               uint32_t version = cellpack::kFormatVersion,
                               size_t payloadSkew = 0);

/// The artifact of `spec`: its Model in the envelope.
std::vector<uint8_t> buildArtifact(const Spec &spec = Spec());

/// The artifact of `spec` loaded as "tiny.cellpack"; null (and the test
/// failed) when it does not load.
std::shared_ptr<const cellrun::LoadedArtifact>
loadValid(const Spec &spec = Spec());

/// The loader's message for `bytes` (empty when it loads).
std::string loadError(std::vector<uint8_t> bytes);

/// The loader's message for the artifact of `spec` (empty when it loads).
std::string specError(const Spec &spec);

} // namespace cellc::testing

#endif // CELL_TEST_ARTIFACTBUILDER_H
