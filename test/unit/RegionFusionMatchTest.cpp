//===- RegionFusionMatchTest.cpp - Which regions fuse LSTM or GRU gates ---===//
//
// Regions built here op by op: the LSTM step ONNX exports (with and without
// the gates' sum, the gates in another order, every product and the sum
// with its operands the other way round) must fuse and give the bits of
// the ops one by one over several blocks of rows (a NaN where they have a
// NaN); regions where a value between the ops is also read elsewhere,
// is a result of the region, or where c is made after the step begins must
// not fuse (and still run). The same for a GRU's step (both Splits' parts
// in any order, operands either way round, h - n or n - h).
//
//===----------------------------------------------------------------------===//
#include "backend/cpu/RegionInterpreter.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

namespace {
using namespace cellrun;
using namespace cellrun::cpu;
using namespace cellpack;

constexpr int64_t kHidden = 20; // a partial vector on AVX2 and AVX-512
constexpr int64_t kRows = 300;  // several of the interpreter's blocks

struct RegionOp {
  OpCode code;
  std::vector<uint32_t> operands, results;
};

/// A region over values of `widths` floats a row (the first `inputs` of
/// them the step's inputs), its ops and its results.
struct RegionSpec {
  std::vector<int64_t> widths;
  uint32_t inputs = 0;
  std::vector<RegionOp> ops;
  std::vector<uint32_t> results;
};

/// The kernel step of `spec`, finished in `fbb`.
const KernelStep *buildStep(flatbuffers::FlatBufferBuilder &fbb,
                            const RegionSpec &spec) {
  using flatbuffers::Offset;
  auto ref = [&](ValueKind kind, uint32_t index, int64_t width) {
    std::vector<int64_t> shape = {kRows, width};
    return CreateValueRefDirect(fbb, kind, index, 0, DType::F32, &shape);
  };
  std::vector<Offset<ValueRef>> inputs, outputs;
  std::vector<Access> inputAccess, outputAccess;
  for (uint32_t id = 0; id < spec.inputs; ++id) {
    inputs.push_back(ref(ValueKind::CellInput, id, spec.widths[id]));
    inputAccess.push_back(Access::Gather);
  }
  for (size_t j = 0; j < spec.results.size(); ++j) {
    outputs.push_back(ref(ValueKind::CellOutput, static_cast<uint32_t>(j),
                          spec.widths[spec.results[j]]));
    outputAccess.push_back(Access::Scatter);
  }
  std::vector<Offset<PortableValue>> values;
  for (int64_t width : spec.widths) {
    std::vector<int64_t> shape = {kRows, width};
    values.push_back(CreatePortableValueDirect(fbb, DType::F32, &shape));
  }
  std::vector<Offset<PortableOp>> ops;
  for (const RegionOp &op : spec.ops)
    ops.push_back(CreatePortableOpDirect(fbb, op.code, &op.operands,
                                         &op.results,
                                         op.code == OpCode::Split ? 1 : 0));
  auto region = CreatePortableRegionDirect(fbb, &values, spec.inputs, &ops,
                                           &spec.results);
  auto step = CreateKernelStepDirect(
      fbb, "lstm_gates", KernelShape::Elementwise, kHidden, 256, nullptr,
      &inputs, &inputAccess, &outputs, &outputAccess, region);
  fbb.Finish(step);
  return flatbuffers::GetRoot<KernelStep>(fbb.GetBufferPointer());
}

/// The LSTM step: gates = x + y (or the input gates itself), split into
/// parts in `order` (the part of input, forget, candidate, output),
/// products and the sum with their operands swapped where `swapped` says.
RegionSpec lstmStep(bool summed, std::array<int, 4> order = {0, 1, 2, 3},
                    bool swapped = false) {
  RegionSpec spec;
  uint32_t next = 0;
  auto value = [&](int64_t width) {
    spec.widths.push_back(width);
    return next++;
  };
  uint32_t x = value(4 * kHidden), y = summed ? value(4 * kHidden) : 0;
  uint32_t c = value(kHidden);
  spec.inputs = next;
  uint32_t gates = x;
  if (summed) {
    gates = value(4 * kHidden);
    spec.ops.push_back({OpCode::Add, {x, y}, {gates}});
  }
  uint32_t parts[4];
  for (uint32_t &part : parts)
    part = value(kHidden);
  spec.ops.push_back(
      {OpCode::Split, {gates}, {parts[0], parts[1], parts[2], parts[3]}});
  uint32_t act[4]; // per gate: input, forget, candidate, output
  for (int gate = 0; gate < 4; ++gate) {
    act[gate] = value(kHidden);
    spec.ops.push_back({gate == 2 ? OpCode::Tanh : OpCode::Sigmoid,
                        {parts[order[gate]]},
                        {act[gate]}});
  }
  auto pair = [&](uint32_t a, uint32_t b) {
    return swapped ? std::vector<uint32_t>{b, a} : std::vector<uint32_t>{a, b};
  };
  uint32_t kept = value(kHidden), added = value(kHidden), cell = value(kHidden);
  uint32_t squashed = value(kHidden), hidden = value(kHidden);
  spec.ops.push_back({OpCode::Mul, pair(act[1], c), {kept}});
  spec.ops.push_back({OpCode::Mul, pair(act[0], act[2]), {added}});
  spec.ops.push_back({OpCode::Add, pair(kept, added), {cell}});
  spec.ops.push_back({OpCode::Tanh, {cell}, {squashed}});
  spec.ops.push_back({OpCode::Mul, pair(act[3], squashed), {hidden}});
  spec.results = {cell, hidden};
  return spec;
}

struct Run {
  int fused = -1, fusedGru = -1;
  std::vector<std::vector<float>> outputs;
};

/// Runs `spec` on random inputs (with NaNs of two payloads), gates fused
/// unless `off`.
Run runRegion(const RegionSpec &spec, bool off) {
  if (off)
    setenv("CELLRUN_CPU_FUSED_GATES", "off", 1);
  flatbuffers::FlatBufferBuilder fbb;
  const KernelStep *step = buildStep(fbb, spec);
  RegionOptions options;
  options.maxRows = kRows;
  auto interpreter = RegionInterpreter::create(*step, options);
  unsetenv("CELLRUN_CPU_FUSED_GATES");
  Run run;
  EXPECT_TRUE(interpreter.ok()) << interpreter.status().toString();
  if (!interpreter.ok())
    return run;
  run.fused = interpreter.value()->fusedGateCount();
  run.fusedGru = interpreter.value()->fusedGruCount();
  std::mt19937 random(17);
  std::uniform_real_distribution<float> uniform(-9.0f, 9.0f);
  float nanA, nanB;
  uint32_t bitsA = 0x7fc01234, bitsB = 0xffc05678;
  std::memcpy(&nanA, &bitsA, 4);
  std::memcpy(&nanB, &bitsB, 4);
  std::vector<std::vector<float>> inputData;
  std::vector<std::vector<int32_t>> rowLists;
  std::vector<InputView> inputs;
  for (uint32_t id = 0; id < spec.inputs; ++id) {
    int64_t width = spec.widths[id];
    std::vector<float> data(kRows * width);
    for (float &x : data)
      x = uniform(random);
    // Row 5, column 2 of every gate (and of c): NaNs of two payloads, so
    // that products and sums meet a NaN on both sides.
    for (int64_t at = 2; at < width; at += kHidden)
      data[5 * width + at] = id == 0 ? nanA : nanB;
    inputData.push_back(std::move(data));
  }
  std::vector<int32_t> rows(kRows);
  for (int64_t r = 0; r < kRows; ++r)
    rows[r] = static_cast<int32_t>((r * 7) % kRows); // scattered rows
  for (uint32_t id = 0; id < spec.inputs; ++id)
    inputs.push_back({inputData[id].data(), rows.data()});
  std::vector<OutputView> outputs;
  run.outputs.resize(spec.results.size());
  for (size_t j = 0; j < spec.results.size(); ++j) {
    run.outputs[j].assign(kRows * spec.widths[spec.results[j]], -3.0f);
    outputs.push_back({run.outputs[j].data(), rows.data()});
  }
  Status status = interpreter.value()->run(kRows, inputs, outputs);
  EXPECT_TRUE(status.isOk()) << status.toString();
  return run;
}

/// The same bits, but that a NaN may carry another NaN's payload: which of
/// two NaN operands an instruction passes on depends on their order, and
/// the compiler may swap the operands of a product or a sum (it is the same
/// number either way).
bool sameBits(const Run &a, const Run &b) {
  if (a.outputs.size() != b.outputs.size())
    return false;
  for (size_t j = 0; j < a.outputs.size(); ++j) {
    if (a.outputs[j].size() != b.outputs[j].size())
      return false;
    for (size_t k = 0; k < a.outputs[j].size(); ++k) {
      float x = a.outputs[j][k], y = b.outputs[j][k];
      if (std::memcmp(&x, &y, sizeof(float)) != 0 &&
          !(std::isnan(x) && std::isnan(y)))
        return false;
    }
  }
  return true;
}

void expectFusedWithTheOpsBits(const RegionSpec &spec, const char *what) {
  Run fused = runRegion(spec, false), separate = runRegion(spec, true);
  EXPECT_EQ(fused.fused, 1) << what;
  EXPECT_EQ(separate.fused, 0) << what;
  EXPECT_TRUE(sameBits(fused, separate)) << what;
  size_t nans = 0;
  for (float x : fused.outputs[1])
    nans += std::isnan(x);
  EXPECT_GT(nans, 0u) << what << ": the NaNs reach h'";
}

TEST(RegionFusionMatchTest, TheLstmStepFusesWithTheOpsBits) {
  expectFusedWithTheOpsBits(lstmStep(true), "summed gates");
  expectFusedWithTheOpsBits(lstmStep(false), "gates as an input");
  expectFusedWithTheOpsBits(lstmStep(true, {2, 0, 3, 1}), "gates reordered");
  expectFusedWithTheOpsBits(lstmStep(true, {3, 2, 1, 0}, true),
                            "operands swapped");
  expectFusedWithTheOpsBits(lstmStep(false, {1, 3, 0, 2}, true),
                            "unsummed, swapped");
}

void expectNotFused(const RegionSpec &spec, const char *what) {
  Run fused = runRegion(spec, false), separate = runRegion(spec, true);
  EXPECT_EQ(fused.fused, 0) << what;
  EXPECT_TRUE(sameBits(fused, separate)) << what;
}

TEST(RegionFusionMatchTest, StepsWhoseValuesAreNeededElsewhereDoNotFuse) {
  {
    // The forget gate's sigmoid is also a result of the region.
    RegionSpec spec = lstmStep(true);
    uint32_t forget = spec.ops[3].results[0];
    spec.results.push_back(forget);
    expectNotFused(spec, "a gate is a result");
  }
  {
    // i * g is read by another op too.
    RegionSpec spec = lstmStep(true);
    uint32_t added = spec.ops[7].results[0];
    uint32_t extra = static_cast<uint32_t>(spec.widths.size());
    spec.widths.push_back(kHidden);
    spec.ops.push_back({OpCode::Add, {added, added}, {extra}});
    spec.results.push_back(extra);
    expectNotFused(spec, "a product read twice");
  }
  {
    // c is made by an op after the step's first op.
    RegionSpec spec = lstmStep(true);
    uint32_t cIn = 2, made = static_cast<uint32_t>(spec.widths.size());
    spec.widths.push_back(kHidden);
    spec.ops.insert(spec.ops.begin() + 2, {OpCode::Mul, {cIn, cIn}, {made}});
    for (RegionOp &op : spec.ops)
      if (op.code == OpCode::Mul && op.operands[1] == cIn &&
          op.operands[0] != cIn)
        op.operands[1] = made;
    expectNotFused(spec, "c made after the step begins");
  }
  {
    // Two sigmoids where the candidate's tanh belongs: no LSTM step.
    RegionSpec spec = lstmStep(true);
    spec.ops[4].code = OpCode::Sigmoid;
    expectNotFused(spec, "no candidate tanh");
  }
}

/// The GRU step: a and b split three ways, their parts in `aOrder` and
/// `bOrder` (the part of reset, update, new), the Adds' and Muls' operands
/// swapped where `swapped` says, h - n (or n - h without `hFirst`).
RegionSpec gruStep(std::array<int, 3> aOrder = {0, 1, 2},
                   std::array<int, 3> bOrder = {0, 1, 2}, bool swapped = false,
                   bool hFirst = true) {
  RegionSpec spec;
  uint32_t next = 0;
  auto value = [&](int64_t width) {
    spec.widths.push_back(width);
    return next++;
  };
  uint32_t a = value(3 * kHidden), b = value(3 * kHidden), h = value(kHidden);
  spec.inputs = next;
  uint32_t aParts[3], bParts[3];
  for (uint32_t &part : aParts)
    part = value(kHidden);
  for (uint32_t &part : bParts)
    part = value(kHidden);
  spec.ops.push_back({OpCode::Split, {a}, {aParts[0], aParts[1], aParts[2]}});
  spec.ops.push_back({OpCode::Split, {b}, {bParts[0], bParts[1], bParts[2]}});
  auto pair = [&](uint32_t x, uint32_t y) {
    return swapped ? std::vector<uint32_t>{y, x} : std::vector<uint32_t>{x, y};
  };
  uint32_t sumR = value(kHidden), reset = value(kHidden);
  uint32_t sumZ = value(kHidden), update = value(kHidden);
  spec.ops.push_back(
      {OpCode::Add, pair(bParts[bOrder[0]], aParts[aOrder[0]]), {sumR}});
  spec.ops.push_back({OpCode::Sigmoid, {sumR}, {reset}});
  spec.ops.push_back(
      {OpCode::Add, pair(bParts[bOrder[1]], aParts[aOrder[1]]), {sumZ}});
  spec.ops.push_back({OpCode::Sigmoid, {sumZ}, {update}});
  uint32_t product = value(kHidden), sumN = value(kHidden), n = value(kHidden);
  spec.ops.push_back({OpCode::Mul, pair(bParts[bOrder[2]], reset), {product}});
  spec.ops.push_back({OpCode::Add, pair(aParts[aOrder[2]], product), {sumN}});
  spec.ops.push_back({OpCode::Tanh, {sumN}, {n}});
  uint32_t difference = value(kHidden), scaled = value(kHidden);
  uint32_t out = value(kHidden);
  spec.ops.push_back(
      {OpCode::Sub,
       hFirst ? std::vector<uint32_t>{h, n} : std::vector<uint32_t>{n, h},
       {difference}});
  spec.ops.push_back({OpCode::Mul, pair(difference, update), {scaled}});
  spec.ops.push_back({OpCode::Add, pair(scaled, n), {out}});
  spec.results = {out};
  return spec;
}

void expectGruFusedWithTheOpsBits(const RegionSpec &spec, const char *what) {
  Run fused = runRegion(spec, false), separate = runRegion(spec, true);
  EXPECT_EQ(fused.fusedGru, 1) << what;
  EXPECT_EQ(fused.fused, 0) << what;
  EXPECT_EQ(separate.fusedGru, 0) << what;
  EXPECT_TRUE(sameBits(fused, separate)) << what;
  size_t nans = 0;
  for (float x : fused.outputs[0])
    nans += std::isnan(x);
  EXPECT_GT(nans, 0u) << what << ": the NaNs reach h'";
}

TEST(RegionFusionMatchTest, TheGruStepFusesWithTheOpsBits) {
  expectGruFusedWithTheOpsBits(gruStep(), "as exported");
  expectGruFusedWithTheOpsBits(gruStep({2, 0, 1}, {1, 2, 0}),
                               "parts reordered");
  expectGruFusedWithTheOpsBits(gruStep({0, 1, 2}, {0, 1, 2}, true),
                               "operands swapped");
  expectGruFusedWithTheOpsBits(gruStep({1, 0, 2}, {2, 1, 0}, true, false),
                               "n - h");
  // h' read by another op of the region: fused, stored in the block.
  RegionSpec read = gruStep();
  uint32_t out = read.results[0],
           extra = static_cast<uint32_t>(read.widths.size());
  read.widths.push_back(kHidden);
  read.ops.push_back({OpCode::Add, {out, out}, {extra}});
  read.results.push_back(extra);
  expectGruFusedWithTheOpsBits(read, "h' read by another op");
}

void expectGruNotFused(const RegionSpec &spec, const char *what) {
  Run fused = runRegion(spec, false), separate = runRegion(spec, true);
  EXPECT_EQ(fused.fusedGru, 0) << what;
  EXPECT_TRUE(sameBits(fused, separate)) << what;
}

TEST(RegionFusionMatchTest, GruStepsWhoseValuesAreNeededElsewhereDoNotFuse) {
  {
    // n is also a result of the region.
    RegionSpec spec = gruStep();
    spec.results.push_back(spec.ops[8].results[0]);
    expectGruNotFused(spec, "n is a result");
  }
  {
    // The reset gate is read by another op too.
    RegionSpec spec = gruStep();
    uint32_t reset = spec.ops[3].results[0];
    uint32_t extra = static_cast<uint32_t>(spec.widths.size());
    spec.widths.push_back(kHidden);
    spec.ops.push_back({OpCode::Add, {reset, reset}, {extra}});
    spec.results.push_back(extra);
    expectGruNotFused(spec, "the reset gate read twice");
  }
  {
    // h is made by an op after the step's first op.
    RegionSpec spec = gruStep();
    uint32_t hIn = 2, made = static_cast<uint32_t>(spec.widths.size());
    spec.widths.push_back(kHidden);
    spec.ops.insert(spec.ops.begin() + 2, {OpCode::Mul, {hIn, hIn}, {made}});
    for (RegionOp &op : spec.ops)
      if (op.code == OpCode::Sub)
        op.operands[0] = made;
    expectGruNotFused(spec, "h made after the step begins");
  }
  {
    // The candidate through a sigmoid: no GRU step.
    RegionSpec spec = gruStep();
    spec.ops[8].code = OpCode::Sigmoid;
    expectGruNotFused(spec, "no candidate tanh");
  }
  {
    // The reset gate sums two parts of the same split.
    RegionSpec spec = gruStep();
    spec.ops[2].operands = {spec.ops[0].results[0], spec.ops[0].results[1]};
    expectGruNotFused(spec, "a gate of one split's parts");
  }
}

} // namespace
