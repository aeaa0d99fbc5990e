//===- PlanWriter.cpp - Task plans of one cell into the cellpack ---------===//
//
// A batch plan is the cell copy's top-level ops in order: GEMMs become
// GemmSteps for cuBLASLt, fused ops KernelSteps naming their generated kernel
// and carrying their body as a portable op list for the CPU backend. Every
// tensor is a ValueRef: a workspace offset (from cell-plan-memory), a weight,
// or rows of a cell input/output state pool.
//
//===----------------------------------------------------------------------===//
#include "compiler/artifact/PlanWriter.h"

#include "cell/IR/WeightData.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::cell;
using namespace cellc;
namespace fb = flatbuffers;

unsigned WeightTable::add(ElementsAttr value) {
  auto [it, inserted] = index.try_emplace(value, values.size());
  if (inserted)
    values.push_back(value);
  return it->second;
}

cellpack::DType cellc::toDType(Type type) {
  if (type.isF64())
    return cellpack::DType::F64;
  if (type.isF16())
    return cellpack::DType::F16;
  if (type.isBF16())
    return cellpack::DType::BF16;
  if (type.isSignlessInteger(64))
    return cellpack::DType::I64;
  if (type.isSignlessInteger(32))
    return cellpack::DType::I32;
  if (type.isSignlessInteger(16))
    return cellpack::DType::I16;
  if (type.isSignlessInteger(8))
    return cellpack::DType::I8;
  if (type.isSignlessInteger(1))
    return cellpack::DType::Bool;
  return cellpack::DType::F32;
}

static cellpack::Precision toPrecision(Precision precision) {
  switch (precision) {
  case Precision::TF32:
    return cellpack::Precision::TF32;
  case Precision::BF16:
    return cellpack::Precision::BF16;
  case Precision::FP16:
    return cellpack::Precision::FP16;
  default:
    return cellpack::Precision::FP32;
  }
}

namespace {
class PlanBuilder {
public:
  PlanBuilder(fb::FlatBufferBuilder &fbb, CellOp copy, WeightTable &weights)
      : fbb_(fbb), copy_(copy), weights_(weights) {}

  FailureOr<fb::Offset<cellpack::ValueRef>> ref(Value value);
  FailureOr<fb::Offset<cellpack::GemmStep>> gemm(Operation *op,
                                                 Precision precision);
  FailureOr<fb::Offset<cellpack::KernelStep>>
  kernel(FusedOp fused, const codegen::KernelInfo &info);

private:
  fb::Offset<cellpack::ValueRef> makeRef(cellpack::ValueKind kind,
                                         unsigned index, uint64_t offset,
                                         Type type) {
    auto tensor = type.cast<RankedTensorType>();
    std::vector<int64_t> shape(tensor.getShape().begin(),
                               tensor.getShape().end());
    return cellpack::CreateValueRefDirect(
        fbb_, kind, index, offset, toDType(tensor.getElementType()), &shape);
  }
  fb::Offset<cellpack::PortableRegion> region(FusedOp fused);

  fb::FlatBufferBuilder &fbb_;
  CellOp copy_;
  WeightTable &weights_;
};
} // namespace

FailureOr<fb::Offset<cellpack::ValueRef>> PlanBuilder::ref(Value value) {
  if (auto arg = value.dyn_cast<BlockArgument>())
    return makeRef(cellpack::ValueKind::CellInput, arg.getArgNumber(), 0,
                   value.getType());
  Operation *def = value.getDefiningOp();
  if (auto constant = dyn_cast<ConstantOp>(def))
    return makeRef(cellpack::ValueKind::Weight,
                   weights_.add(constant.getValue()), 0, value.getType());
  auto result = value.cast<OpResult>();
  auto offsets = def->getAttrOfType<DenseI64ArrayAttr>("cell.offsets");
  if (!offsets)
    return def->emitOpError("has no memory plan (run cell-plan-memory)");
  int64_t offset = offsets[result.getResultNumber()];
  if (offset >= 0)
    return makeRef(cellpack::ValueKind::Workspace, 0, offset, value.getType());
  // A scatter result: rows of the state pool of the cell output it is.
  auto ret = cast<ReturnOp>(copy_.getBody().front().getTerminator());
  for (auto [index, returned] : llvm::enumerate(ret.getOperands()))
    if (returned == value)
      return makeRef(cellpack::ValueKind::CellOutput, index, 0,
                     value.getType());
  return def->emitOpError("writes rows that the cell does not return");
}

