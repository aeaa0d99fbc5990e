//===- MergeGemms.cpp - cell-merge-gemms ---------------------------------===//
//
// add(gemm(x, Wx, b), gemm(h, Wh)) -> gemm(concat(x, h), [Wx; Wh], b): one
// GEMM with the concatenated activations and the weights stacked by rows.
//
//===----------------------------------------------------------------------===//
#include "cell/Transforms/Passes.h"

#include "cell/IR/WeightData.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::cell {
#define GEN_PASS_DEF_MERGEGEMMS
#include "cell/Transforms/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

namespace {
/// What a mergeable GEMM contributes: its activation, weight and bias.
struct Projection {
  GemmOp gemm;
  ConstantOp weight;
  std::vector<char> weightBytes;
};

/// A GEMM `x * W (+ c)` with a constant, untransposed W of the result's
/// element type, unit alpha/beta, a batch-leading 2-D activation, and no
/// other user than the add being merged.
std::optional<Projection> asProjection(Value value) {
  auto gemm = value.getDefiningOp<GemmOp>();
  if (!gemm || !gemm->hasOneUse() || gemm.getTransA() || gemm.getTransB() ||
      !gemm.getAlpha().isExactlyValue(1.0) ||
      !gemm.getBeta().isExactlyValue(1.0))
    return std::nullopt;
  auto activation = gemm.getA().getType().cast<RankedTensorType>();
  if (activation.getRank() != 2 || !activation.isDynamicDim(0))
    return std::nullopt;
  auto weight = gemm.getB().getDefiningOp<ConstantOp>();
  if (!weight)
    return std::nullopt;
  std::optional<std::vector<char>> bytes = constantBytes(weight.getValue());
  if (!bytes)
    return std::nullopt;
  return Projection{gemm, weight, std::move(*bytes)};
}

std::string blobNameOf(ConstantOp constant) {
  return weightName(constant.getValue(), "weight");
}

struct MergeProjectionSum : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    std::optional<Projection> first = asProjection(add.getLhs());
    std::optional<Projection> second = asProjection(add.getRhs());
    if (!first || !second || first->gemm == second->gemm ||
        first->gemm.getType() != add.getType() ||
        second->gemm.getType() != add.getType())
      return failure();
    // At most one bias survives; two are merged by cell-prepare-weights.
    if (first->gemm.getC() && second->gemm.getC())
      return failure();
    auto firstWeight = first->weight.getType().cast<RankedTensorType>();
    auto secondWeight = second->weight.getType().cast<RankedTensorType>();
    if (firstWeight.getElementType() != secondWeight.getElementType())
      return failure();

    // Stacking [Wx; Wh] by rows is appending the row-major bytes.
    std::vector<char> stacked = std::move(first->weightBytes);
    stacked.insert(stacked.end(), second->weightBytes.begin(),
                   second->weightBytes.end());
    auto stackedType = RankedTensorType::get(
        {firstWeight.getDimSize(0) + secondWeight.getDimSize(0),
         firstWeight.getDimSize(1)},
        firstWeight.getElementType());
    Location loc = add.getLoc();
    Value weight = rewriter.create<ConstantOp>(
        first->weight.getLoc(), makeConstant(stackedType, stacked,
                                             blobNameOf(first->weight) + "+" +
                                                 blobNameOf(second->weight)));
    Value activations = rewriter.create<ConcatOp>(
        loc, ValueRange{first->gemm.getA(), second->gemm.getA()},
        rewriter.getI64IntegerAttr(1));
    Value bias = first->gemm.getC() ? first->gemm.getC() : second->gemm.getC();
    SmallVector<Value> operands = {activations, weight};
    if (bias)
      operands.push_back(bias);
    auto merged = rewriter.create<GemmOp>(loc, add.getType(), operands,
                                          first->gemm->getAttrs());
    rewriter.replaceOp(add, merged.getResult());
    rewriter.eraseOp(first->gemm);
    rewriter.eraseOp(second->gemm);
    return success();
  }
};

struct MergeGemmsPass : mlir::cell::impl::MergeGemmsBase<MergeGemmsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<MergeProjectionSum>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
