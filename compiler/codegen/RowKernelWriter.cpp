//===- RowKernelWriter.cpp - Kernels of a block a row --------------------===//
//
// The fused kernels that give each row a block (or several): an argmax over a
// row's columns, reductions over a row's columns among element-wise ops (run in
// phases), and products of per-row matrices (attention over a memory).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/KernelBodyWriter.h"
#include "compiler/codegen/KernelText.h"

#include "KernelGrid.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::cell;
using namespace cellc::codegen;

/// The least value of a CUDA compute type, as a literal.
static std::string leastValue(const std::string &type) {
  if (type == "double")
    return "__longlong_as_double(0xfff0000000000000LL)";
  if (type == "float")
    return "__int_as_float(0xff800000)";
  if (type == "long long")
    return "(-9223372036854775807LL - 1)";
  if (type == "int")
    return "(-2147483647 - 1)";
  if (type == "short")
    return "(-32768)";
  return "(-128)";
}

LogicalResult cellc::codegen::writeArgMax(FusedOp fused, ArgMaxOp argmax,
                                          llvm::raw_ostream &os,
                                          KernelInfo &info) {
  auto yield = cast<YieldOp>(fused.getBody().front().getTerminator());
  if (yield.getNumOperands() != 1 ||
      yield.getOperand(0) != argmax.getResult() || argmax.getAxis() != 1 ||
      tensorOf(argmax.getInput()).getRank() != 2)
    return fused.emitError(
        "code generation supports an argmax over the columns of a row as the "
        "only result of its kernel");
  Value input = argmax.getInput();
  int64_t width = rowWidth(input);
  bool last = argmax.getSelectLastIndex();
  std::string type = computeType(tensorOf(input).getElementType());
  info.shape = KernelInfo::Shape::RowReduction;
  info.usesBarrier = true;
  info.rowWidth = width;
  os << "  constexpr int kWidth = " << width << ";\n"
     << "  const int r = blockIdx.x;\n"
     << "  if (r >= n)\n    return;\n"
     << "  " << type << " best = " << leastValue(type)
     << "; // the least value\n"
     << "  long long bestIndex = " << (last ? "-1" : "kWidth") << ";\n"
     << "  for (int c = threadIdx.x; c < kWidth; c += blockDim.x) {\n";
  KernelBodyWriter writer(fused, os);
  FailureOr<std::string> x = writer.element(input, {"r", "c"});
  if (failed(x))
    return failure();
  const char *tie = last ? ">" : "<";
  os << "    if (" << *x << " > best || (" << *x << " == best && c " << tie
     << " bestIndex)) {\n      best = " << *x
     << ";\n      bestIndex = c;\n    }\n  }\n"
     << "  __shared__ " << type << " blockBest[256];\n"
     << "  __shared__ long long blockIndex[256];\n"
     << "  blockBest[threadIdx.x] = best;\n"
     << "  blockIndex[threadIdx.x] = bestIndex;\n"
     << "  __syncthreads();\n"
     << "  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {\n"
     << "    if (threadIdx.x < stride) {\n"
     << "      " << type << " other = blockBest[threadIdx.x + stride];\n"
     << "      long long otherIndex = blockIndex[threadIdx.x + stride];\n"
     << "      if (other > blockBest[threadIdx.x] ||\n"
     << "          (other == blockBest[threadIdx.x] && otherIndex " << tie
     << " blockIndex[threadIdx.x])) {\n"
     << "        blockBest[threadIdx.x] = other;\n"
     << "        blockIndex[threadIdx.x] = otherIndex;\n"
     << "      }\n    }\n    __syncthreads();\n  }\n"
     << "  if (threadIdx.x == 0)\n    "
     << destination(fused, 0, "r",
                    tensorOf(argmax.getResult()).getRank() == 2 ? "0" : "")
     << " = "
     << storeCast(tensorOf(argmax.getResult()).getElementType(),
                  "blockIndex[0]")
     << ";\n";
  return success();
}