FailureOr<fb::Offset<cellpack::GemmStep>>
PlanBuilder::gemm(Operation *op, Precision precision) {
  auto gemm = dyn_cast<GemmOp>(op);
  Value a = op->getOperand(0), b = op->getOperand(1);
  Value c = gemm ? gemm.getC() : Value();
  auto aType = a.getType().cast<RankedTensorType>();
  auto bType = b.getType().cast<RankedTensorType>();
  if (aType.getRank() != 2 || bType.getRank() != 2)
    return op->emitOpError("only matrix products become GEMM steps");
  bool transA = gemm && gemm.getTransA(), transB = gemm && gemm.getTransB();
  auto refA = ref(a), refB = ref(b), refD = ref(op->getResult(0));
  FailureOr<fb::Offset<cellpack::ValueRef>> refC =
      c ? ref(c)
        : FailureOr<fb::Offset<cellpack::ValueRef>>(
              fb::Offset<cellpack::ValueRef>());
  if (failed(refA) || failed(refB) || failed(refC) || failed(refD))
    return failure();
  cellpack::GemmStepBuilder step(fbb_);
  step.add_a(*refA);
  step.add_b(*refB);
  if (c)
    step.add_c(*refC);
  step.add_d(*refD);
  step.add_m(aType.getDimSize(transA ? 1 : 0));
  step.add_k(aType.getDimSize(transA ? 0 : 1));
  step.add_n(bType.getDimSize(transB ? 0 : 1));
  step.add_trans_a(transA);
  step.add_trans_b(transB);
  step.add_alpha(gemm ? gemm.getAlpha().convertToFloat() : 1.0f);
  step.add_beta(gemm ? gemm.getBeta().convertToFloat() : 1.0f);
  step.add_precision(toPrecision(precision));
  return step.Finish();
}

static cellpack::OpCode opCode(Operation *op) {
  using Code = cellpack::OpCode;
  return llvm::TypeSwitch<Operation *, Code>(op)
      .Case<AddOp>([](auto) { return Code::Add; })
      .Case<SubOp>([](auto) { return Code::Sub; })
      .Case<MulOp>([](auto) { return Code::Mul; })
      .Case<DivOp>([](auto) { return Code::Div; })
      .Case<SigmoidOp>([](auto) { return Code::Sigmoid; })
      .Case<TanhOp>([](auto) { return Code::Tanh; })
      .Case<ReluOp>([](auto) { return Code::Relu; })
      .Case<CastOp>([](auto) { return Code::Cast; })
      .Case<SplitOp>([](auto) { return Code::Split; })
      .Case<SliceOp>([](auto) { return Code::Slice; })
      .Case<ConcatOp>([](auto) { return Code::Concat; })
      .Case<GatherOp>([](auto) { return Code::Gather; })
      .Case<ArgMaxOp>([](auto) { return Code::ArgMax; })
      .Case<ConstantOp>([](auto) { return Code::Constant; })
      .Case<ReshapeOp>([](auto) { return Code::Reshape; })
      .Case<SqueezeOp>([](auto) { return Code::Squeeze; })
      .Case<UnsqueezeOp>([](auto) { return Code::Unsqueeze; })
      .Case<TransposeOp>([](auto) { return Code::Transpose; })
      .Case<GemmOp>([](auto) { return Code::Gemm; })
      .Case<ErfOp>([](auto) { return Code::Erf; })
      .Case<SqrtOp>([](auto) { return Code::Sqrt; })
      .Case<PowOp>([](auto) { return Code::Pow; })
      .Case<EqualOp>([](auto) { return Code::Equal; })
      .Case<LessOp>([](auto) { return Code::Less; })
      .Case<LessOrEqualOp>([](auto) { return Code::LessOrEqual; })
      .Case<GreaterOp>([](auto) { return Code::Greater; })
      .Case<GreaterOrEqualOp>([](auto) { return Code::GreaterOrEqual; })
      .Case<NotOp>([](auto) { return Code::Not; })
      .Case<WhereOp>([](auto) { return Code::Where; })
      .Case<ReduceMeanOp>([](auto) { return Code::ReduceMean; })
      .Case<ReduceSumOp>([](auto) { return Code::ReduceSum; })
      .Case<ReduceMaxOp>([](auto) { return Code::ReduceMax; })
      .Case<ExpOp>([](auto) { return Code::Exp; })
      .Case<LogOp>([](auto) { return Code::Log; })
      .Case<SoftplusOp>([](auto) { return Code::Softplus; })
      .Case<NegOp>([](auto) { return Code::Neg; })
      .Case<RowMatMulOp>([](auto) { return Code::RowMatMul; })
      .Default([](auto) { return Code::Identity; });
}

