//===- RegionFusionGru.cpp - A GRU's gates as one op of a region ----------===//
//
// Finds, in a prepared region, the element-wise step of a GRU as ONNX
// exports it (nn.GRUCell):
//
//   a_r, a_z, a_n = Split(a)      b_r, b_z, b_n = Split(b)
//   r = Sigmoid(Add(a_r, b_r))    z = Sigmoid(Add(a_z, b_z))
//   n = Tanh(Add(a_n, Mul(b_n, r)))
//   h' = Add(Mul(Sub(h, n), z), n)
//
// and runs those ops as one (GruGates.h) in place of the first of them,
// when every value between them is fp32 with the step's width, read by
// nothing else and not a result of the region. Which projection is a (its
// new part added) and which b (its new part multiplied by r), and which part
// is which, follows from where the values flow; the operands of each Add and
// Mul may come in either order, the Sub's either way round (h - n or n - h,
// computed as written). The bits are those of the ops one by one
// (CELLRUN_CPU_FUSED_GATES=off runs them so), a NaN's payload aside.
//
//===----------------------------------------------------------------------===//
#include "GruGates.h"
#include "RegionDataflow.h"

#include <algorithm>

using namespace cellrun;
using namespace cellrun::cpu;
using cellpack::OpCode;

namespace {
constexpr uint32_t kNoValue = UINT32_MAX;

/// A Split of one fp32 batch value into three parts of `hidden` floats,
/// each one run of the operand's row.
bool threeWaySplit(const RegionDataflow &flow, size_t index, int64_t hidden) {
  const PreparedOp &op = flow.ops[index];
  if (flow.opcode(index) != OpCode::Split || op.operands.size() != 1 ||
      op.results.size() != 3 || op.runs.size() != 3 ||
      !flow.plainFloat(op.operands[0]) || !flow.values[op.operands[0]].hasBatch)
    return false;
  for (size_t part = 0; part < 3; ++part) {
    const std::vector<MoveRun> &runs = op.runs[part];
    if (flow.values[op.results[part]].count != hidden || runs.size() != 1 ||
        runs[0].operand != 0 || runs[0].to != 0 || runs[0].length != hidden)
      return false;
  }
  return true;
}

/// The operands of two-operand op `index`: `made` the one an op `code`
/// defines, `other` the other (kNoValue where none is, or both are).
void byDefiner(const RegionDataflow &flow, size_t index, OpCode code,
               uint32_t &made, uint32_t &other) {
  made = other = kNoValue;
  for (uint32_t operand : flow.ops[index].operands) {
    size_t definer = flow.definer[operand];
    (definer != SIZE_MAX && flow.opcode(definer) == code ? made : other) =
        operand;
  }
}

/// The Split defining `id`, and which of its results `id` is.
bool partOf(const RegionDataflow &flow, uint32_t id, size_t &split, int &part) {
  split = flow.definer[id];
  if (split == SIZE_MAX || flow.opcode(split) != OpCode::Split)
    return false;
  const std::vector<uint32_t> &results = flow.ops[split].results;
  part = static_cast<int>(std::find(results.begin(), results.end(), id) -
                          results.begin());
  return part < static_cast<int>(results.size());
}
} // namespace

