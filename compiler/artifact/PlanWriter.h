//===- PlanWriter.h - Task plans of one cell into the cellpack -*- C++ -*-===//
#ifndef CELLC_ARTIFACT_PLANWRITER_H
#define CELLC_ARTIFACT_PLANWRITER_H

#include "compiler/artifact/ArtifactWriter.h"

#include "cell/IR/CellOps.h"
#include "cellpack_generated.h"

#include "llvm/ADT/DenseMap.h"

namespace cellc {

/// The weights of one cell type: every constant its copies pass to a GEMM or
/// a kernel, each stored once.
struct WeightTable {
  llvm::DenseMap<mlir::Attribute, unsigned> index;
  std::vector<mlir::ElementsAttr> values;
  unsigned add(mlir::ElementsAttr value);
};

cellpack::DType toDType(mlir::Type elementType);

/// Serializes the plan of one batch-specialized copy. `kernels` are the
/// emitted kernels of that copy, in the order of its fused ops.
mlir::FailureOr<flatbuffers::Offset<cellpack::BatchPlan>>
writeBatchPlan(flatbuffers::FlatBufferBuilder &fbb, mlir::cell::CellOp copy,
               llvm::ArrayRef<const codegen::KernelInfo *> kernels,
               Precision precision, WeightTable &weights);

} // namespace cellc

#endif // CELLC_ARTIFACT_PLANWRITER_H
