//===- FusedKernelWriter.cpp - One cell.fused as a CUDA kernel -----------===//
//
// The kernel around a fused body: parameters, thread-to-element mapping
// (elementwise, float4 when rows allow, or a block per row for argmax),
// stores of the results, and the CPU-emulation launcher. The expressions
// come from KernelBodyWriter.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FusedKernelWriter.h"
#include "compiler/codegen/KernelBodyWriter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <functional>

using namespace mlir;
using namespace mlir::cell;
using namespace cellc::codegen;

//===----------------------------------------------------------------------===//
// Kernel text
//===----------------------------------------------------------------------===//

/// `value` (computed in computeType) converted for storing as `element`.
static std::string storeCast(Type element, const std::string &value) {
  if (element.isF16())
    return "__float2half(" + value + ")";
  if (element.isBF16())
    return "__float2bfloat16(" + value + ")";
  return "(" + cudaType(element) + ")(" + value + ")";
}

static std::string access(FusedOp fused, bool result, unsigned index) {
  ArrayAttr list = result ? fused.getResultAccess() : fused.getOperandAccess();
  return stringifyAccess(list[index].cast<AccessAttr>().getValue()).str();
}

/// Writes the parameter list and fills `info.params` and `info.paramTypes`.
static void writeParams(FusedOp fused, llvm::raw_ostream &os,
                        KernelInfo &info) {
  using Kind = KernelParam::Kind;
  std::vector<std::string> params;
  auto add = [&](Kind kind, size_t index, const std::string &type,
                 const std::string &name) {
    info.params.push_back({kind, static_cast<unsigned>(index)});
    info.paramTypes.push_back(type);
    bool pointer = type.back() == '*';
    params.push_back(type + (pointer ? "__restrict__ " : " ") + name);
  };
  for (auto [i, input] : llvm::enumerate(fused.getInputs())) {
    Type element = tensorOf(input).getElementType();
    add(Kind::Input, i, "const " + cudaType(element) + " *",
        llvm::formatv("in{0}", i));
    if (access(fused, false, i) == "gather")
      add(Kind::InputRows, i, "const int *", llvm::formatv("rows{0}", i));
  }
  for (auto [i, result] : llvm::enumerate(fused.getResults())) {
    Type element = tensorOf(result).getElementType();
    add(Kind::Output, i, cudaType(element) + " *", llvm::formatv("out{0}", i));
    if (access(fused, true, i) == "scatter")
      add(Kind::OutputRows, i, "const int *", llvm::formatv("dst{0}", i));
  }
  add(Kind::RowCount, 0, "int", "n");
  os << llvm::join(params, ",\n    ") << ")";
}

/// Writes, for builds of the source with CELL_CUDA_EMULATION (tests that run
/// the kernels on the CPU), a launcher taking the arguments the way
/// cudaLaunchKernel does: one pointer to each parameter's value.
static void writeEmulationLauncher(const KernelInfo &info,
                                   llvm::raw_ostream &os) {
  os << "#ifdef CELL_CUDA_EMULATION\nextern \"C\" void " << info.name
     << "__emulate(void **args, unsigned grid, unsigned block) {\n"
     << "  cellEmulateLaunch(grid, block, "
     << (info.usesBarrier ? "true" : "false") << ", [&] {\n    " << info.name
     << "(";
  for (auto [i, type] : llvm::enumerate(info.paramTypes))
    os << (i ? ",\n        " : "") << "*static_cast<" << type
       << " const *>(args[" << i << "])";
  os << ");\n  });\n}\n#endif\n";
}

/// Where result `i` of row `row` (column `col`, empty for [B] results) goes.
static std::string destination(FusedOp fused, unsigned i,
                               const std::string &row, const std::string &col) {
  std::string target = access(fused, true, i) == "scatter"
                           ? llvm::formatv("dst{0}[{1}]", i, row)
                           : row;
  RankedTensorType type = tensorOf(fused.getResult(i));
  if (type.getRank() < 2)
    return llvm::formatv("out{0}[{1}]", i, target);
  return llvm::formatv("out{0}[(size_t)({1}) * {2} + {3}]", i, target,
                       rowWidth(fused.getResult(i)), col);
}

