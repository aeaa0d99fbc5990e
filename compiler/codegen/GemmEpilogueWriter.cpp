//===- GemmEpilogueWriter.cpp - A GEMM and the step after it, one kernel --===//
//
// Which fused steps can be the epilogue of the skinny GEMM before them (the
// GEMM's result read only at the columns of the element computed, through
// element-wise ops and one split into equal segments), and the kernel that
// runs both: SkinnyGemmKernel.h's body with segmented tiles, then the step's
// elements for the tile's 32 columns of every row of the task.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/GemmEpilogueWriter.h"
#include "compiler/codegen/KernelBodyWriter.h"
#include "compiler/codegen/KernelText.h"

#include "SkinnyGemmKernel.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::cell;
using namespace cellc::codegen;

/// Ops whose element (r, c) reads their operands of the same shape at
/// (r, c): a value derived from the GEMM's result keeps its columns
/// through them.
static bool keepsColumns(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, SigmoidOp, TanhOp, ReluOp,
             ErfOp, SqrtOp, ExpOp, LogOp, SoftplusOp, NegOp, IdentityOp>(op);
}

/// True when every use of the GEMM's result `result` (a block argument of
/// `segments` * `width` columns) reads it at the column of the element it
/// computes, or at that column plus s * `width` through a split into the
/// segments, and only values of `width` columns reach the yield.
static bool readsColumnAligned(BlockArgument result, int64_t width,
                               int64_t segments) {
  // (value, whether it still has all the segments' columns)
  SmallVector<std::pair<Value, bool>> pending = {{result, segments > 1}};
  while (!pending.empty()) {
    auto [value, whole] = pending.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (isa<YieldOp>(user)) {
        if (whole)
          return false;
        continue;
      }
      if (auto split = dyn_cast<SplitOp>(user)) {
        if (!whole || split.getAxis() != 1 ||
            split.getSizes().size() != static_cast<size_t>(segments) ||
            llvm::any_of(split.getSizes(),
                         [&](int64_t size) { return size != width; }))
          return false;
        for (Value piece : split.getResults())
          pending.push_back({piece, false});
        continue;
      }
      if (!keepsColumns(user) || user->getNumResults() != 1)
        return false;
      Value derived = user->getResult(0);
      if (tensorOf(derived).getShape() != tensorOf(value).getShape())
        return false; // broadcast into a wider value
      pending.push_back({derived, whole});
    }
  }
  return true;
}

/// The workspace bytes [begin, end) `value` takes (cell-plan-memory's
/// offsets), or nullopt when it lies elsewhere (a weight, a state pool).
static std::optional<std::pair<int64_t, int64_t>> workspaceBytes(Value value) {
  auto result = value.dyn_cast<OpResult>();
  if (!result)
    return std::nullopt;
  auto offsets =
      result.getOwner()->getAttrOfType<DenseI64ArrayAttr>("cell.offsets");
  if (!offsets || offsets[result.getResultNumber()] < 0)
    return std::nullopt;
  RankedTensorType type = tensorOf(value);
  int64_t begin = offsets[result.getResultNumber()];
  return std::make_pair(begin,
                        begin + type.getNumElements() *
                                    ((type.getElementTypeBitWidth() + 7) / 8));
}

/// True when a workspace result of `fused` shares bytes with an operand of
/// `gemm` (a buffer whose life ends at the GEMM may be given to the step's
/// results, and in one kernel blocks that finish early would write it while
/// others still read it).
static bool overwritesGemmOperands(FusedOp fused, GemmOp gemm) {
  for (Value result : fused.getResults()) {
    auto written = workspaceBytes(result);
    if (!written)
      continue;
    for (Value operand : gemm->getOperands())
      if (auto read = workspaceBytes(operand))
        if (written->first < read->second && read->first < written->second)
          return true;
  }
  return false;
}

std::optional<GemmEpilogueShape>
cellc::codegen::gemmEpilogueShape(FusedOp fused, const KernelInfo &info,
                                  int64_t batch, int64_t minWeightBytes) {
  if (batch > cellpack::kSkinnyGemmMaxRows ||
      info.shape != KernelInfo::Shape::Elementwise)
    return std::nullopt;
  Operation *before = fused->getPrevNode();
  while (before && isa<ConstantOp>(before))
    before = before->getPrevNode();
  auto gemm = dyn_cast_or_null<GemmOp>(before);
  // B a weight (streamed past L1 while the first blocks finish), nothing
  // the step writes in the GEMM's operands' bytes.
  if (!gemm || gemm.getTransA() || gemm.getTransB() ||
      !gemm.getResult().hasOneUse() ||
      !isa_and_nonnull<ConstantOp>(gemm.getB().getDefiningOp()) ||
      overwritesGemmOperands(fused, gemm))
    return std::nullopt;
  RankedTensorType a = tensorOf(gemm.getA()), b = tensorOf(gemm.getB()),
                   d = tensorOf(gemm.getResult());
  if (a.getRank() != 2 || b.getRank() != 2 || d.getRank() != 2 ||
      !a.getElementType().isF32() || !b.getElementType().isF32() ||
      !d.getElementType().isF32() || d.getDimSize(0) != batch ||
      !cellpack::skinnyGemmFits(batch, d.getDimSize(1), a.getDimSize(1)) ||
      b.getNumElements() * 4 < minWeightBytes)
    return std::nullopt;
  auto yield = cast<YieldOp>(fused.getBody().front().getTerminator());
  SmallVector<int64_t> widths = distinctResultColumns(yield);
  if (widths.size() != 1 || widths[0] < 4 || info.rowWidth * 4 != widths[0])
    return std::nullopt; // not every result a float4 row of one width
  int64_t width = widths[0], columns = d.getDimSize(1);
  if (columns % width != 0 ||
      !cellpack::skinnyGemmSegmentsFit(columns, columns / width))
    return std::nullopt;
  for (auto [i, input] : llvm::enumerate(fused.getInputs())) {
    if (input != gemm.getResult())
      continue;
    if (accessOf(fused, false, i) != "dense" ||
        !readsColumnAligned(fused.getBody().front().getArgument(i), width,
                            columns / width))
      return std::nullopt;
    return GemmEpilogueShape{gemm, static_cast<unsigned>(i),
                             static_cast<unsigned>(columns / width)};
  }
  return std::nullopt;
}

