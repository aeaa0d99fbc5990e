//===- RegionFusion.cpp - An LSTM's gates as one op of a region -----------===//
//
// Finds, in a prepared region, the element-wise step of an LSTM as ONNX
// exports it:
//
//   gates = Add(x, y)                      (optional)
//   i, f, g, o = Split(gates)              (any order of the four parts)
//   c' = Add(Mul(Sigmoid(f), c), Mul(Sigmoid(i), Tanh(g)))
//   h' = Mul(Sigmoid(o), Tanh(c'))
//
// and runs those ops as one (LstmGates.h) in place of the first of them,
// when every value between them is fp32 with the gates' width, read by
// nothing else and not a result of the region. Which part is which gate
// follows from where it flows, not from its place in the Split. The bits
// are those of the ops one by one (CELLRUN_CPU_FUSED_GATES=off runs them so,
// for comparison), a NaN's payload aside (LstmGates.h).
//
//===----------------------------------------------------------------------===//
#include "LstmGates.h"
#include "RegionDataflow.h"

#include <algorithm>
#include <cstdlib>
#include <string>

using namespace cellrun;
using namespace cellrun::cpu;
using cellpack::OpCode;

namespace {
constexpr uint32_t kNone = UINT32_MAX;
} // namespace

void RegionInterpreter::Impl::fuseGates() {
  if (const char *setting = std::getenv("CELLRUN_CPU_FUSED_GATES");
      setting && std::string(setting) == "off")
    return;
  opFusion.assign(ops.size(), -1);
  fuseLstmGates();
  fuseGruGates();
  if (fusedGates.empty() && fusedGru.empty())
    opFusion.clear();
  storedAlready.assign(results.size(), 0);
  copiedAlready.assign(results.size(), 0);
}

