//===- GemmEpilogueWriter.h - A GEMM and the step after it, one kernel -*-===//
//
// At small batch sizes a step of a large cell is a skinny GEMM (a few rows
// against megabytes of weights) and an element-wise kernel after it (the
// gates). When that kernel reads the GEMM's result only column-aligned, cut
// into equal segments of its own row width (an LSTM's four gates, a GRU's
// three), each of the skinny GEMM's column tiles can hold 32 columns of
// every segment, and the block that finishes a tile computes the step's
// elements of those 32 columns right away: one launch instead of two, and
// the result read back from L2 by the block that wrote it.
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_CODEGEN_GEMMEPILOGUEWRITER_H
#define CELLC_CODEGEN_GEMMEPILOGUEWRITER_H

#include "compiler/codegen/KernelEmitter.h"

#include "cell/IR/CellOps.h"

#include <optional>

namespace cellc::codegen {

/// A fused step that can be the epilogue of the GEMM before it.
struct GemmEpilogueShape {
  mlir::cell::GemmOp gemm;
  unsigned gemmInput = 0; // the fused op's operand that is the GEMM's result
  unsigned segments = 0;  // the GEMM's columns over the step's row width
};

/// The GEMM `fused` (the step written as `info`, of batch size `batch`)
/// can take as its epilogue: the op right before it (constants aside) is an
/// fp32 GEMM of `batch` rows the skinny kernels run (SkinnyGemmKernel.h),
/// with a weight of at least `minWeightBytes` for B (below, the launch
/// saved is not worth the NVRTC time), whose only use is `fused`, and none
/// of whose operands' workspace bytes `fused` writes; `fused` is a float4
/// element-wise kernel whose results all have one row width W, the GEMM's
/// columns are 1 to 4 segments of W (W a multiple of 32), and its result
/// reaches the results only through element-wise ops that keep columns and
/// one split into those segments. nullopt otherwise.
std::optional<GemmEpilogueShape> gemmEpilogueShape(mlir::cell::FusedOp fused,
                                                   const KernelInfo &info,
                                                   int64_t batch,
                                                   int64_t minWeightBytes = 0);

/// Writes the kernel `name` for `shape` into `os`: a device function
/// computing `fused`'s elements at (row, column) with the parameters of
/// `info`, the kernel that runs the skinny GEMM body with segmented tiles
/// and then that function over its tile's columns of the task's rows, and
/// its CPU-emulation launcher. Sets info.gemmEpilogue.
mlir::LogicalResult writeGemmEpilogueKernel(mlir::cell::FusedOp fused,
                                            const GemmEpilogueShape &shape,
                                            llvm::StringRef name, int64_t batch,
                                            llvm::raw_ostream &os,
                                            KernelInfo &info);

} // namespace cellc::codegen

#endif // CELLC_CODEGEN_GEMMEPILOGUEWRITER_H
