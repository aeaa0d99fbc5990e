//===- KernelEmitter.h - CUDA C++ for the fused kernels --------*- C++ -*-===//
//
// Turns every `cell.fused` of the batch-specialized copies of a cell into one
// CUDA kernel, all in one source (one NVRTC program per cell). The batch size
// and every row width are compile-time constants. A kernel reads gather
// operands through row-index vectors and writes scatter results to row-index
// destinations; only the first `n` rows of a task are touched.
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_CODEGEN_KERNELEMITTER_H
#define CELLC_CODEGEN_KERNELEMITTER_H

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace cellc::codegen {

/// One parameter of a generated kernel, in order.
struct KernelParam {
  enum class Kind {
    Input,      // operand `index` of the fused op (its data)
    InputRows,  // row indices of gather operand `index`
    Output,     // result `index` of the fused op (its data)
    OutputRows, // row-index destinations of scatter result `index`
    RowCount,   // n: the task's active rows (int)
  };
  Kind kind;
  unsigned index = 0;
};

struct KernelInfo {
  enum class Shape {
    Elementwise,  // rowWidth threads a row, each computing one element or,
                  // when rows allow float4 access, four consecutive ones
    RowReduction, // blocksPerRow blocks a row (argmax, reductions, row
                  // matmuls)
  };
  std::string name; // extern "C" symbol, e.g. "lstm_b8_k1"
  std::string cell; // the specialized cell, e.g. "lstm_b8"
  int64_t batch = 0;
  Shape shape = Shape::Elementwise;
  int64_t rowWidth = 0;     // Elementwise: threads a row; RowReduction:
                            // columns reduced
  unsigned blockSize = 256; // threads per block
  /// RowReduction: blocks a row, each taking a share of the row's outputs
  /// (a row matmul); block b serves row b / blocksPerRow.
  int64_t blocksPerRow = 1;
  /// The block's threads meet at __syncthreads (a tree reduction, or a row
  /// matmul a warp an output); the runtime launches such kernels with
  /// blocks of a multiple of 32 threads up to 256.
  bool usesBarrier = false;
  std::vector<KernelParam> params;
  std::vector<std::string> paramTypes; // C type of each parameter
  /// The kernel that runs the GEMM before this step and then this step as
  /// its epilogue (GemmEpilogueWriter.cpp), when there is one: its
  /// parameters are the skinny GEMM kernels' with A's row indices
  /// (SkinnyGemmKernel.h), then this kernel's; D's columns are cut into
  /// `segments` segments of this kernel's row width; the GEMM's result is
  /// this step's input `gemmInput`.
  struct GemmEpilogue {
    std::string kernel;
    unsigned segments = 0;
    unsigned gemmInput = 0;
  };
  std::optional<GemmEpilogue> gemmEpilogue;
  /// Number of blocks for a task with `rows` active rows.
  int64_t gridSize(int64_t rows) const;
};

struct CudaProgram {
  std::string cell; // the generic cell
  std::string source;
  std::vector<KernelInfo> kernels; // in cell order, batch sizes ascending
  /// Kernels the runtime launches itself (RowCopyKernel.h), also in
  /// `source`.
  std::vector<std::string> supportKernels;
  /// Kernels that run a GEMM and the step after it (KernelInfo::gemmEpilogue).
  std::vector<std::string> epilogueKernels;
  /// Every kernel symbol the source defines.
  std::vector<std::string> kernelNames() const;
};

/// Emits the CUDA source for every batch-specialized copy of `genericCell`
/// (cells with `cell.generic = @genericCell`) in `module`, which must have
/// been through cell-fuse-elementwise, and the runtime's support kernels.
/// With `gemmEpilogues`, also a GEMM-and-epilogue kernel for each step that
/// can be one (GemmEpilogueWriter.h; the runtime's skinny GEMMs are fp32,
/// so not for bf16 or fp16 GEMMs) whose GEMM's weights take at least
/// `gemmEpilogueMinWeightBytes`. Unsupported constructs are reported as
/// diagnostics on the op.
mlir::FailureOr<CudaProgram> emitCuda(mlir::ModuleOp module,
                                      llvm::StringRef genericCell,
                                      bool gemmEpilogues = true,
                                      int64_t gemmEpilogueMinWeightBytes = 0);

} // namespace cellc::codegen

#endif // CELLC_CODEGEN_KERNELEMITTER_H