void RegionInterpreter::Impl::fuseLstmGates() {
  RegionDataflow flow(values, ops, results);
  const std::vector<std::vector<size_t>> &readers = flow.readers;
  const std::vector<size_t> &definer = flow.definer;
  const std::vector<uint32_t> &definitions = flow.definitions;
  auto opcode = [&](size_t index) { return flow.opcode(index); };
  auto plainFloat = [&](uint32_t id) { return flow.plainFloat(id); };
  auto onlyReader = [&](uint32_t id) { return flow.onlyReader(id); };
  auto sameShapeBinary = [&](size_t index, OpCode code) {
    return flow.sameShapeBinary(index, code);
  };
  auto unary = [&](size_t index, OpCode code, uint32_t operand) {
    return flow.unary(index, code, operand);
  };
  auto other = [&](size_t index, uint32_t one) {
    return flow.other(index, one);
  };

  for (size_t split = 0; split < ops.size(); ++split) {
    const PreparedOp &splitOp = ops[split];
    if (opcode(split) != OpCode::Split || splitOp.operands.size() != 1 ||
        splitOp.results.size() != 4 || splitOp.runs.size() != 4)
      continue;
    uint32_t gates = splitOp.operands[0];
    if (!plainFloat(gates) || !values[gates].hasBatch)
      continue;
    int64_t hidden = values[splitOp.results[0]].count;
    // Each part one run of the gates' row, read by one activation.
    int64_t offsets[4];
    uint32_t activated[4];
    OpCode activation[4];
    bool fits = true;
    for (int part = 0; part < 4 && fits; ++part) {
      uint32_t id = splitOp.results[part];
      const std::vector<MoveRun> &runs = splitOp.runs[part];
      size_t reader = onlyReader(id);
      fits = values[id].count == hidden && runs.size() == 1 &&
             runs[0].operand == 0 && runs[0].to == 0 &&
             runs[0].length == hidden && reader != SIZE_MAX &&
             (unary(reader, OpCode::Sigmoid, id) ||
              unary(reader, OpCode::Tanh, id));
      if (!fits)
        break;
      offsets[part] = runs[0].from;
      activation[part] = opcode(reader);
      activated[part] = ops[reader].results[0];
      fits = values[activated[part]].count == hidden;
    }
    if (!fits || std::count(activation, activation + 4, OpCode::Tanh) != 1)
      continue;
    int candidate = static_cast<int>(
        std::find(activation, activation + 4, OpCode::Tanh) - activation);
    // The candidate's tanh times the input gate.
    size_t inputProduct = onlyReader(activated[candidate]);
    if (inputProduct == SIZE_MAX || !sameShapeBinary(inputProduct, OpCode::Mul))
      continue;
    // The cell state: the sum of that product and another, which is a
    // sigmoid gate (forget) times c; its tanh times the last gate (output).
    uint32_t inputTerm = ops[inputProduct].results[0];
    size_t cellSum = onlyReader(inputTerm);
    if (cellSum == SIZE_MAX || !sameShapeBinary(cellSum, OpCode::Add))
      continue;
    uint32_t forgetTerm = other(cellSum, inputTerm);
    size_t forgetProduct = definer[forgetTerm];
    if (forgetProduct == SIZE_MAX || onlyReader(forgetTerm) != cellSum ||
        !sameShapeBinary(forgetProduct, OpCode::Mul))
      continue;
    uint32_t cell = ops[cellSum].results[0];
    size_t cellTanh = SIZE_MAX;
    for (size_t reader : readers[cell])
      if (unary(reader, OpCode::Tanh, cell) &&
          onlyReader(ops[reader].results[0]) != SIZE_MAX)
        cellTanh = reader;
    if (cellTanh == SIZE_MAX)
      continue;
    uint32_t squashed = ops[cellTanh].results[0];
    size_t hiddenProduct = onlyReader(squashed);
    if (hiddenProduct == SIZE_MAX ||
        !sameShapeBinary(hiddenProduct, OpCode::Mul))
      continue;
    // The three sigmoid parts by the product that reads each: input (with
    // the candidate), forget (with c) and output (with tanh(c')).
    int role[4] = {-1, -1, candidate, -1}; // per gate: its part
    bool once = true;
    for (int part = 0; part < 4 && once; ++part) {
      if (part == candidate)
        continue;
      size_t reader = onlyReader(activated[part]);
      int gate = reader == inputProduct    ? 0
                 : reader == forgetProduct ? 1
                 : reader == hiddenProduct ? 3
                                           : -1;
      once = gate >= 0 && role[gate] < 0;
      if (once)
        role[gate] = part;
    }
    if (!once || role[0] < 0 || role[1] < 0 || role[3] < 0 ||
        other(inputProduct, activated[candidate]) != activated[role[0]] ||
        other(hiddenProduct, squashed) != activated[role[3]])
      continue;
    uint32_t state = other(forgetProduct, activated[role[1]]);
    if (!plainFloat(state) || values[state].count != hidden)
      continue;
    // The gates' sum, when only the Split reads it.
    size_t first = split;
    uint32_t a = gates, b = kNone;
    size_t sum = definer[gates];
    if (sum != SIZE_MAX && onlyReader(gates) == split &&
        sameShapeBinary(sum, OpCode::Add) &&
        values[ops[sum].operands[0]].hasBatch &&
        values[ops[sum].operands[1]].hasBatch) {
      first = sum;
      a = ops[sum].operands[0];
      b = ops[sum].operands[1];
    }
    // Run at the first op: c must be made before it; the results are
    // stored in the block (never views).
    uint32_t hiddenOut = ops[hiddenProduct].results[0];
    if ((definer[state] != SIZE_MAX && definer[state] >= first) ||
        values[cell].view || values[hiddenOut].view || !values[cell].hasBatch ||
        !values[hiddenOut].hasBatch)
      continue;
    std::vector<size_t> covered = {split,         inputProduct, cellSum,
                                   forgetProduct, cellTanh,     hiddenProduct};
    for (int part = 0; part < 4; ++part)
      covered.push_back(readers[splitOp.results[part]][0]);
    if (first != split)
      covered.push_back(first);
    // Each value made once (a region that redefines one is not this step),
    // and no op fused twice.
    bool madeOnce = definitions[state] <= 1;
    for (size_t index : covered)
      for (uint32_t result : ops[index].results)
        madeOnce &= definitions[result] == 1;
    if (!madeOnce ||
        std::any_of(covered.begin(), covered.end(),
                    [&](size_t index) { return opFusion[index] != -1; }))
      continue;
    FusedGates fused;
    fused.a = a;
    fused.b = b;
    fused.c = state;
    fused.cellOut = cell;
    fused.hiddenOut = hiddenOut;
    fused.hidden = hidden;
    for (int gate = 0; gate < 4; ++gate)
      fused.offsets[gate] = offsets[role[gate]];
    fused.aRows.assign(blockRows, nullptr);
    fused.bRows.assign(b == kNone ? 0 : blockRows, nullptr);
    fused.cRows.assign(blockRows, nullptr);
    // c' and h' straight to the task's rows where they can.
    fused.cellResult = straightResult(cell, readers[cell], covered);
    fused.hiddenResult = straightResult(hiddenOut, readers[hiddenOut], covered);
    fused.cOutRows.assign(blockRows, nullptr);
    fused.hOutRows.assign(blockRows, nullptr);
    for (size_t index : covered)
      opFusion[index] = -2;
    opFusion[first] = static_cast<int32_t>(fusedGates.size());
    fusedGates.push_back(std::move(fused));
  }
}

