//===- FuseElementwise.cpp - cell-fuse-elementwise -----------------------===//
//
// Groups the ops between GEMMs into `cell.fused` ops. An op's level is the
// number of GEMMs (and per-row matrix products) on the longest path from the
// cell's arguments to it, raised to its earliest user's where all its users
// are fusible; ops of one level that are connected by def-use edges form one
// group (reductions over a row's columns included: their kernel runs a block
// a row), and a per-row matrix product is a group of its own. Levels only
// grow along edges and grow across every GEMM, so no path leaves a group
// through a GEMM and comes back: every group can run as one kernel.
//
//===----------------------------------------------------------------------===//
#include "cell/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/TopologicalSortUtils.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace mlir::cell {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "cell/Transforms/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

/// Ops that stay outside fused kernels: GEMMs (cuBLASLt or the small-batch
/// GEMV kernel), constants (weights), the terminator and nested fusions.
static bool isFusible(Operation *op) {
  return !isa<GemmOp, MatMulOp, ConstantOp, ReturnOp, FusedOp>(op);
}

static bool hasBatch(Type type);

/// A reduction over the columns of a [batch, columns] value (ReduceMean,
/// ReduceSum, ReduceMax over axis 1): it joins the element-wise ops around it,
/// and their kernel runs a block per row in phases (softmax's max, exps and
/// sum, a layer norm's mean and variance: one kernel instead of five).
static bool isRowLocalReduction(Operation *op) {
  if (!isa<ReduceMeanOp, ReduceSumOp, ReduceMaxOp>(op))
    return false;
  auto input = op->getOperand(0).getType().cast<RankedTensorType>();
  auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
  return input.getRank() == 2 && hasBatch(input) && axes && axes.size() == 1 &&
         axes[0] == 1;
}

/// Other reductions, argmax and products of per-row matrices (RowMatMul) run
/// as kernels of their own, one block per row: like a GEMM, they end a level,
/// so their users (which need the whole row reduced) are in a later kernel.
/// (An argmax of a softmax stays apart from the softmax's kernel.)
static bool isRowReduction(Operation *op) {
  return isa<ReduceMeanOp, ReduceSumOp, ReduceMaxOp, RowMatMulOp, ArgMaxOp>(
             op) &&
         !isRowLocalReduction(op);
}

/// Constants a kernel body holds itself: inline splats (one literal);
/// every other constant is a broadcast operand.
static bool isSmallConstant(Operation *op) {
  auto constant = dyn_cast_or_null<ConstantOp>(op);
  auto dense = constant ? constant.getValue().dyn_cast<DenseElementsAttr>()
                        : DenseElementsAttr();
  return dense && dense.isSplat();
}

static bool hasBatch(Type type) {
  return llvm::any_of(type.cast<RankedTensorType>().getShape(),
                      ShapedType::isDynamic);
}

/// Whether `user` is the cell's terminator (its result is a cell output).
static bool isReturn(Operation *user) { return isa<ReturnOp>(user); }

namespace {
/// What a group of ops reads from outside it and hands on.
struct GroupBoundary {
  /// Values defined outside the group: the fused op's operands.
  llvm::SetVector<Value> inputs;
  /// Splat constants the kernel body copies rather than reads.
  SmallVector<Operation *> copiedConstants;
  /// Values used outside the group, once per kind of result they become.
  SmallVector<Value> results;
  SmallVector<Access> resultKinds;
};
} // namespace

/// Records in `boundary` the operands of `ops` defined outside the group:
/// splat constants to copy, every other value an input.
static void collectInputs(ArrayRef<Operation *> ops,
                          const llvm::SmallPtrSetImpl<Operation *> &inGroup,
                          GroupBoundary &boundary) {
  for (Operation *op : ops)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && inGroup.contains(def))
        continue;
      if (isSmallConstant(def)) {
        if (!llvm::is_contained(boundary.copiedConstants, def))
          boundary.copiedConstants.push_back(def);
        continue;
      }
      boundary.inputs.insert(operand);
    }
}

