//===- FoldTokenProjections.cpp - cell-fold-token-projections ------------===//
//
// gemm(gather(E, tokens), W, c) with constant E, W and c: every row the GEMM
// can produce is one of E's rows times W, so the product is computed once
// here for the whole table, T = alpha * E * W + beta * c, and the step looks
// its rows up: gather(T, tokens). A token-fed cell's input projection (an
// LSTM language model's, an encoder's or decoder's embedding times W_ih)
// then costs a row copy instead of a share of the step's GEMM: the step
// multiplies only h by the recurrent weights. T is computed in double and
// rounded once.
//
//===----------------------------------------------------------------------===//
#include "cell/Transforms/Passes.h"

#include "cell/IR/WeightData.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cstring>

namespace mlir::cell {
#define GEN_PASS_DEF_FOLDTOKENPROJECTIONS
#include "cell/Transforms/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

namespace {
/// A table this small is folded even where it is larger than the lookup
/// table and weight it replaces.
constexpr int64_t kSmallTableBytes = 1 << 20;

/// The fp32 values of constant `value` ([rows, columns] or [columns]), if
/// it is one.
std::optional<std::vector<float>> floatsOf(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto type = constant.getType().dyn_cast<RankedTensorType>();
  if (!type || !type.getElementType().isF32() || !type.hasStaticShape())
    return std::nullopt;
  std::optional<std::vector<char>> bytes = constantBytes(constant.getValue());
  if (!bytes || bytes->size() != type.getNumElements() * sizeof(float))
    return std::nullopt;
  std::vector<float> floats(type.getNumElements());
  std::memcpy(floats.data(), bytes->data(), bytes->size());
  return floats;
}

struct FoldTokenProjection : OpRewritePattern<GemmOp> {
  FoldTokenProjection(MLIRContext *context, int64_t maxTableBytes)
      : OpRewritePattern(context), maxTableBytes(maxTableBytes) {}

  LogicalResult matchAndRewrite(GemmOp gemm,
                                PatternRewriter &rewriter) const override {
    auto lookup = gemm.getA().getDefiningOp<GatherOp>();
    if (!lookup || lookup.getAxis() != 0 || gemm.getTransA())
      return failure();
    auto tableType = lookup.getData().getType().dyn_cast<RankedTensorType>();
    auto indexType = lookup.getIndices().getType().dyn_cast<RankedTensorType>();
    auto resultType = gemm.getType().dyn_cast<RankedTensorType>();
    auto weightType = gemm.getB().getType().dyn_cast<RankedTensorType>();
    if (!tableType || tableType.getRank() != 2 || !indexType ||
        indexType.getRank() != 1 || !resultType || resultType.getRank() != 2 ||
        !resultType.getElementType().isF32() || !weightType ||
        weightType.getRank() != 2)
      return failure();
    std::optional<std::vector<float>> table = floatsOf(lookup.getData());
    std::optional<std::vector<float>> weight = floatsOf(gemm.getB());
    if (!table || !weight)
      return failure();
    int64_t vocabulary = tableType.getDimSize(0),
            depth = tableType.getDimSize(1);
    bool transB = gemm.getTransB();
    int64_t columns = weightType.getDimSize(transB ? 0 : 1);
    if (weightType.getDimSize(transB ? 1 : 0) != depth ||
        resultType.getDimSize(1) != columns)
      return failure();
    std::optional<std::vector<float>> bias;
    if (gemm.getC()) {
      bias = floatsOf(gemm.getC());
      auto biasType = gemm.getC().getType().cast<RankedTensorType>();
      // A bias per column only: one per row would depend on the batch.
      if (!bias || biasType.getRank() != 1 || biasType.getDimSize(0) != columns)
        return failure();
    }
    // The folded table must be no larger than what it replaces (the lookup
    // table and the weight), or small anyway.
    int64_t foldedBytes = vocabulary * columns * int64_t(sizeof(float));
    int64_t replacedBytes =
        int64_t(table->size() + weight->size()) * int64_t(sizeof(float));
    if (foldedBytes > std::max(replacedBytes, kSmallTableBytes) ||
        foldedBytes > maxTableBytes)
      return failure();

    double alpha = gemm.getAlpha().convertToDouble();
    double beta = gemm.getBeta().convertToDouble();
    std::vector<float> folded(vocabulary * columns);
    std::vector<double> row(columns);
    for (int64_t v = 0; v < vocabulary; ++v) {
      std::fill(row.begin(), row.end(), 0.0);
      const float *embedding = table->data() + v * depth;
      for (int64_t k = 0; k < depth; ++k) {
        double scale = embedding[k];
        if (transB)
          for (int64_t j = 0; j < columns; ++j)
            row[j] += scale * (*weight)[j * depth + k];
        else
          for (int64_t j = 0; j < columns; ++j)
            row[j] += scale * (*weight)[k * columns + j];
      }
      for (int64_t j = 0; j < columns; ++j)
        folded[v * columns + j] = static_cast<float>(
            alpha * row[j] + (bias ? beta * (*bias)[j] : 0.0));
    }
    auto foldedType =
        RankedTensorType::get({vocabulary, columns}, rewriter.getF32Type());
    auto tableConstant = lookup.getData().getDefiningOp<ConstantOp>();
    std::string name =
        weightName(tableConstant.getValue(), "embedding") + "*" +
        weightName(gemm.getB().getDefiningOp<ConstantOp>().getValue(),
                   "weight");
    ArrayRef<char> bytes(reinterpret_cast<const char *>(folded.data()),
                         folded.size() * sizeof(float));
    Value foldedTable = rewriter.create<ConstantOp>(
        gemm.getLoc(), makeConstant(foldedType, bytes, name));
    rewriter.replaceOpWithNewOp<GatherOp>(gemm, resultType, foldedTable,
                                          lookup.getIndices(),
                                          rewriter.getI64IntegerAttr(0));
    return success();
  }

  int64_t maxTableBytes;
};

struct FoldTokenProjectionsPass
    : mlir::cell::impl::FoldTokenProjectionsBase<FoldTokenProjectionsPass> {
  using FoldTokenProjectionsBase::FoldTokenProjectionsBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldTokenProjection>(&getContext(), maxTableBytes);
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
