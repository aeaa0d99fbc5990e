//===- TokenVocabulary.cpp - The token ids a seq2seq decoder knows
//---------===//
#include "compiler/manifest/TokenVocabulary.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace cellc;
using mlir::cell::CellOp;

/// Ops that move a token id without changing it.
static bool keepsIds(Operation *op) {
  return isa<cell::CastOp, cell::IdentityOp, cell::ReshapeOp, cell::SqueezeOp,
             cell::UnsqueezeOp>(op);
}

static int64_t axisExtent(Type type, int64_t axis) {
  auto tensor = type.dyn_cast<RankedTensorType>();
  if (!tensor)
    return ShapedType::kDynamic;
  if (axis < 0)
    axis += tensor.getRank();
  if (axis < 0 || axis >= tensor.getRank())
    return ShapedType::kDynamic;
  return tensor.getDimSize(axis);
}

std::optional<int64_t> cellc::argMaxRange(CellOp cell, StringRef name) {
  Operation *terminator = cell.getBody().front().getTerminator();
  for (unsigned i = 0; i < cell.getNumResults(); ++i) {
    if (cell.getResultName(i) != name)
      continue;
    Operation *producer = terminator->getOperand(i).getDefiningOp();
    while (producer && keepsIds(producer))
      producer = producer->getOperand(0).getDefiningOp();
    auto argMax = dyn_cast_or_null<cell::ArgMaxOp>(producer);
    if (!argMax)
      return std::nullopt;
    int64_t extent = axisExtent(argMax.getInput().getType(), argMax.getAxis());
    if (ShapedType::isDynamic(extent))
      return std::nullopt;
    return extent;
  }
  return std::nullopt;
}

std::optional<int64_t> cellc::gatherRange(CellOp cell, StringRef name) {
  for (unsigned i = 0; i < cell.getNumArguments(); ++i) {
    if (cell.getArgumentName(i) != name)
      continue;
    // Every Gather the id reaches: the smallest table bounds it.
    std::optional<int64_t> range;
    SmallVector<Value> ids = {cell.getBody().front().getArgument(i)};
    while (!ids.empty()) {
      Value id = ids.pop_back_val();
      for (OpOperand &use : id.getUses()) {
        Operation *user = use.getOwner();
        if (keepsIds(user) && use.getOperandNumber() == 0) {
          ids.push_back(user->getResult(0));
          continue;
        }
        auto gather = dyn_cast<cell::GatherOp>(user);
        if (!gather || use.getOperandNumber() != 1 ||
            !gather.getData().getDefiningOp<cell::ConstantOp>())
          continue;
        int64_t rows = axisExtent(gather.getData().getType(), gather.getAxis());
        if (!ShapedType::isDynamic(rows))
          range = range ? std::min(*range, rows) : rows;
      }
    }
    return range;
  }
  return std::nullopt;
}

LogicalResult cellc::checkSeq2SeqTokens(const Seq2SeqSpec &spec,
                                        CellOp decoder) {
  if (std::optional<int64_t> table = gatherRange(decoder, spec.tokenInput);
      table && spec.bosToken >= *table)
    return emitError(spec.loc["bos_token"])
           << "bos_token " << spec.bosToken << " is outside the decoder's "
           << "embedding table: token_input '" << spec.tokenInput
           << "' indexes a table of " << *table << " rows (ids 0.."
           << *table - 1 << ")";
  if (spec.allowEosOutsideVocabulary)
    return success();
  std::optional<int64_t> vocabulary = argMaxRange(decoder, spec.tokenOutput);
  if (vocabulary && spec.eosToken >= *vocabulary)
    return emitError(spec.loc["eos_token"])
           << "eos_token " << spec.eosToken << " is never produced: "
           << "token_output '" << spec.tokenOutput << "' is an ArgMax over "
           << *vocabulary << " ids (0.." << *vocabulary - 1
           << "), so every decode would run to max_decode_length (say "
              "allow_eos_outside_vocabulary: true if that is meant)";
  return success();
}
