//===- PrepareWeights.cpp - cell-prepare-weights -------------------------===//
//
// Moves work on constant weights from every cell step to compile time:
// transposes GEMM operands that are constants (so `trans_a`/`trans_b` vanish)
// and merges the two biases of `gemm + gemm` into one.
//
//===----------------------------------------------------------------------===//
#include "cell/Transforms/Passes.h"

#include "cell/IR/WeightData.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::cell {
#define GEN_PASS_DEF_PREPAREWEIGHTS
#include "cell/Transforms/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

/// The constant behind `value`, if it is a `cell.constant` whose data is
/// available.
static ConstantOp constantOf(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant || !constantBytes(constant.getValue()))
    return {};
  return constant;
}

/// A name for a blob derived from `constant`'s (resource name or "weight").
static std::string derivedName(ConstantOp constant, StringRef suffix) {
  return weightName(constant.getValue(), "weight") + suffix.str();
}

/// `constant` (a matrix) transposed, as a new constant op before `before`.
static Value transposedConstant(PatternRewriter &rewriter, Operation *before,
                                ConstantOp constant) {
  auto type = constant.getType().cast<RankedTensorType>();
  std::vector<char> bytes = *constantBytes(constant.getValue());
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  unsigned width = elementBytes(type);
  std::vector<char> transposed(bytes.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::copy_n(&bytes[(r * cols + c) * width], width,
                  &transposed[(c * rows + r) * width]);
  auto resultType = RankedTensorType::get({cols, rows}, type.getElementType());
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(before);
  return rewriter.create<ConstantOp>(
      constant.getLoc(),
      makeConstant(resultType, transposed, derivedName(constant, ".T")));
}

namespace {
/// gemm(A, B) {trans_b} with constant B -> gemm(A, B^T); same for trans_a.
struct TransposeGemmConstants : OpRewritePattern<GemmOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GemmOp gemm,
                                PatternRewriter &rewriter) const override {
    ConstantOp a = gemm.getTransA() ? constantOf(gemm.getA()) : ConstantOp();
    ConstantOp b = gemm.getTransB() ? constantOf(gemm.getB()) : ConstantOp();
    if (!a && !b)
      return failure();
    rewriter.updateRootInPlace(gemm, [&] {
      if (a) {
        gemm.getAMutable().assign(transposedConstant(rewriter, gemm, a));
        gemm.setTransA(false);
      }
      if (b) {
        gemm.getBMutable().assign(transposedConstant(rewriter, gemm, b));
        gemm.setTransB(false);
      }
    });
    return success();
  }
};

/// transpose(constant matrix) -> constant.
struct FoldConstantTranspose : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    ConstantOp constant = constantOf(transpose.getInput());
    if (!constant || transpose.getPerm().size() != 2 ||
        transpose.getPerm()[0] != 1)
      return failure();
    rewriter.replaceOp(transpose,
                       transposedConstant(rewriter, transpose, constant));
    return success();
  }
};

/// add(gemm(x, Wx, bx), gemm(h, Wh, bh)) -> add(gemm(x, Wx, bx + bh),
/// gemm(h, Wh)) when both biases are constants of one type and beta = 1.
struct MergeGemmBiases : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    auto first = add.getLhs().getDefiningOp<GemmOp>();
    auto second = add.getRhs().getDefiningOp<GemmOp>();
    if (!first || !second || first == second || !first.getC() ||
        !second.getC() || !first->hasOneUse() || !second->hasOneUse() ||
        !first.getBeta().isExactlyValue(1.0) ||
        !second.getBeta().isExactlyValue(1.0) ||
        first.getType() != add.getType() || second.getType() != add.getType())
      return failure();
    ConstantOp firstBias = constantOf(first.getC());
    ConstantOp secondBias = constantOf(second.getC());
    if (!firstBias || !secondBias ||
        firstBias.getType() != secondBias.getType() ||
        !getElementTypeOrSelf(firstBias.getType()).isa<FloatType>())
      return failure();
    auto type = firstBias.getType().cast<RankedTensorType>();
    auto lhs = DenseElementsAttr::getFromRawBuffer(
        type, *constantBytes(firstBias.getValue()));
    auto rhs = DenseElementsAttr::getFromRawBuffer(
        type, *constantBytes(secondBias.getValue()));
    SmallVector<APFloat> sums;
    for (auto [x, y] :
         llvm::zip(lhs.getValues<APFloat>(), rhs.getValues<APFloat>())) {
      APFloat sum = x;
      sum.add(y, APFloat::rmNearestTiesToEven);
      sums.push_back(sum);
    }
    auto merged = DenseElementsAttr::get(type, sums);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(first);
    Value bias = rewriter.create<ConstantOp>(
        firstBias.getLoc(), makeConstant(type, merged.getRawData(),
                                         derivedName(firstBias, ".merged")));
    rewriter.updateRootInPlace(first,
                               [&] { first.getCMutable().assign(bias); });
    rewriter.updateRootInPlace(second, [&] { second.getCMutable().clear(); });
    return success();
  }
};

/// A constant GEMM bias of shape [1, N], [1] or [] (ONNX broadcasts them)
/// becomes the [N] vector the GEMM descriptors and kernels expect.
struct NormalizeGemmBias : OpRewritePattern<GemmOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GemmOp gemm,
                                PatternRewriter &rewriter) const override {
    ConstantOp bias = gemm.getC() ? constantOf(gemm.getC()) : ConstantOp();
    if (!bias)
      return failure();
    auto type = bias.getType().cast<RankedTensorType>();
    int64_t columns = gemm.getType().cast<RankedTensorType>().getDimSize(1);
    bool rowVector = type.getRank() == 2 && type.getDimSize(0) == 1 &&
                     type.getDimSize(1) == columns;
    bool scalar =
        type.getNumElements() == 1 && !(type.getRank() == 1 && columns == 1);
    if (!rowVector && !scalar)
      return failure();
    std::vector<char> bytes = *constantBytes(bias.getValue());
    unsigned width = elementBytes(type);
    if (scalar) {
      std::vector<char> expanded;
      for (int64_t i = 0; i < columns; ++i)
        expanded.insert(expanded.end(), bytes.begin(), bytes.begin() + width);
      bytes = std::move(expanded);
    }
    auto vectorType = RankedTensorType::get({columns}, type.getElementType());
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(gemm);
    Value vector = rewriter.create<ConstantOp>(
        bias.getLoc(),
        makeConstant(vectorType, bytes, derivedName(bias, ".vector")));
    rewriter.updateRootInPlace(gemm,
                               [&] { gemm.getCMutable().assign(vector); });
    return success();
  }
};

struct PrepareWeightsPass
    : mlir::cell::impl::PrepareWeightsBase<PrepareWeightsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<TransposeGemmConstants, FoldConstantTranspose, MergeGemmBiases,
                 NormalizeGemmBias>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