/// Records in `boundary` the results of `ops` used outside the group. Each
/// becomes a scatter result when the cell returns it and a dense result when
/// another kernel or GEMM reads it (both when both happen: the GEMM needs a
/// contiguous buffer).
static void collectResults(ArrayRef<Operation *> ops,
                           const llvm::SmallPtrSetImpl<Operation *> &inGroup,
                           GroupBoundary &boundary) {
  for (Operation *op : ops)
    for (Value result : op->getResults()) {
      bool returned = false, readElsewhere = false;
      for (Operation *user : result.getUsers()) {
        if (inGroup.contains(user))
          continue;
        (isReturn(user) ? returned : readElsewhere) = true;
      }
      if (returned) {
        boundary.results.push_back(result);
        boundary.resultKinds.push_back(Access::Scatter);
      }
      if (readElsewhere) {
        boundary.results.push_back(result);
        boundary.resultKinds.push_back(Access::Dense);
      }
    }
}

/// Fills the body of `fused` with copies of the group's constants and of
/// `ops` over its arguments, yielding the group's results.
static void cloneIntoBody(FusedOp fused, ArrayRef<Operation *> ops,
                          const GroupBoundary &boundary) {
  Block &body = fused.getBody().front();
  IRMapping mapping;
  for (auto [input, argument] : llvm::zip(boundary.inputs, body.getArguments()))
    mapping.map(input, argument);
  OpBuilder inner = OpBuilder::atBlockBegin(&body);
  for (Operation *constant : boundary.copiedConstants)
    inner.clone(*constant, mapping);
  for (Operation *op : ops)
    inner.clone(*op, mapping);
  SmallVector<Value> yielded;
  for (Value result : boundary.results)
    yielded.push_back(mapping.lookup(result));
  inner.create<YieldOp>(fused.getLoc(), yielded);
}

namespace {
class Fuser {
public:
  explicit Fuser(CellOp cell) : cell_(cell) {}

  LogicalResult run() {
    Block &body = cell_.getBody().front();
    packGemmArguments(body);
    copyReturnedValues(body);
    computeLevels(body);
    SmallVector<Operation *> fusible;
    for (Operation &op : body)
      if (isFusible(&op))
        fusible.push_back(&op);
    for (Operation *op : fusible) {
      groups_.insert(op);
      if (isRowReduction(op))
        continue;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (isFusible(def) && !isRowReduction(def) &&
              levels_[def] == levels_[op])
            groups_.unionSets(def, op);
    }
    // Collect each group's ops in block order, then outline the groups.
    llvm::MapVector<Operation *, SmallVector<Operation *>> members;
    for (Operation *op : fusible)
      members[groups_.getLeaderValue(op)].push_back(op);
    for (auto &entry : members) {
      // A group that never touches the batch computes on weights alone
      // (say a Cast of a weight): a kernel over rows cannot run it.
      bool touchesBatch = llvm::any_of(entry.second, [](Operation *op) {
        return llvm::any_of(op->getResultTypes(), hasBatch);
      });
      if (!touchesBatch)
        return entry.second.front()->emitError(
            "computes on weights only; cellc runs per-row kernels, so fold "
            "such computations into the weights before exporting");
      outline(entry.second);
    }
    // A fused op sits where its last member was; a GEMM that reads an
    // earlier member's result may now come first. Groups are convex, so a
    // stable topological sort puts every use after its definition.
    sortTopologically(&body);
    return success();
  }

private:
  /// A GEMM reads contiguous rows, but a cell argument is a set of rows of a
  /// state pool picked by row index. An identity in front of such an operand
  /// becomes the kernel that gathers those rows into a dense buffer.
  void packGemmArguments(Block &body) {
    for (Operation &op : body) {
      if (!isa<GemmOp, MatMulOp>(op))
        continue;
      for (OpOperand &operand : op.getOpOperands()) {
        auto argument = operand.get().dyn_cast<BlockArgument>();
        if (!argument)
          continue;
        OpBuilder builder(&op);
        operand.set(builder.create<IdentityOp>(op.getLoc(), argument));
      }
    }
  }

