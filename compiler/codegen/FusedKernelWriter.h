//===- FusedKernelWriter.h - One cell.fused as a CUDA kernel ---*- C++ -*-===//
#ifndef CELLC_CODEGEN_FUSEDKERNELWRITER_H
#define CELLC_CODEGEN_FUSEDKERNELWRITER_H

#include "compiler/codegen/KernelEmitter.h"

#include "cell/IR/CellOps.h"

namespace cellc::codegen {

/// Writes the kernel for `fused` (of a batch-specialized cell) named `name`
/// into `os`, and fills `info`. Reports unsupported ops on the op.
mlir::LogicalResult writeFusedKernel(mlir::cell::FusedOp fused,
                                     llvm::StringRef name, int64_t batch,
                                     llvm::raw_ostream &os, KernelInfo &info);

/// The CUDA type of an element type ("float", "long long", ...), or "" when
/// there is none.
std::string cudaType(mlir::Type elementType);

} // namespace cellc::codegen

#endif // CELLC_CODEGEN_FUSEDKERNELWRITER_H