/// True when `op` reads or computes a value whose rows hold matrices
/// ([batch, m, n]).
static bool hasMatrixRows(Operation *op) {
  auto isMatrix = [](Value value) { return tensorOf(value).getRank() > 2; };
  return llvm::any_of(op->getOperands(), isMatrix) ||
         llvm::any_of(op->getResults(), isMatrix);
}

/// True when every thread can handle four consecutive columns with float4
/// loads and stores: fp32 rows whose widths, column offsets and pieces are
/// multiples of 4 (so every vector is 16-byte aligned, given 16-byte aligned
/// rows), no GEMM inside and no per-row results.
static bool canVectorize(FusedOp fused, int64_t width) {
  if (width % 4 != 0)
    return false;
  auto fits = [](Value value) {
    auto type = tensorOf(value);
    if (!type.getElementType().isF32())
      return !type.getElementType().isa<FloatType>() && type.getRank() <= 1;
    return type.getRank() == 0 || type.getShape().back() % 4 == 0;
  };
  Block &body = fused.getBody().front();
  if (!llvm::all_of(body.getArguments(), fits))
    return false;
  // [batch, m, n] rows broadcast within the row: one column at a time.
  bool matrices = false;
  body.walk([&](Operation *op) { matrices |= hasMatrixRows(op); });
  if (matrices)
    return false;
  for (Value result : fused.getResults())
    if (tensorOf(result).getRank() != 2)
      return false;
  for (Operation &op : body.without_terminator()) {
    if (isa<GemmOp, ArgMaxOp, CastOp, ReshapeOp, SqueezeOp, UnsqueezeOp,
            TransposeOp, EqualOp, LessOp, LessOrEqualOp, GreaterOp,
            GreaterOrEqualOp, NotOp, WhereOp>(op) ||
        !llvm::all_of(op.getResults(), fits))
      return false;
    if (auto split = dyn_cast<SplitOp>(op))
      if (llvm::any_of(split.getSizes(), [](int64_t s) { return s % 4; }))
        return false;
    if (auto slice = dyn_cast<SliceOp>(op))
      if (slice.getSteps()[0] != 1 || slice.getStarts()[0] % 4)
        return false;
  }
  return true;
}