  /// Every cell output is written by a kernel's scatter result of its own.
  /// A returned GEMM result, a returned argument (a state passed through)
  /// and a value returned a second time get an identity, which becomes (part
  /// of) a kernel that copies it to the output's rows.
  void copyReturnedValues(Block &body) {
    auto ret = cast<ReturnOp>(body.getTerminator());
    llvm::SmallPtrSet<Value, 8> seen;
    OpBuilder builder(ret);
    for (OpOperand &operand : ret->getOpOperands()) {
      Value value = operand.get();
      Operation *def = value.getDefiningOp();
      bool needsCopy = !seen.insert(value).second || !def ||
                       isa<GemmOp, MatMulOp, FusedOp>(def);
      if (needsCopy)
        operand.set(builder.create<IdentityOp>(ret.getLoc(), value));
    }
  }

  void computeLevels(Block &body) {
    for (Operation &op : body) {
      int level = 0;
      for (Value operand : op.getOperands())
        if (Operation *def = operand.getDefiningOp())
          level = std::max(
              level,
              levels_[def] +
                  (isa<GemmOp, MatMulOp>(def) || isRowReduction(def) ? 1 : 0));
      levels_[&op] = level;
    }
    // An op that feeds only fusible ops of later levels (a lookup of rows
    // read after a GEMM, a mask read after a reduction) joins the earliest
    // of them: one kernel fewer, and no round trip of its result through
    // memory. Its operands are from its own level or before, its users from
    // the new level on, so levels still only grow along edges.
    for (Operation &op : llvm::reverse(body)) {
      if (!isFusible(&op) || isRowReduction(&op) || op.use_empty())
        continue;
      int earliest = std::numeric_limits<int>::max();
      for (Operation *user : op.getUsers()) {
        if (!isFusible(user) || isRowReduction(user)) {
          earliest = levels_[&op];
          break;
        }
        earliest = std::min(earliest, levels_[user]);
      }
      levels_[&op] = std::max(levels_[&op], earliest);
    }
  }

  /// Replaces `ops` (one group, in block order) by one cell.fused placed at
  /// the last member, where every operand is available.
  void outline(ArrayRef<Operation *> ops) {
    llvm::SmallPtrSet<Operation *, 16> inGroup(ops.begin(), ops.end());
    GroupBoundary boundary;
    collectInputs(ops, inGroup, boundary);
    collectResults(ops, inGroup, boundary);
    FusedOp fused = createFusedOp(ops, boundary);
    cloneIntoBody(fused, ops, boundary);
    for (auto [index, result] : llvm::enumerate(boundary.results)) {
      bool scatter = boundary.resultKinds[index] == Access::Scatter;
      result.replaceUsesWithIf(fused.getResult(index), [&](OpOperand &use) {
        Operation *user = use.getOwner();
        return !inGroup.contains(user) && isReturn(user) == scatter;
      });
    }
    for (Operation *op : llvm::reverse(ops))
      op->erase();
  }

  /// Creates the cell.fused of `ops` after the last of them: an operand per
  /// input, a result per result of `boundary`, and an empty body.
  FusedOp createFusedOp(ArrayRef<Operation *> ops,
                        const GroupBoundary &boundary) {
    OpBuilder builder(ops.back());
    builder.setInsertionPointAfter(ops.back());
    MLIRContext *context = cell_.getContext();
    SmallVector<Attribute> operandAccess, resultAccess;
    for (Value input : boundary.inputs) {
      Access access = input.isa<BlockArgument>()  ? Access::Gather
                      : hasBatch(input.getType()) ? Access::Dense
                                                  : Access::Broadcast;
      operandAccess.push_back(AccessAttr::get(context, access));
    }
    for (Access kind : boundary.resultKinds)
      resultAccess.push_back(AccessAttr::get(context, kind));
    return builder.create<FusedOp>(
        ops.front()->getLoc(), ValueRange(boundary.results).getTypes(),
        boundary.inputs.getArrayRef(), builder.getArrayAttr(operandAccess),
        builder.getArrayAttr(resultAccess));
  }

  CellOp cell_;
  llvm::DenseMap<Operation *, int> levels_;
  llvm::EquivalenceClasses<Operation *> groups_;
};

struct FuseElementwisePass
    : mlir::cell::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    if (failed(Fuser(getOperation()).run()))
      signalPassFailure();
  }
};
} // namespace