/// Reductions over a row's columns (ReduceMean, ReduceSum, ReduceMax of
/// [batch, columns] values) among element-wise ops (softmax's max, exps and
/// sum; a layer norm's mean and variance): one block a row. Each reduction
/// in turn runs a strided loop over the row's columns, computing its input
/// element by element (earlier reductions' results at hand), and a
/// shared-memory tree; every thread then holds the row's result. Per-row
/// values that need no later reduction (a variance's square root) are
/// computed once there, and the results are written in strided loops.
/// Element-wise values are recomputed in each pass rather than kept, so the
/// kernel needs no row buffers: a pass costs reads of the row's inputs, which
/// are in cache after the first.
LogicalResult cellc::codegen::writeRowPhases(FusedOp fused,
                                             ArrayRef<Operation *> reductions,
                                             llvm::raw_ostream &os,
                                             KernelInfo &info) {
  auto yield = cast<YieldOp>(fused.getBody().front().getTerminator());
  Operation *unsupported = nullptr;
  fused.getBody().walk([&](Operation *op) {
    if (isa<GemmOp, MatMulOp, ArgMaxOp, RowMatMulOp>(op) && !unsupported)
      unsupported = op;
  });
  if (unsupported)
    return unsupported->emitError()
           << "code generation runs a reduction over a row with element-wise "
              "ops around it, not with '"
           << unsupported->getName().getStringRef() << "' in the same kernel";
  int64_t width = 1;
  for (Operation *reduce : reductions) {
    RankedTensorType inputType = tensorOf(reduce->getOperand(0));
    auto axes = reduce->getAttrOfType<DenseI64ArrayAttr>("axes");
    if (inputType.getRank() != 2 || !axes || axes.size() != 1 || axes[0] != 1)
      return reduce->emitError("code generation supports reductions over the "
                               "columns of a [batch, columns] value");
    width = std::max(width, rowWidth(reduce->getOperand(0)));
  }
  for (Value value : yield.getOperands())
    width = std::max(width, rowWidth(value));
  info.shape = KernelInfo::Shape::RowReduction;
  info.usesBarrier = true;
  info.rowWidth = width;
  os << "  const int r = blockIdx.x;\n"
     << "  if (r >= n)\n    return;\n";
  KernelBodyWriter writer(fused, os);
  // Values known once a row's reductions so far are: per-row results
  // ([batch, 1]) of ops whose operands are known.
  llvm::DenseSet<Value> known;
  auto perRow = [&](Value value) {
    RankedTensorType type = tensorOf(value);
    return type.getRank() == 2 && type.getDimSize(1) == 1;
  };
  auto isKnown = [&](Value value) {
    return known.contains(value) || !writer.hasBatch(value) ||
           (value.isa<BlockArgument>() && perRow(value));
  };
  auto computeKnown = [&]() -> LogicalResult {
    for (Operation &op : fused.getBody().front().without_terminator()) {
      if (isa<ReduceMeanOp, ReduceSumOp, ReduceMaxOp>(op) ||
          op.getNumResults() != 1 || known.contains(op.getResult(0)) ||
          !writer.hasBatch(op.getResult(0)) || !perRow(op.getResult(0)) ||
          !llvm::all_of(op.getOperands(), isKnown))
        continue;
      if (failed(writer.element(op.getResult(0), {"r", "0"})))
        return failure();
      known.insert(op.getResult(0));
    }
    return success();
  };
  for (auto [k, reduce] : llvm::enumerate(reductions)) {
    Value input = reduce->getOperand(0);
    int64_t columns = rowWidth(input);
    std::string type = computeType(tensorOf(input).getElementType());
    bool largest = isa<ReduceMaxOp>(reduce);
    // The largest element propagates NaN, as torch.max does (fmaxf would
    // skip it).
    auto combine = [&](const std::string &a, const std::string &b) {
      return largest ? "(" + a + " != " + a + " || " + a + " > " + b + " ? " +
                           a + " : " + b + ")"
                     : a + " + " + b;
    };
    std::string acc = llvm::formatv("acc{0}", k).str();
    std::string shared = llvm::formatv("blockAcc{0}", k).str();
    os << "  " << type << " " << acc << " = "
       << (largest ? leastValue(type) : "0") << ";\n";
    writer.beginLoop(llvm::formatv(
        "for (int c = threadIdx.x; c < {0}; c += blockDim.x)", columns));
    FailureOr<std::string> x = writer.element(input, {"r", "c"});
    if (failed(x))
      return failure();
    os << writer.indent() << acc << " = " << combine(acc, *x) << ";\n";
    writer.endGuard();
    os << "  __shared__ " << type << " " << shared << "[256];\n"
       << "  " << shared << "[threadIdx.x] = " << acc << ";\n"
       << "  __syncthreads();\n"
       << "  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {\n"
       << "    if (threadIdx.x < stride)\n"
       << "      " << shared << "[threadIdx.x] = "
       << combine(shared + "[threadIdx.x]", shared + "[threadIdx.x + stride]")
       << ";\n"
       << "    __syncthreads();\n  }\n";
    std::string name = llvm::formatv("reduced{0}", k).str();
    os << "  const " << type << " " << name << " = " << shared << "[0]"
       << (isa<ReduceMeanOp>(reduce) ? " / " + std::to_string(columns) : "")
       << ";\n";
    writer.define(reduce->getResult(0), name);
    known.insert(reduce->getResult(0));
    if (failed(computeKnown()))
      return failure();
  }
  // The results, those of one width in one loop (so they share locals);
  // per-row results by the block's first thread.
  for (int64_t columns : distinctResultColumns(yield)) {
    if (columns <= 1)
      writer.beginGuard("threadIdx.x == 0");
    else
      writer.beginLoop(llvm::formatv(
          "for (int c = threadIdx.x; c < {0}; c += blockDim.x)", columns));
    std::string col = columns == 0 ? "" : columns == 1 ? "0" : "c";
    for (auto [i, value] : llvm::enumerate(yield.getOperands())) {
      if (resultColumns(value) != columns)
        continue;
      FailureOr<std::string> result = writer.element(value, {"r", col});
      if (failed(result))
        return failure();
      os << writer.indent() << destination(fused, i, "r", col) << " = "
         << storeCast(tensorOf(value).getElementType(), *result) << ";\n";
    }
    writer.endGuard();
  }
  return success();
}