/// Results of different row widths (a stacked cell's states next to the
/// concatenated input of the next layer's GEMM) share one kernel: the
/// threads of a row cover the widest result and each narrower one is
/// computed under a guard on the column.
static LogicalResult writeElementwise(FusedOp fused, llvm::raw_ostream &os,
                                      KernelInfo &info) {
  auto yield = cast<YieldOp>(fused.getBody().front().getTerminator());
  int64_t width = 1;
  for (Value value : yield.getOperands())
    width = std::max(width, rowWidth(value));
  bool vector = canVectorize(fused, width);
  int64_t lanes = vector ? 4 : 1;
  info.shape = KernelInfo::Shape::Elementwise;
  info.rowWidth = width / lanes; // threads per row
  os << "  constexpr int kWidth = " << width / lanes << "; // threads a row"
     << (vector ? ", 4 columns each (float4)" : "") << "\n"
     << "  const int t = blockIdx.x * blockDim.x + threadIdx.x;\n"
     << "  // Rows n..kBatch-1 are padding: never read, never written.\n"
     << "  if (t >= n * kWidth)\n    return;\n"
     << "  const int r = t / kWidth;\n"
     << "  const int c = t % kWidth" << (vector ? " * 4" : "") << ";\n";
  // One block per distinct width (the widest unguarded, per-row results
  // under c == 0), so results of one width share their locals.
  auto widthOf = [&](Value value) {
    return tensorOf(value).getRank() < 2 ? int64_t(0) : rowWidth(value);
  };
  SmallVector<int64_t> widths;
  for (Value value : yield.getOperands())
    if (!llvm::is_contained(widths, widthOf(value)))
      widths.push_back(widthOf(value));
  llvm::sort(widths, std::greater<int64_t>());
  KernelBodyWriter writer(fused, os);
  for (int64_t blockWidth : widths) {
    bool guarded = blockWidth == 0 ? width > 1 : blockWidth < width;
    if (guarded)
      writer.beginGuard(blockWidth == 0
                            ? std::string("c == 0")
                            : llvm::formatv("c < {0}", blockWidth).str());
    for (auto [i, value] : llvm::enumerate(yield.getOperands())) {
      if (widthOf(value) != blockWidth)
        continue;
      bool perRow = blockWidth == 0;
      Type element = tensorOf(value).getElementType();
      if (vector) {
        std::vector<std::string> parts;
        for (int lane = 0; lane < 4; ++lane) {
          FailureOr<std::string> part = writer.element(value, {"r", "c", lane});
          if (failed(part))
            return failure();
          parts.push_back(*part);
        }
        os << writer.indent() << "*reinterpret_cast<float4 *>(&"
           << destination(fused, i, "r", "c") << ") = make_float4("
           << llvm::join(parts, ", ") << ");\n";
        continue;
      }
      FailureOr<std::string> result =
          writer.element(value, {"r", perRow ? "" : "c"});
      if (failed(result))
        return failure();
      os << writer.indent() << destination(fused, i, "r", "c") << " = "
         << storeCast(element, *result) << ";\n";
    }
    if (guarded)
      writer.endGuard();
  }
  return success();
}

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

