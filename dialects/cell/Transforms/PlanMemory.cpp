//===- PlanMemory.cpp - cell-plan-memory ---------------------------------===//
//
// Liveness-based placement of a task's intermediate buffers in one workspace.
// A buffer lives from the kernel that writes it to the last kernel that reads
// it (both included); buffers whose lives intersect get disjoint byte ranges.
// Largest buffers are placed first, each at the lowest offset that fits.
// At batch sizes of up to 16 rows a GEMM's operands live on through the
// kernel right after it that reads its result: code generation may run the
// two in one kernel (GemmEpilogueWriter.h), whose blocks that finish early
// write the kernel's results while others still read the GEMM's operands.
//
//===----------------------------------------------------------------------===//
#include "cell/Transforms/Passes.h"

#include "cell/IR/WeightData.h"

namespace mlir::cell {
#define GEN_PASS_DEF_PLANMEMORY
#include "cell/Transforms/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

static constexpr int64_t kBufferAlignment = 256;

namespace {
struct Buffer {
  Value value;
  int64_t bytes = 0;
  int64_t first = 0, last = 0; // program points (top-level op indices)
  int64_t offset = -1;
  bool overlapsInTime(const Buffer &other) const {
    return first <= other.last && other.first <= last;
  }
};
} // namespace

static int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/// Bytes of a tensor; booleans (i1) take a byte each, as in kernels.
static int64_t tensorBytes(Type type) {
  auto tensor = type.cast<RankedTensorType>();
  return tensor.getNumElements() * ((tensor.getElementTypeBitWidth() + 7) / 8);
}

/// True when `result` lives in the workspace: everything a top-level op
/// produces except weights and rows scattered into state pools.
static bool isWorkspaceValue(OpResult result) {
  Operation *op = result.getOwner();
  if (isa<ConstantOp>(op))
    return false;
  if (auto fused = dyn_cast<FusedOp>(op))
    return fused.getResultAccess()[result.getResultNumber()]
               .cast<AccessAttr>()
               .getValue() == Access::Dense;
  return true;
}

/// The kernel right after `gemm` (constants aside) when it reads the GEMM's
/// result, else null.
static Operation *epilogueOf(GemmOp gemm) {
  Operation *next = gemm->getNextNode();
  while (next && isa<ConstantOp>(next))
    next = next->getNextNode();
  if (!isa_and_nonnull<FusedOp>(next) ||
      !llvm::is_contained(next->getOperands(), gemm.getResult()))
    return nullptr;
  return next;
}

static SmallVector<Buffer> collectBuffers(Block &body, bool epilogues) {
  llvm::DenseMap<Operation *, int64_t> point;
  for (auto [index, op] : llvm::enumerate(body))
    point[&op] = index;
  SmallVector<Buffer> buffers;
  for (Operation &op : body)
    for (OpResult result : op.getResults()) {
      if (!isWorkspaceValue(result))
        continue;
      Buffer buffer{result,
                    alignUp(tensorBytes(result.getType()), kBufferAlignment)};
      buffer.first = buffer.last = point[&op];
      for (Operation *user : result.getUsers()) {
        buffer.last = std::max(buffer.last, point[user]);
        if (auto gemm = dyn_cast<GemmOp>(user); gemm && epilogues)
          if (Operation *epilogue = epilogueOf(gemm))
            buffer.last = std::max(buffer.last, point[epilogue]);
      }
      buffers.push_back(buffer);
    }
  return buffers;
}

/// Places every buffer at the lowest offset where it overlaps no placed
/// buffer that is live at the same time; returns the workspace size.
static int64_t placeBuffers(SmallVectorImpl<Buffer> &buffers) {
  SmallVector<Buffer *> order;
  for (Buffer &buffer : buffers)
    order.push_back(&buffer);
  llvm::stable_sort(order, [](const Buffer *a, const Buffer *b) {
    return a->bytes > b->bytes;
  });
  int64_t workspace = 0;
  SmallVector<Buffer *> placed;
  for (Buffer *buffer : order) {
    SmallVector<Buffer *> conflicts;
    for (Buffer *other : placed)
      if (other->overlapsInTime(*buffer))
        conflicts.push_back(other);
    llvm::sort(conflicts, [](const Buffer *a, const Buffer *b) {
      return a->offset < b->offset;
    });
    int64_t offset = 0;
    for (Buffer *other : conflicts) {
      if (offset + buffer->bytes <= other->offset)
        break;
      offset = std::max(offset, other->offset + other->bytes);
    }
    buffer->offset = offset;
    placed.push_back(buffer);
    workspace = std::max(workspace, offset + buffer->bytes);
  }
  return workspace;
}

static int64_t peakBytes(ArrayRef<Buffer> buffers, int64_t points) {
  int64_t peak = 0;
  for (int64_t point = 0; point < points; ++point) {
    int64_t live = 0;
    for (const Buffer &buffer : buffers)
      if (buffer.first <= point && point <= buffer.last)
        live += buffer.bytes;
    peak = std::max(peak, live);
  }
  return peak;
}

/// Bytes of one batch row of `type` (everything but the batch dimension).
static int64_t rowBytes(Type type) {
  auto tensor = type.cast<RankedTensorType>();
  return tensor.getNumElements() / tensor.getDimSize(0) *
         ((tensor.getElementTypeBitWidth() + 7) / 8);
}

/// The most rows of the GEMMs that may run with their epilogue in one kernel
/// (SkinnyGemmKernel.h's kSkinnyGemmMaxRows).
static constexpr int64_t kEpilogueMaxBatch = 16;

static void planCell(CellOp cell) {
  Block &body = cell.getBody().front();
  int64_t batch =
      cell->getAttrOfType<IntegerAttr>(CellDialect::kBatchSizeAttr).getInt();
  SmallVector<Buffer> buffers =
      collectBuffers(body, batch <= kEpilogueMaxBatch);
  int64_t workspace = placeBuffers(buffers);
  Builder builder(cell.getContext());
  for (Operation &op : body) {
    if (op.getNumResults() == 0 || isa<ConstantOp>(op))
      continue;
    SmallVector<int64_t> offsets(op.getNumResults(), -1);
    for (const Buffer &buffer : buffers)
      if (buffer.value.getDefiningOp() == &op)
        offsets[buffer.value.cast<OpResult>().getResultNumber()] =
            buffer.offset;
    op.setAttr("cell.offsets", builder.getDenseI64ArrayAttr(offsets));
  }
  int64_t slotBytes = 0;
  for (unsigned i = 0; i < cell.getNumResults(); ++i)
    if (cell.getResultRole(i) == Role::State)
      slotBytes += rowBytes(cell.getResultTypes()[i]);
  cell->setAttr("cell.workspace_bytes", builder.getI64IntegerAttr(workspace));
  cell->setAttr(
      "cell.peak_bytes",
      builder.getI64IntegerAttr(peakBytes(
          buffers, static_cast<int64_t>(body.getOperations().size()))));
  cell->setAttr("cell.slot_bytes", builder.getI64IntegerAttr(slotBytes));
}

namespace {
struct PlanMemoryPass : mlir::cell::impl::PlanMemoryBase<PlanMemoryPass> {
  void runOnOperation() override {
    for (CellOp cell : getOperation().getOps<CellOp>()) {
      if (!cell->hasAttr(CellDialect::kBatchSizeAttr))
        continue;
      WalkResult walk = cell.walk([&](Operation *op) {
        for (Type type : op->getResultTypes()) {
          auto tensor = type.dyn_cast<RankedTensorType>();
          unsigned bits = tensor ? tensor.getElementTypeBitWidth() : 8;
          if (bits != 1 && bits % 8 != 0) {
            op->emitError() << "produces " << type
                            << ", whose elements are not whole bytes";
            return WalkResult::interrupt();
          }
        }
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return signalPassFailure();
      planCell(cell);
    }
  }
};
} // namespace