static std::vector<int64_t> toVector(ArrayRef<int64_t> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

namespace {
/// The attributes of a portable op, as PortableOp stores them (the defaults
/// for an op that has none of them).
struct PortableAttrs {
  std::vector<int64_t> sizes, axes, starts, ends, steps, perm;
  std::vector<uint8_t> constant;
  int64_t axis = 0;
  bool keepdims = false, selectLast = false, transA = false, transB = false;
  float alpha = 1.0f, beta = 1.0f;
};
} // namespace

/// The attributes of `op` that the CPU backend reads.
static PortableAttrs portableAttrs(Operation &op) {
  PortableAttrs attrs;
  if (auto split = dyn_cast<SplitOp>(op)) {
    attrs.axis = split.getAxis();
    attrs.sizes = toVector(split.getSizes());
  } else if (auto slice = dyn_cast<SliceOp>(op)) {
    attrs.axes = toVector(slice.getAxes());
    attrs.starts = toVector(slice.getStarts());
    attrs.ends = toVector(slice.getEnds());
    attrs.steps = toVector(slice.getSteps());
  } else if (auto concat = dyn_cast<ConcatOp>(op)) {
    attrs.axis = concat.getAxis();
  } else if (auto gather = dyn_cast<GatherOp>(op)) {
    attrs.axis = gather.getAxis();
  } else if (auto argmax = dyn_cast<ArgMaxOp>(op)) {
    attrs.axis = argmax.getAxis();
    attrs.keepdims = argmax.getKeepdims();
    attrs.selectLast = argmax.getSelectLastIndex();
  } else if (isa<ReduceMeanOp, ReduceSumOp, ReduceMaxOp>(op)) {
    attrs.axes =
        toVector(op.getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef());
    auto keep = op.getAttrOfType<BoolAttr>("keepdims");
    attrs.keepdims = !keep || keep.getValue();
  } else if (auto squeeze = dyn_cast<SqueezeOp>(op)) {
    attrs.axes = toVector(squeeze.getAxes());
  } else if (auto unsqueeze = dyn_cast<UnsqueezeOp>(op)) {
    attrs.axes = toVector(unsqueeze.getAxes());
  } else if (auto transpose = dyn_cast<TransposeOp>(op)) {
    attrs.perm = toVector(transpose.getPerm());
  } else if (auto gemm = dyn_cast<GemmOp>(op)) {
    attrs.transA = gemm.getTransA();
    attrs.transB = gemm.getTransB();
    attrs.alpha = gemm.getAlpha().convertToFloat();
    attrs.beta = gemm.getBeta().convertToFloat();
  } else if (auto rowMatMul = dyn_cast<RowMatMulOp>(op)) {
    attrs.sizes = {static_cast<int64_t>(rowMatMul.getM()),
                   static_cast<int64_t>(rowMatMul.getK()),
                   static_cast<int64_t>(rowMatMul.getN())};
    attrs.transA = rowMatMul.getTransLhs();
    attrs.transB = rowMatMul.getTransRhs();
  } else if (auto constantOp = dyn_cast<ConstantOp>(op)) {
    std::optional<std::vector<char>> bytes =
        constantBytes(constantOp.getValue());
    if (bytes)
      attrs.constant.assign(bytes->begin(), bytes->end());
  }
  return attrs;
}

fb::Offset<cellpack::PortableRegion> PlanBuilder::region(FusedOp fused) {
  Block &body = fused.getBody().front();
  llvm::DenseMap<Value, uint32_t> ids;
  std::vector<fb::Offset<cellpack::PortableValue>> values;
  auto addValue = [&](Value value) {
    ids[value] = values.size();
    auto tensor = value.getType().cast<RankedTensorType>();
    std::vector<int64_t> shape = toVector(tensor.getShape());
    values.push_back(cellpack::CreatePortableValueDirect(
        fbb_, toDType(tensor.getElementType()), &shape));
  };
  for (BlockArgument arg : body.getArguments())
    addValue(arg);
  std::vector<fb::Offset<cellpack::PortableOp>> ops;
  for (Operation &op : body.without_terminator()) {
    std::vector<uint32_t> operands, results;
    for (Value operand : op.getOperands())
      operands.push_back(ids.lookup(operand));
    for (Value result : op.getResults()) {
      addValue(result);
      results.push_back(ids[result]);
    }
    PortableAttrs attrs = portableAttrs(op);
    ops.push_back(cellpack::CreatePortableOpDirect(
        fbb_, opCode(&op), &operands, &results, attrs.axis, &attrs.sizes,
        &attrs.axes, &attrs.starts, &attrs.ends, &attrs.steps, &attrs.perm,
        attrs.keepdims, attrs.selectLast, &attrs.constant, attrs.transA,
        attrs.transB, attrs.alpha, attrs.beta));
  }
  std::vector<uint32_t> results;
  for (Value value : body.getTerminator()->getOperands())
    results.push_back(ids.lookup(value));
  return cellpack::CreatePortableRegionDirect(
      fbb_, &values, body.getNumArguments(), &ops, &results);
}

static std::vector<cellpack::Access> accessList(ArrayAttr list) {
  std::vector<cellpack::Access> kinds;
  for (Attribute attr : list)
    kinds.push_back(static_cast<cellpack::Access>(
        static_cast<int>(attr.cast<AccessAttr>().getValue())));
  return kinds;
}

FailureOr<fb::Offset<cellpack::KernelStep>>
PlanBuilder::kernel(FusedOp fused, const codegen::KernelInfo &info) {
  std::vector<fb::Offset<cellpack::ValueRef>> inputs, outputs;
  for (Value input : fused.getInputs()) {
    auto value = ref(input);
    if (failed(value))
      return failure();
    inputs.push_back(*value);
  }
  for (Value output : fused.getResults()) {
    auto value = ref(output);
    if (failed(value))
      return failure();
    outputs.push_back(*value);
  }
  std::vector<fb::Offset<cellpack::KernelParam>> params;
  for (const codegen::KernelParam &param : info.params)
    params.push_back(cellpack::CreateKernelParam(
        fbb_, static_cast<cellpack::ParamKind>(param.kind), param.index));
  std::vector<cellpack::Access> inputAccess =
      accessList(fused.getOperandAccess());
  std::vector<cellpack::Access> outputAccess =
      accessList(fused.getResultAccess());
  auto body = region(fused);
  auto shape = info.shape == codegen::KernelInfo::Shape::RowReduction
                   ? cellpack::KernelShape::RowReduction
                   : cellpack::KernelShape::Elementwise;
  fb::Offset<cellpack::GemmEpilogue> epilogue;
  if (info.gemmEpilogue)
    epilogue = cellpack::CreateGemmEpilogueDirect(
        fbb_, info.gemmEpilogue->kernel.c_str(), info.gemmEpilogue->segments,
        info.gemmEpilogue->gemmInput);
  return cellpack::CreateKernelStepDirect(
      fbb_, info.name.c_str(), shape, info.rowWidth, info.blockSize, &params,
      &inputs, &inputAccess, &outputs, &outputAccess, body, epilogue,
      static_cast<uint32_t>(info.blocksPerRow));
}

FailureOr<fb::Offset<cellpack::BatchPlan>>
cellc::writeBatchPlan(fb::FlatBufferBuilder &fbb, CellOp copy,
                      ArrayRef<const codegen::KernelInfo *> kernels,
                      Precision precision, WeightTable &weights) {
  PlanBuilder builder(fbb, copy, weights);
  std::vector<fb::Offset<cellpack::TaskStep>> steps;
  size_t kernelIndex = 0;
  for (Operation &op : copy.getBody().front().without_terminator()) {
    if (isa<ConstantOp>(op))
      continue;
    if (isa<GemmOp, MatMulOp>(op)) {
      auto step = builder.gemm(&op, precision);
      if (failed(step))
        return failure();
      steps.push_back(cellpack::CreateTaskStep(fbb, cellpack::Step::GemmStep,
                                               step->Union()));
      continue;
    }
    auto fused = dyn_cast<FusedOp>(op);
    if (!fused || kernelIndex >= kernels.size())
      return op.emitOpError("is neither a GEMM nor a fused kernel; run the "
                            "whole pipeline before writing an artifact");
    auto step = builder.kernel(fused, *kernels[kernelIndex++]);
    if (failed(step))
      return failure();
    steps.push_back(cellpack::CreateTaskStep(fbb, cellpack::Step::KernelStep,
                                             step->Union()));
  }
  auto attr = [&](StringRef name) {
    return copy->getAttrOfType<IntegerAttr>(name).getInt();
  };
  return cellpack::CreateBatchPlanDirect(fbb, attr(CellDialect::kBatchSizeAttr),
                                         &steps, attr("cell.workspace_bytes"),
                                         attr("cell.peak_bytes"));
}