void RegionInterpreter::Impl::runFusedGates(
    FusedGates &fused, const std::vector<OutputView> &outputs, int64_t first,
    int64_t rows) {
  LstmGateRows block;
  if (fused.gemmFolded) // a is made in the loop
    fused.gemm.rows = gemmRows + first;
  else
    block.a = rowsOfBlock(fused.a, fused.aRows, rows);
  block.b =
      fused.b == kNone ? nullptr : rowsOfBlock(fused.b, fused.bRows, rows);
  block.c = rowsOfBlock(fused.c, fused.cRows, rows);
  block.cOut = values[fused.cellOut].f.data();
  block.hOut = values[fused.hiddenOut].f.data();
  block.cOutRows =
      straightRows(fused.cellResult, fused.cOutRows, outputs, first, rows);
  block.hOutRows =
      straightRows(fused.hiddenResult, fused.hOutRows, outputs, first, rows);
  block.cCopyRows = straightCopies(fused.cellResult, outputs, first);
  block.hCopyRows = straightCopies(fused.hiddenResult, outputs, first);
  block.rows = rows;
  block.hidden = fused.hidden;
  std::copy(fused.offsets, fused.offsets + 4, block.offsets);
  if (fused.gemmFolded)
    block.gemm = &fused.gemm;
  lstmGateRows(block);
}

bool RegionInterpreter::canFoldGemmInto(uint32_t input, int64_t columns) const {
  const Impl &impl = *impl_;
  uint32_t numInputs = impl.step.region()->num_inputs();
  if (input >= numInputs || !impl.values[input].hasBatch ||
      impl.values[input].count != columns ||
      impl.values[input].dtype != cellpack::DType::F32 ||
      std::count(impl.results.begin(), impl.results.end(), input) != 0)
    return false;
  // The fused gates' sum reads it (and is the first op they cover), and
  // no other op does.
  const Impl::FusedGates *gates = nullptr;
  for (size_t index = 0; index < impl.ops.size(); ++index) {
    const PreparedOp &op = impl.ops[index];
    if (std::find(op.operands.begin(), op.operands.end(), input) ==
        op.operands.end())
      continue;
    int32_t fusion = impl.opFusion.empty() ? -1 : impl.opFusion[index];
    if (fusion < 0 || gates)
      return false;
    gates = &impl.fusedGates[static_cast<size_t>(fusion)];
  }
  return gates && !gates->gemmFolded && gates->b != kNone &&
         (gates->a == input) != (gates->b == input);
}

void RegionInterpreter::foldGemm(uint32_t input, const PackedMatrix *weights,
                                 float alpha, float beta, const float *bias) {
  for (Impl::FusedGates &gates : impl_->fusedGates) {
    if (gates.a != input && gates.b != input)
      continue;
    if (gates.b == input) // a sum is the same either way round
      std::swap(gates.a, gates.b);
    gates.gemmFolded = true;
    gates.gemm.weights = weights;
    gates.gemm.alpha = alpha;
    gates.gemm.beta = beta;
    gates.gemm.bias = bias;
    return;
  }
}

void RegionInterpreter::setGemmRows(const float *const *rows) {
  impl_->gemmRows = rows;
}

int RegionInterpreter::foldedGemmCount() const {
  return static_cast<int>(std::count_if(
      impl_->fusedGates.begin(), impl_->fusedGates.end(),
      [](const Impl::FusedGates &gates) { return gates.gemmFolded; }));
}

int32_t RegionInterpreter::Impl::straightResult(
    uint32_t id, const std::vector<size_t> &readers,
    const std::vector<size_t> &covered) const {
  if (std::count(results.begin(), results.end(), id) != 1 ||
      values[id].count > kStraightRowFloats)
    return -1;
  for (size_t reader : readers)
    if (std::find(covered.begin(), covered.end(), reader) == covered.end())
      return -1;
  auto j = std::find(results.begin(), results.end(), id) - results.begin();
  if (step.outputs()->Get(static_cast<uint32_t>(j))->dtype() !=
      cellpack::DType::F32)
    return -1;
  return static_cast<int32_t>(j);
}

float *const *RegionInterpreter::Impl::straightRows(
    int32_t result, std::vector<float *> &rowsOut,
    const std::vector<OutputView> &outputs, int64_t first, int64_t rows) {
  if (result < 0)
    return nullptr;
  const OutputView &output = outputs[static_cast<size_t>(result)];
  if (!output.rows) // no pool rows: through the block
    return nullptr;
  int64_t width = values[results[static_cast<size_t>(result)]].count;
  for (int64_t r = 0; r < rows; ++r)
    rowsOut[r] =
        static_cast<float *>(output.data) + output.rows[first + r] * width;
  storedAlready[static_cast<size_t>(result)] = 1;
  return rowsOut.data();
}

float *const *RegionInterpreter::Impl::straightCopies(
    int32_t result, const std::vector<OutputView> &outputs, int64_t first) {
  if (result < 0 || !storedAlready[static_cast<size_t>(result)])
    return nullptr; // through the block: copyRows copies it
  const OutputView &output = outputs[static_cast<size_t>(result)];
  if (!output.copyTo)
    return nullptr;
  copiedAlready[static_cast<size_t>(result)] = 1;
  return reinterpret_cast<float *const *>(output.copyTo + first);
}

int RegionInterpreter::fusedGateCount() const {
  return static_cast<int>(impl_->fusedGates.size());
}