void RegionInterpreter::Impl::fuseGruGates() {
  RegionDataflow flow(values, ops, results);
  for (size_t tanhOp = 0; tanhOp < ops.size(); ++tanhOp) {
    if (flow.opcode(tanhOp) != OpCode::Tanh || ops[tanhOp].operands.size() != 1)
      continue;
    uint32_t sumN = ops[tanhOp].operands[0];
    if (!flow.unary(tanhOp, OpCode::Tanh, sumN))
      continue;
    uint32_t n = ops[tanhOp].results[0];
    int64_t hidden = values[n].count;
    // n = tanh(a_n + b_n * r).
    size_t sumNOp = flow.definer[sumN];
    if (sumNOp == SIZE_MAX || flow.onlyReader(sumN) != tanhOp ||
        !flow.sameShapeBinary(sumNOp, OpCode::Add) || hidden < 1)
      continue;
    uint32_t product, aN;
    byDefiner(flow, sumNOp, OpCode::Mul, product, aN);
    if (aN == kNoValue || product == kNoValue ||
        flow.onlyReader(product) != sumNOp || flow.onlyReader(aN) != sumNOp)
      continue;
    size_t productOp = flow.definer[product];
    if (!flow.sameShapeBinary(productOp, OpCode::Mul))
      continue;
    // One factor is b_n (a Split part), the other r = sigmoid(a_r + b_r).
    uint32_t reset, bN;
    byDefiner(flow, productOp, OpCode::Sigmoid, reset, bN);
    size_t splitA, splitB;
    int partAN, partBN;
    if (bN == kNoValue || reset == kNoValue ||
        flow.onlyReader(bN) != productOp ||
        flow.onlyReader(reset) != productOp ||
        !partOf(flow, aN, splitA, partAN) ||
        !partOf(flow, bN, splitB, partBN) || splitA == splitB ||
        !threeWaySplit(flow, splitA, hidden) ||
        !threeWaySplit(flow, splitB, hidden))
      continue;
    // A gate: sigmoid of the sum of a part of each split, read by `reader`.
    auto gateOf = [&](uint32_t gate, size_t reader, int &partA, int &partB) {
      size_t sigmoidOp = flow.definer[gate];
      if (sigmoidOp == SIZE_MAX || flow.onlyReader(gate) != reader ||
          flow.ops[sigmoidOp].operands.size() != 1)
        return false;
      uint32_t sum = ops[sigmoidOp].operands[0];
      size_t sumOp = flow.definer[sum];
      if (!flow.unary(sigmoidOp, OpCode::Sigmoid, sum) || sumOp == SIZE_MAX ||
          flow.onlyReader(sum) != sigmoidOp ||
          !flow.sameShapeBinary(sumOp, OpCode::Add))
        return false;
      partA = partB = -1;
      for (uint32_t operand : ops[sumOp].operands) {
        size_t split;
        int part;
        if (!partOf(flow, operand, split, part) ||
            flow.onlyReader(operand) != sumOp)
          return false;
        if (split == splitA)
          partA = part;
        else if (split == splitB)
          partB = part;
        else
          return false;
      }
      return partA >= 0 && partB >= 0;
    };
    int partAR, partBR;
    if (!gateOf(reset, productOp, partAR, partBR))
      continue;
    // h' = (h - n) * z + n: n read by the Sub and the last Add alone.
    if (flow.isResult[n] || flow.readers[n].size() != 2)
      continue;
    size_t subOp = SIZE_MAX, lastOp = SIZE_MAX;
    for (size_t reader : flow.readers[n])
      (flow.opcode(reader) == OpCode::Sub ? subOp : lastOp) = reader;
    if (subOp == SIZE_MAX || lastOp == SIZE_MAX ||
        !flow.sameShapeBinary(subOp, OpCode::Sub) ||
        !flow.sameShapeBinary(lastOp, OpCode::Add))
      continue;
    const std::vector<uint32_t> &subOperands = ops[subOp].operands;
    bool hFirst = subOperands[1] == n;
    uint32_t state = hFirst ? subOperands[0] : subOperands[1];
    uint32_t difference = ops[subOp].results[0];
    size_t scaledOp = flow.onlyReader(difference);
    if (state == n || scaledOp == SIZE_MAX ||
        !flow.sameShapeBinary(scaledOp, OpCode::Mul))
      continue;
    uint32_t update = flow.other(scaledOp, difference);
    uint32_t scaled = ops[scaledOp].results[0];
    int partAZ, partBZ;
    if (update == difference || flow.onlyReader(scaled) != lastOp ||
        flow.other(lastOp, scaled) != n ||
        !gateOf(update, scaledOp, partAZ, partBZ))
      continue;
    // Each split's three parts: reset, update and new, once each.
    if (partAR == partAZ || partAR == partAN || partAZ == partAN ||
        partBR == partBZ || partBR == partBN || partBZ == partBN)
      continue;
    uint32_t out = ops[lastOp].results[0];
    uint32_t a = ops[splitA].operands[0], b = ops[splitB].operands[0];
    if (!flow.plainFloat(state) || values[state].count != hidden ||
        !values[state].hasBatch || values[out].view || !values[out].hasBatch)
      continue;
    std::vector<size_t> covered = {splitA, splitB, sumNOp,   productOp,
                                   tanhOp, subOp,  scaledOp, lastOp};
    for (uint32_t gate : {reset, update}) {
      size_t sigmoidOp = flow.definer[gate];
      covered.push_back(sigmoidOp);
      covered.push_back(flow.definer[ops[sigmoidOp].operands[0]]);
    }
    // Run at the first op: a, b and h made before it, each once; every
    // value of the step made once; no op fused twice.
    size_t first = *std::min_element(covered.begin(), covered.end());
    bool fits = true;
    for (uint32_t input : {a, b, state})
      fits &= flow.definitions[input] <= 1 &&
              (flow.definer[input] == SIZE_MAX || flow.definer[input] < first);
    for (size_t index : covered) {
      fits &= opFusion[index] == -1;
      for (uint32_t result : ops[index].results)
        fits &= flow.definitions[result] == 1;
    }
    if (!fits)
      continue;
    FusedGru fused;
    fused.a = a;
    fused.b = b;
    fused.h = state;
    fused.out = out;
    fused.hidden = hidden;
    fused.hFirst = hFirst;
    const int aParts[3] = {partAR, partAZ, partAN};
    const int bParts[3] = {partBR, partBZ, partBN};
    for (int p = 0; p < 3; ++p) {
      fused.aOffsets[p] = ops[splitA].runs[aParts[p]][0].from;
      fused.bOffsets[p] = ops[splitB].runs[bParts[p]][0].from;
    }
    // h' straight to the task's rows where it can.
    fused.outResult = straightResult(out, flow.readers[out], covered);
    fused.aRows.assign(blockRows, nullptr);
    fused.bRows.assign(blockRows, nullptr);
    fused.hRows.assign(blockRows, nullptr);
    fused.outRows.assign(blockRows, nullptr);
    for (size_t index : covered)
      opFusion[index] = -2;
    opFusion[first] = -3 - static_cast<int32_t>(fusedGru.size());
    fusedGru.push_back(std::move(fused));
  }
}

void RegionInterpreter::Impl::runFusedGru(
    FusedGru &fused, const std::vector<OutputView> &outputs, int64_t first,
    int64_t rows) {
  GruGateRows block;
  block.a = rowsOfBlock(fused.a, fused.aRows, rows);
  block.b = rowsOfBlock(fused.b, fused.bRows, rows);
  block.h = rowsOfBlock(fused.h, fused.hRows, rows);
  block.out = values[fused.out].f.data();
  block.rows = rows;
  block.hidden = fused.hidden;
  block.hFirst = fused.hFirst;
  std::copy(fused.aOffsets, fused.aOffsets + 3, block.aOffsets);
  std::copy(fused.bOffsets, fused.bOffsets + 3, block.bOffsets);
  block.outRows =
      straightRows(fused.outResult, fused.outRows, outputs, first, rows);
  gruGateRows(block);
}

int RegionInterpreter::fusedGruCount() const {
  return static_cast<int>(impl_->fusedGru.size());
}