/// The name FusedKernelWriter gives a parameter of the step's kernel.
static std::string paramName(const KernelParam &param) {
  switch (param.kind) {
  case KernelParam::Kind::Input:
    return llvm::formatv("in{0}", param.index).str();
  case KernelParam::Kind::InputRows:
    return llvm::formatv("rows{0}", param.index).str();
  case KernelParam::Kind::Output:
    return llvm::formatv("out{0}", param.index).str();
  case KernelParam::Kind::OutputRows:
    return llvm::formatv("dst{0}", param.index).str();
  case KernelParam::Kind::RowCount:
    break;
  }
  return "n";
}

/// The skinny body's arguments, as the epilogue kernel names them, with
/// their types (SkinnyGemmKernel.h's order, A's row indices second).
static const std::pair<const char *, const char *> kGemmParams[] = {
    {"const float *", "gemmA"}, {"const int *", "gemmARows"},
    {"const float *", "gemmB"}, {"const float *", "gemmBias"},
    {"const float *", "gemmC"}, {"float *", "gemmD"},
    {"float *", "gemmPartial"}, {"unsigned *", "gemmCounters"},
    {"int", "gemmM"},           {"int", "gemmN"},
    {"int", "gemmK"},           {"int", "gemmSplits"},
    {"int", "gemmKPerSplit"},   {"float", "gemmAlpha"},
    {"float", "gemmBeta"}};

LogicalResult cellc::codegen::writeGemmEpilogueKernel(
    FusedOp fused, const GemmEpilogueShape &shape, StringRef name,
    int64_t batch, llvm::raw_ostream &os, KernelInfo &info) {
  // The step's parameters, without __restrict__: the GEMM's result is one
  // of them and was written by this kernel.
  SmallVector<std::string> stepParams, stepArgs;
  for (auto [param, type] : llvm::zip(info.params, info.paramTypes)) {
    stepParams.push_back(type + (type.back() == '*' ? "" : " ") +
                         paramName(param));
    stepArgs.push_back(paramName(param));
  }
  std::string elementName = (name + "_element").str();
  std::string text;
  llvm::raw_string_ostream body(text);
  body << "// A step computed by the block that finished a tile of the GEMM "
          "before it.\n"
       << "static __device__ __forceinline__ void " << elementName << "("
       << llvm::join(stepParams, ", ") << ", int r, int c) {\n";
  auto yield = cast<YieldOp>(fused.getBody().front().getTerminator());
  {
    KernelBodyWriter writer(fused, body);
    for (auto [i, value] : llvm::enumerate(yield.getOperands()))
      if (failed(writeVectorResult(fused, writer, value, i, body)))
        return failure();
  }
  body << "}\n";

  // The skinny body's variant for the batch: rows, groups of B in flight.
  int rows = batch <= 4 ? 4 : batch <= 8 ? 8 : 16;
  int groups = rows == 16 ? 2 : 4;
  SmallVector<std::string> params, types;
  for (const auto &[type, param] : kGemmParams) {
    params.push_back(std::string(type) +
                     (StringRef(type).endswith("*") ? "" : " ") + param);
    types.push_back(type);
  }
  params.append(stepParams.begin(), stepParams.end());
  types.append(info.paramTypes.begin(), info.paramTypes.end());
  SmallVector<std::string> gemmArgs;
  for (const auto &param : kGemmParams)
    gemmArgs.push_back(param.second);
  body << "extern \"C\" __global__ void __launch_bounds__(128, 4)\n"
       << name << "(" << llvm::join(params, ",\n    ") << ") {\n"
       << "  const int tile = cellrun_skinny_gemm_body<" << rows << ", "
       << groups << ", true, " << shape.segments << ">(\n      "
       << llvm::join(gemmArgs, ", ") << ");\n"
       << "  if (tile < 0)\n    return; // another block finishes the tile\n"
       << "  __syncthreads(); // the tile's columns of D, as its threads wrote "
          "them\n"
       << "  // Eight threads a row cover the tile's 32 columns (float4).\n"
       << "  for (int v = threadIdx.x; v < n * 8; v += blockDim.x)\n"
       << "    " << elementName << "(" << llvm::join(stepArgs, ", ")
       << ", v / 8, tile * 32 + (v % 8) * 4);\n"
       << "}\n"
       << "#ifdef CELL_CUDA_EMULATION\nextern \"C\" void " << name
       << "__emulate(void **args, unsigned grid, unsigned block) {\n"
       << "  cellEmulateLaunch(grid, block, true, [&] {\n    " << name << "(";
  for (auto [i, type] : llvm::enumerate(types))
    body << (i ? ",\n        " : "") << "*static_cast<" << type
         << " const *>(args[" << i << "])";
  body << ");\n  });\n}\n#endif\n";
  os << text;
  info.gemmEpilogue =
      KernelInfo::GemmEpilogue{name.str(), shape.segments, shape.gemmInput};
  return success();
}