/// Element `flat` of row `row` of kernel input `i`, read in element order
/// whatever the input's shape (a weight is the same for every row).
static std::string flatElement(FusedOp fused, unsigned i,
                               const std::string &row,
                               const std::string &flat) {
  std::string kind = accessOf(fused, false, i);
  if (kind == "broadcast")
    return llvm::formatv("in{0}[{1}]", i, flat);
  std::string at =
      kind == "gather" ? llvm::formatv("rows{0}[{1}]", i, row).str() : row;
  return llvm::formatv("in{0}[(size_t)({1}) * {2} + {3}]", i, at,
                       rowWidth(fused.getInputs()[i]), flat);
}

/// A product of per-row matrices (cell.row_matmul, alone in its kernel),
/// several blocks a row, each taking a share of the row's outputs. One block a
/// row (128 blocks at batch 128, one at batch 1) kept too few loads in flight:
/// on an H200 the two products over the attention decoder's [50, 1024] memory
/// took 38.9 and 22.7 us at batch 128, at 14% and 24% of the DRAM bandwidth,
/// with the loops unrolled. When the larger operand is read along k (the scores
/// of attention: memory [m, k] times a query), a warp computes each output
/// element on its own: its lanes read consecutive k, so the reads coalesce,
/// up to four independent partial sums a lane keep as many loads in flight
/// (two at the examples' k of 64), and the lanes' sums meet through warp
/// shuffles; a row takes enough blocks for one output a warp. Otherwise (the
/// context: weights [1, m] times memory [m, n]) a block takes 32 consecutive
/// outputs, one a lane, so a warp's reads of a row of the larger operand
/// coalesce, and its warps split k (warp w sums k = w, w + warps, ..., all of
/// its loads in flight at once); warp 0 adds the warps' sums in order. Each
/// output's sum runs in an order fixed by the block size alone.
LogicalResult cellc::codegen::writeRowMatMul(FusedOp fused, RowMatMulOp matmul,
                                             llvm::raw_ostream &os,
                                             KernelInfo &info) {
  auto yield = cast<YieldOp>(fused.getBody().front().getTerminator());
  // An operand is a kernel input, or a splat constant the kernel holds (the
  // ones of a sum over a matrix dimension).
  auto operand = [&](Value value,
                     const std::string &flat) -> std::optional<std::string> {
    if (auto arg = value.dyn_cast<BlockArgument>())
      return flatElement(fused, arg.getArgNumber(), "r", flat);
    auto constant = value.getDefiningOp<ConstantOp>();
    auto dense = constant ? constant.getValue().dyn_cast<DenseElementsAttr>()
                          : DenseElementsAttr();
    if (!dense || !dense.isSplat())
      return std::nullopt;
    return floatLiteral(dense.getSplatValue<APFloat>().convertToDouble(),
                        false);
  };
  int64_t m = matmul.getM(), k = matmul.getK(), n = matmul.getN();
  bool transLhs = matmul.getTransLhs(), transRhs = matmul.getTransRhs();
  // The product of the operands' elements at depth `kk` (an expression).
  auto product = [&](const std::string &kk) -> std::optional<std::string> {
    std::optional<std::string> a =
        operand(matmul.getLhs(),
                transLhs ? kk + " * kM + i" : "(size_t)i * kK + " + kk);
    std::optional<std::string> b =
        operand(matmul.getRhs(), transRhs ? "(size_t)j * kK + " + kk
                                          : "(size_t)" + kk + " * kN + j");
    if (!a || !b)
      return std::nullopt;
    return *a + " * " + *b;
  };
  std::optional<std::string> atKk = product("kk");
  if (yield.getNumOperands() != 1 ||
      yield.getOperand(0) != matmul.getResult() || !atKk ||
      !tensorOf(matmul.getLhs()).getElementType().isF32())
    return fused.emitError(
        "code generation supports an fp32 row matmul of kernel inputs as the "
        "only result of its kernel");
  info.shape = KernelInfo::Shape::RowReduction;
  info.rowWidth = m * n;
  int64_t outputs = m * n;
  int64_t warps = info.blockSize / 32;
  // Which operand is read along k with unit stride, and is the larger one
  // in memory (a splat constant is not) read so?
  bool lhsAlongK = !transLhs || m == 1, rhsAlongK = transRhs || n == 1;
  bool lhsInMemory = matmul.getLhs().isa<BlockArgument>(),
       rhsInMemory = matmul.getRhs().isa<BlockArgument>();
  bool lhsLarger = lhsInMemory && (!rhsInMemory || m >= n);
  bool largerAlongK = lhsLarger ? lhsAlongK : rhsAlongK;
  bool warpAnOutput = k >= 32 && largerAlongK;
  info.blocksPerRow = std::clamp<int64_t>(
      warpAnOutput ? (outputs + warps - 1) / warps : (outputs + 31) / 32, 1,
      cellpack::kMaxBlocksPerRow);
  // Both forms meet at warp shuffles or block barriers (the emulation gives
  // a warp's threads a barrier of their own for the shuffles).
  info.usesBarrier = true;
  os << "  constexpr int kM = " << m << ", kK = " << k << ", kN = " << n
     << ", kParts = " << info.blocksPerRow << ";\n"
     << "  const int r = blockIdx.x / kParts, part = blockIdx.x % kParts;\n"
     << "  if (r >= n)\n    return;\n"
     << "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32,\n"
     << "            warps = blockDim.x / 32;\n";
  if (warpAnOutput) {
    // Up to four partial sums a lane (fewer when k is short, so that the
    // examples' small memories run the same loop in the emulation tests).
    int64_t sums = std::clamp<int64_t>(k / 32, 1, 4);
    os << "  for (int o = part * warps + warp; o < kM * kN; o += kParts * "
          "warps) {\n"
       << "    const int i = o / kN, j = o % kN;\n"
       << "    (void)i;\n    (void)j;\n    float";
    for (int64_t s = 0; s < sums; ++s)
      os << (s ? ", " : " ") << "acc" << s << " = 0.0f";
    os << ";\n    int kk = lane;\n"
       << "#pragma unroll 4\n"
       << "    for (; kk + " << 32 * (sums - 1) << " < kK; kk += " << 32 * sums
       << ") {\n";
    for (int64_t s = 0; s < sums; ++s)
      os << "      acc" << s << " += "
         << (s ? *product("(kk + " + std::to_string(32 * s) + ")") : *atKk)
         << ";\n";
    const char *total[] = {"acc0", "acc0 + acc1", "(acc0 + acc1) + acc2",
                           "(acc0 + acc1) + (acc2 + acc3)"};
    os << "    }\n"
       << "    for (; kk < kK; kk += 32)\n"
       << "      acc0 += " << *atKk << ";\n"
       << "    float acc = " << total[sums - 1] << ";\n"
       << "    for (int offset = 16; offset > 0; offset /= 2)\n"
       << "      acc += __shfl_xor_sync(0xffffffffu, acc, offset);\n"
       << "    if (lane == 0)\n"
       << "      " << destination(fused, 0, "r", "o") << " = acc;\n  }\n";
    return success();
  }
  // Lanes past the last output read the last one's operands (valid
  // addresses, so the loads need no branch) and store nothing. A block
  // takes every kParts-th group of 32 outputs (one group unless a row has
  // more than kMaxBlocksPerRow groups); the second barrier keeps a group's
  // sums until warp 0 has added them.
  os << "  __shared__ float sums[256];\n"
     << "  for (int first = part * 32 + lane; first - lane < kM * kN;\n"
     << "       first += kParts * 32) {\n"
     << "    const int o = min(first, kM * kN - 1);\n"
     << "    const int i = o / kN, j = o % kN;\n"
     << "    (void)i;\n    (void)j;\n"
     << "    float acc = 0.0f;\n"
     << "#pragma unroll 8\n"
     << "    for (int kk = warp; kk < kK; kk += warps)\n"
     << "      acc += " << *atKk << ";\n"
     << "    sums[threadIdx.x] = acc;\n"
     << "    __syncthreads();\n"
     << "    if (warp == 0 && first < kM * kN) {\n"
     << "      for (int w = 1; w < warps; ++w)\n"
     << "        acc += sums[w * 32 + lane];\n"
     << "      " << destination(fused, 0, "r", "first") << " = acc;\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "  }\n";
  return success();
}
