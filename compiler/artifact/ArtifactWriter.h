//===- ArtifactWriter.h - The compiled model as a .cellpack ----*- C++ -*-===//
//
// Serializes a module that went through the whole pipeline, the generated
// CUDA of each cell and what NVRTC made of it into the cellpack format
// (runtime/schema/cellpack.fbs): the envelope with format version and payload
// checksum around a nested Model.
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_ARTIFACT_ARTIFACTWRITER_H
#define CELLC_ARTIFACT_ARTIFACTWRITER_H

#include "compiler/codegen/KernelEmitter.h"
#include "compiler/codegen/NvrtcCompiler.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <vector>

namespace cellc {

enum class Precision { FP32, TF32, BF16, FP16 };

/// What code generation produced for one generic cell.
struct CellBinary {
  codegen::CudaProgram program;
  codegen::CompiledProgram compiled;
};

struct ArtifactInputs {
  mlir::ModuleOp module;            // after cell-plan-memory
  std::vector<CellBinary> binaries; // one per generic cell, any order
  Precision precision = Precision::FP32;
  std::string producer; // "cellc 0.1.0"
};

/// The artifact bytes (size-prefixed FlatBuffer), or a diagnostic on the
/// module when something in it has no representation in the format.
mlir::FailureOr<std::vector<uint8_t>>
writeArtifact(const ArtifactInputs &inputs);

} // namespace cellc

#endif // CELLC_ARTIFACT_ARTIFACTWRITER_H
