//===- KernelBodyWriter.h - Expressions of a fused kernel ------*- C++ -*-===//
//
// The element-wise view of a cell.fused body that FusedKernelWriter turns
// into kernels: each value is asked for at an index (row, column, and a lane
// in float4 mode), and the writer returns a C++ expression for it, emitting
// locals, loops (GEMMs inside single-kernel steps) and branches (concat) as
// needed.
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_CODEGEN_KERNELBODYWRITER_H
#define CELLC_CODEGEN_KERNELBODYWRITER_H

#include "cell/IR/CellOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace cellc::codegen {

using mlir::FailureOr;

/// The tensor type of `value`.
mlir::RankedTensorType tensorOf(mlir::Value value);
/// Columns per row of a batch value ([B] -> 1, [B, C] -> C, [B, M, N] ->
/// M * N).
int64_t rowWidth(mlir::Value value);
/// The column expression of an operand with row shape `from` broadcast
/// (NumPy) to row shape `to` (the dimensions after the batch, `from` padded
/// with 1s to the same rank), read at column `col` of the result
/// (RowBroadcast.cpp).
std::string broadcastColumn(llvm::ArrayRef<int64_t> from,
                            llvm::ArrayRef<int64_t> to, const std::string &col);
/// The type the kernel computes an element type in.
std::string computeType(mlir::Type type);
/// A C++ literal that reads back as exactly `value` (infinities by their
/// bits); nullopt for NaN.
std::optional<std::string> floatLiteral(double value, bool isDouble);

/// Where an element is: row and column expressions (column empty for values
/// with one element per row or without columns).
struct Index {
  std::string row, col;
  int lane = -1; // 0..3 in vector mode: component `lane` of a float4 at col
};

inline const char *const kLaneNames[] = {"x", "y", "z", "w"};

class KernelBodyWriter {
public:
  KernelBodyWriter(mlir::cell::FusedOp fused, llvm::raw_ostream &os)
      : fused_(fused), os_(os) {
    analyzeBatch();
    scopes_.emplace_back();
  }

  /// The expression of `value` at `index` (emitting locals as needed).
  FailureOr<std::string> element(mlir::Value value, const Index &index);
  std::string indent() const { return std::string(2 * scopes_.size(), ' '); }
  /// Opens `if (condition) {`: what is computed inside stays inside.
  void beginGuard(const std::string &condition) {
    beginLoop("if (" + condition + ")");
  }
  /// Opens `header {` (a loop or a branch): what is computed inside stays
  /// inside.
  void beginLoop(const std::string &header) {
    os_ << indent() << header << " {\n";
    scopes_.emplace_back();
  }
  /// Closes a guard or a loop.
  void endGuard() {
    scopes_.pop_back();
    os_ << indent() << "}\n";
  }
  /// Makes `value` the expression `expression` at every index (a row's
  /// reduction, computed by the kernel before it is read).
  void define(mlir::Value value, const std::string &expression) {
    defined_[value] = expression;
  }

  bool hasBatch(mlir::Value value) const {
    return batchValues_.contains(value);
  }

private:
  void analyzeBatch();
  /// The expression of `value`, a result of `op`, at `index`
  /// (KernelOpExpressions.cpp).
  FailureOr<std::string> compute(mlir::Operation *op, mlir::Value value,
                                 const Index &index);
  /// An element-wise op over broadcast operands: add, sub, mul, div, pow,
  /// equal and where.
  FailureOr<std::string>
  broadcastingExpr(mlir::Operation *op, mlir::Value value, const Index &index);
  /// A split result: its input at the column shifted by the sizes before it.
  FailureOr<std::string> splitElement(mlir::cell::SplitOp split,
                                      mlir::Value value, const Index &index);
  /// A slice of columns: its input at start + column * step.
  FailureOr<std::string> sliceElement(mlir::cell::SliceOp slice,
                                      const Index &index);
  /// A concat of columns: a local set by one branch per input.
  FailureOr<std::string> concatElement(mlir::cell::ConcatOp concat,
                                       mlir::Type elementType,
                                       const Index &index);
  /// An embedding lookup: the table row of the row's (clamped) token.
  FailureOr<std::string> gatherElement(mlir::cell::GatherOp gather,
                                       const Index &index);
  /// A reshape, squeeze or unsqueeze that keeps the batch leading: the same
  /// column of its input.
  FailureOr<std::string> reshapeElement(mlir::Operation *op,
                                        const Index &index);
  FailureOr<std::string> load(mlir::BlockArgument arg, const Index &index);
  FailureOr<std::string>
  broadcastOperand(mlir::Value operand, mlir::Value result, const Index &index);
  std::string local(mlir::Value value, const std::string &expression);
  /// Component `lane` of the float4 at `address`, loading it once.
  std::string vectorComponent(const std::string &address, int lane);
  FailureOr<std::string> dotProduct(mlir::cell::GemmOp gemm,
                                    const Index &index);

  mlir::cell::FusedOp fused_;
  llvm::raw_ostream &os_;
  llvm::DenseSet<mlir::Value> batchValues_;
  std::vector<llvm::StringMap<std::string>> scopes_;
  llvm::DenseMap<mlir::Value, unsigned> ids_;
  llvm::DenseMap<mlir::Value, std::string> defined_;
  unsigned counter_ = 0;
};

} // namespace cellc::codegen

#endif // CELLC_CODEGEN_KERNELBODYWRITER_H
