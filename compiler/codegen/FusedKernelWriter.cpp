//===- FusedKernelWriter.cpp - One cell.fused as a CUDA kernel -----------===//
//
// The kernel around a fused body: parameters, thread-to-element mapping
// (elementwise, float4 when rows allow; the kernels of a block a row are
// RowKernelWriter.cpp's), stores of the results, and the CPU-emulation
// launcher. The expressions come from KernelBodyWriter.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FusedKernelWriter.h"
#include "compiler/codegen/KernelBodyWriter.h"
#include "compiler/codegen/KernelText.h"

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

std::string cellc::codegen::storeCast(Type element, const std::string &value) {
  if (element.isF16())
    return "__float2half(" + value + ")";
  if (element.isBF16())
    return "__float2bfloat16(" + value + ")";
  return "(" + cudaType(element) + ")(" + value + ")";
}

std::string cellc::codegen::accessOf(FusedOp fused, bool result,
                                     unsigned index) {
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
    if (accessOf(fused, false, i) == "gather")
      add(Kind::InputRows, i, "const int *", llvm::formatv("rows{0}", i));
  }
  for (auto [i, result] : llvm::enumerate(fused.getResults())) {
    Type element = tensorOf(result).getElementType();
    add(Kind::Output, i, cudaType(element) + " *", llvm::formatv("out{0}", i));
    if (accessOf(fused, true, i) == "scatter")
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

std::string cellc::codegen::destination(FusedOp fused, unsigned i,
                                        const std::string &row,
                                        const std::string &col) {
  std::string target = accessOf(fused, true, i) == "scatter"
                           ? llvm::formatv("dst{0}[{1}]", i, row)
                           : row;
  RankedTensorType type = tensorOf(fused.getResult(i));
  if (type.getRank() < 2)
    return llvm::formatv("out{0}[{1}]", i, target);
  return llvm::formatv("out{0}[(size_t)({1}) * {2} + {3}]", i, target,
                       rowWidth(fused.getResult(i)), col);
}

LogicalResult cellc::codegen::writeVectorResult(FusedOp fused,
                                                KernelBodyWriter &writer,
                                                Value value, unsigned i,
                                                llvm::raw_ostream &os) {
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
  return success();
}

int64_t cellc::codegen::resultColumns(Value value) {
  return tensorOf(value).getRank() < 2 ? int64_t(0) : rowWidth(value);
}

SmallVector<int64_t> cellc::codegen::distinctResultColumns(YieldOp yield) {
  SmallVector<int64_t> widths;
  for (Value value : yield.getOperands())
    if (!llvm::is_contained(widths, resultColumns(value)))
      widths.push_back(resultColumns(value));
  return widths;
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
  SmallVector<int64_t> widths = distinctResultColumns(yield);
  llvm::sort(widths, std::greater<int64_t>());
  KernelBodyWriter writer(fused, os);
  for (int64_t blockWidth : widths) {
    bool guarded = blockWidth == 0 ? width > 1 : blockWidth < width;
    if (guarded)
      writer.beginGuard(blockWidth == 0
                            ? std::string("c == 0")
                            : llvm::formatv("c < {0}", blockWidth).str());
    for (auto [i, value] : llvm::enumerate(yield.getOperands())) {
      if (resultColumns(value) != blockWidth)
        continue;
      bool perRow = blockWidth == 0;
      Type element = tensorOf(value).getElementType();
      if (vector) {
        if (failed(writeVectorResult(fused, writer, value, i, os)))
          return failure();
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
  SmallVector<Operation *> reductions;
  fused.getBody().walk([&](Operation *op) {
    if (isa<ReduceMeanOp, ReduceSumOp, ReduceMaxOp>(op))
      reductions.push_back(op);
  });
  std::string text;
  llvm::raw_string_ostream body(text);
  body << "extern \"C\" __global__ void __launch_bounds__(256)\n"
       << name << "(";
  writeParams(fused, body, info);
  // First the wait for the grids before it (GridDependency.h).
  body << " {\n  cellrun_grid_dependency();\n  constexpr int kBatch = " << batch
       << ";\n  (void)kBatch;\n";
  if (failed(argmax ? writeArgMax(fused, argmax, body, info)
             : !reductions.empty()
                 ? writeRowPhases(fused, reductions, body, info)
             : rowMatMul ? writeRowMatMul(fused, rowMatMul, body, info)
                         : writeElementwise(fused, body, info)))
    return failure();
  body << "}\n";
  writeEmulationLauncher(info, body);
  os << text;
  return success();
}
