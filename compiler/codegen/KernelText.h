//===- KernelText.h - Pieces shared by the fused-kernel writers -*- C++ -*-===//
//
// What FusedKernelWriter.cpp (parameters, element-wise kernels, dispatch)
// and RowKernelWriter.cpp (kernels of a block a row: argmax, reductions
// among element-wise ops, per-row matrix products) both need: how results
// are stored and where, and the row kernels' writers themselves.
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_CODEGEN_KERNELTEXT_H
#define CELLC_CODEGEN_KERNELTEXT_H

#include "compiler/codegen/KernelEmitter.h"

#include "cell/IR/CellOps.h"

#include <string>

namespace cellc::codegen {

/// `value` (computed in computeType) converted for storing as `element`.
std::string storeCast(mlir::Type element, const std::string &value);
/// "gather", "dense", "broadcast" or "scatter": how operand (or result)
/// `index` of `fused` is laid out.
std::string accessOf(mlir::cell::FusedOp fused, bool result, unsigned index);
/// Where result `i` of row `row` (column `col`, empty for [B] results) goes.
std::string destination(mlir::cell::FusedOp fused, unsigned i,
                        const std::string &row, const std::string &col);

class KernelBodyWriter;

/// Writes the store of result `i` of `fused` (`value`) at row r, columns
/// c..c+3, as one float4 of its four lanes' expressions.
mlir::LogicalResult writeVectorResult(mlir::cell::FusedOp fused,
                                      KernelBodyWriter &writer,
                                      mlir::Value value, unsigned i,
                                      llvm::raw_ostream &os);

/// The columns of result `value` a row: 0 for a [batch] result (one value a
/// row, written once), else rowWidth.
int64_t resultColumns(mlir::Value value);
/// The distinct resultColumns of what `yield` yields, in first-seen order.
llvm::SmallVector<int64_t> distinctResultColumns(mlir::cell::YieldOp yield);

/// An argmax over a row's columns, alone in its kernel: a block a row.
mlir::LogicalResult writeArgMax(mlir::cell::FusedOp fused,
                                mlir::cell::ArgMaxOp argmax,
                                llvm::raw_ostream &os, KernelInfo &info);
/// Reductions over a row's columns (`reductions`, in body order) among
/// element-wise ops: a block a row runs them in turn, then writes the
/// results.
mlir::LogicalResult writeRowPhases(mlir::cell::FusedOp fused,
                                   llvm::ArrayRef<mlir::Operation *> reductions,
                                   llvm::raw_ostream &os, KernelInfo &info);
/// A product of per-row matrices, alone in its kernel: a block a row.
mlir::LogicalResult writeRowMatMul(mlir::cell::FusedOp fused,
                                   mlir::cell::RowMatMulOp matmul,
                                   llvm::raw_ostream &os, KernelInfo &info);

} // namespace cellc::codegen

#endif // CELLC_CODEGEN_KERNELTEXT_H