static LogicalResult writeArgMax(FusedOp fused, ArgMaxOp argmax,
                                 llvm::raw_ostream &os, KernelInfo &info) {
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

/// A reduction of a row's columns (ReduceMean, ReduceSum, ReduceMax, alone
/// in its kernel): one block per row reduces its columns in a strided loop
/// and a shared-memory tree.
static LogicalResult writeRowReduction(FusedOp fused, Operation *reduce,
                                       llvm::raw_ostream &os,
                                       KernelInfo &info) {
  auto yield = cast<YieldOp>(fused.getBody().front().getTerminator());
  Value input = reduce->getOperand(0);
  RankedTensorType inputType = tensorOf(input);
  auto axes = reduce->getAttrOfType<DenseI64ArrayAttr>("axes");
  if (yield.getNumOperands() != 1 ||
      yield.getOperand(0) != reduce->getResult(0) || inputType.getRank() != 2 ||
      !axes || axes.size() != 1 || axes[0] != 1)
    return fused.emitError(
        "code generation supports a reduction over the columns of a row as "
        "the only result of its kernel");
  int64_t width = rowWidth(input);
  std::string type = computeType(inputType.getElementType());
  bool largest = isa<ReduceMaxOp>(reduce);
  // The largest element propagates NaN, as torch.max does (fmaxf would
  // skip it).
  auto combine = [&](const std::string &a, const std::string &b) {
    return largest ? "(" + a + " != " + a + " || " + a + " > " + b + " ? " + a +
                         " : " + b + ")"
                   : a + " + " + b;
  };
  info.shape = KernelInfo::Shape::RowReduction;
  info.usesBarrier = true;
  info.rowWidth = width;
  os << "  constexpr int kWidth = " << width << ";\n"
     << "  const int r = blockIdx.x;\n"
     << "  if (r >= n)\n    return;\n"
     << "  " << type << " acc = " << (largest ? leastValue(type) : "0") << ";\n"
     << "  for (int c = threadIdx.x; c < kWidth; c += blockDim.x)\n";
  KernelBodyWriter writer(fused, os);
  FailureOr<std::string> x = writer.element(input, {"r", "c"});
  if (failed(x))
    return failure();
  os << "    acc = " << combine("acc", *x) << ";\n"
     << "  __shared__ " << type << " blockAcc[256];\n"
     << "  blockAcc[threadIdx.x] = acc;\n"
     << "  __syncthreads();\n"
     << "  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {\n"
     << "    if (threadIdx.x < stride)\n"
     << "      blockAcc[threadIdx.x] = "
     << combine("blockAcc[threadIdx.x]", "blockAcc[threadIdx.x + stride]")
     << ";\n"
     << "    __syncthreads();\n  }\n"
     << "  if (threadIdx.x == 0)\n    "
     << destination(fused, 0, "r",
                    tensorOf(reduce->getResult(0)).getRank() == 2 ? "0" : "")
     << " = "
     << storeCast(tensorOf(reduce->getResult(0)).getElementType(),
                  isa<ReduceMeanOp>(reduce) ? "blockAcc[0] / kWidth"
                                            : "blockAcc[0]")
     << ";\n";
  return success();
}

/// Element `flat` of row `row` of kernel input `i`, read in element order
/// whatever the input's shape (a weight is the same for every row).
static std::string flatElement(FusedOp fused, unsigned i,
                               const std::string &row,
                               const std::string &flat) {
  std::string kind = access(fused, false, i);
  if (kind == "broadcast")
    return llvm::formatv("in{0}[{1}]", i, flat);
  std::string at =
      kind == "gather" ? llvm::formatv("rows{0}[{1}]", i, row).str() : row;
  return llvm::formatv("in{0}[(size_t)({1}) * {2} + {3}]", i, at,
                       rowWidth(fused.getInputs()[i]), flat);
}

/// A product of per-row matrices (cell.row_matmul, alone in its kernel),
/// one block per row. When the larger operand is read along k (the scores
/// of attention: memory [m, k] times a query), a warp computes each output
/// element on its own: its lanes read consecutive k, so the reads coalesce,
/// up to four independent partial sums a lane keep as many loads in flight
/// (two at the examples' k of 64), and the
/// lanes' sums meet through warp shuffles (no block barrier). Otherwise (the
/// context: weights [1, m] times memory [m, n]) a thread computes each
/// output element, and neighbouring threads read neighbouring columns. On
/// an H200 the thread form took about 60 us for the scores of one row of 50
/// positions of 1024 (50 threads, each reading 4 KB apart); the warp form
/// with one partial sum a lane and the sums meeting in shared memory between
/// two block barriers an output round read the memory at 16% of the DRAM
/// bandwidth at batch 128 (35 us).
static LogicalResult writeRowMatMul(FusedOp fused, RowMatMulOp matmul,
                                    llvm::raw_ostream &os, KernelInfo &info) {
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
  os << "  constexpr int kM = " << m << ", kK = " << k << ", kN = " << n
     << ";\n"
     << "  const int r = blockIdx.x;\n"
     << "  if (r >= n)\n    return;\n";
  // Which operand is read along k with unit stride, and is the larger one
  // in memory (a splat constant is not) read so?
  bool lhsAlongK = !transLhs || m == 1, rhsAlongK = transRhs || n == 1;
  bool lhsInMemory = matmul.getLhs().isa<BlockArgument>(),
       rhsInMemory = matmul.getRhs().isa<BlockArgument>();
  bool lhsLarger = lhsInMemory && (!rhsInMemory || m >= n);
  bool largerAlongK = lhsLarger ? lhsAlongK : rhsAlongK;
  if (k >= 32 && largerAlongK) {
    // Every lane of a warp runs the same outputs (the shuffles need the
    // whole warp); the emulation gives a warp's threads a barrier of their
    // own for them.
    info.usesBarrier = true;
    // Up to four partial sums a lane (fewer when k is short, so that the
    // examples' small memories run the same loop in the emulation tests).
    int64_t sums = std::clamp<int64_t>(k / 32, 1, 4);
    os << "  const int lane = threadIdx.x % 32, warps = blockDim.x / 32;\n"
       << "  for (int o = (int)threadIdx.x / 32; o < kM * kN; o += warps) {\n"
       << "    const int i = o / kN, j = o % kN;\n"
       << "    (void)i;\n    (void)j;\n    float";
    for (int64_t s = 0; s < sums; ++s)
      os << (s ? ", " : " ") << "acc" << s << " = 0.0f";
    os << ";\n    int kk = lane;\n"
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
  os << "  for (int o = threadIdx.x; o < kM * kN; o += blockDim.x) {\n"
     << "    const int i = o / kN, j = o % kN;\n"
     << "    float acc = 0.0f;\n"
     << "    for (int kk = 0; kk < kK; ++kk)\n"
     << "      acc += " << *atKk << ";\n"
     << "    " << destination(fused, 0, "r", "o") << " = acc;\n  }\n";
  return success();
}

LogicalResult cellc::codegen::writeFusedKernel(FusedOp fused, StringRef name,
                                               int64_t batch,
                                               llvm::raw_ostream &os,
                                               KernelInfo &info) {
  info.name = name.str();
  info.batch = batch;
  info.blockSize = 256;
  RowMatMulOp rowMatMul;
  fused.getBody().walk([&](RowMatMulOp op) { rowMatMul = op; });
  // A row may hold a [m, n] matrix ([batch, m, n] values, attention over a
  // memory): elementwise ops broadcast within the row, views keep its order,
  // and row matmuls read it. Other ops index rows as [batch, columns]. The
  // error is at the op (so it names the ONNX node it came from).
  Operation *unsupported = nullptr;
  fused.getBody().walk([&](Operation *op) {
    if (hasMatrixRows(op) && !unsupported &&
        !isa<AddOp, SubOp, MulOp, DivOp, PowOp, EqualOp, LessOp, LessOrEqualOp,
             GreaterOp, GreaterOrEqualOp, NotOp, WhereOp, SigmoidOp, TanhOp,
             ReluOp, ErfOp, SqrtOp, ExpOp, LogOp, SoftplusOp, NegOp, CastOp,
             IdentityOp, ReshapeOp, SqueezeOp, UnsqueezeOp, SliceOp, SplitOp,
             ConcatOp, ConstantOp, RowMatMulOp, YieldOp>(op))
      unsupported = op;
  });
  if (unsupported)
    return unsupported->emitError()
           << "computes '" << unsupported->getName().getStringRef()
           << "' over a value with more than one dimension after the batch; "
              "code generation supports elementwise ops, reshapes, slices, "
              "splits, concatenations and matrix products (MatMul, ReduceSum, "
              "ReduceMean) of such values";
  ArgMaxOp argmax;
  fused.getBody().walk([&](ArgMaxOp op) { argmax = op; });
  Operation *reduce = nullptr;
  fused.getBody().walk([&](Operation *op) {
    if (isa<ReduceMeanOp, ReduceSumOp, ReduceMaxOp>(op))
      reduce = op;
  });
  std::string text;
  llvm::raw_string_ostream body(text);
  body << "extern \"C\" __global__ void __launch_bounds__(256)\n"
       << name << "(";
  writeParams(fused, body, info);
  body << " {\n  constexpr int kBatch = " << batch << ";\n  (void)kBatch;\n";
  if (failed(argmax      ? writeArgMax(fused, argmax, body, info)
             : reduce    ? writeRowReduction(fused, reduce, body, info)
             : rowMatMul ? writeRowMatMul(fused, rowMatMul, body, info)
                         : writeElementwise(fused, body, info)))
    return failure();
  body << "}\n";
  writeEmulationLauncher(info, body);
  os << text;
  return success();
}
