//===- GemmInGatesTest.cpp - An LSTM step's GEMM inside its gates' loop ---===//
//
// A narrow LSTM's GEMM step may run inside the fused gates' loop
// (LstmGateGemm.cpp, CpuTaskFolds.cpp). The loop must give the bits of the
// GEMM (packedGemmGathered) followed by the gates on each instruction set,
// whatever the width, depth, rows, epilogue and where the results go; the
// task runner must fold the hidden-16 LSTM's GEMM steps on AVX-512 and AVX2
// (and only narrow ones) and give the bits it gives with the fusion off.
//
//===----------------------------------------------------------------------===//
#include "ExampleTasks.h"

#include "backend/cpu/LstmGates.h"
#include "backend/cpu/PackedGemm.h"

#include <cstdlib>

namespace {
using namespace cellc::testing;

std::vector<float> randomFloats(size_t count, std::mt19937 &random,
                                float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(count);
  for (float &value : values)
    value = normal(random);
  return values;
}

struct Epilogue {
  float alpha, beta;
  bool bias;
};

TEST(LstmGateGemmTest, EveryInstructionSetGivesTheGemmThenTheGatesBits) {
  std::mt19937 random(11);
  int cases = 0;
  for (int64_t hidden : {4, 8, 12, 16, 20, 24, 28, 32}) // 1-8 panels
    for (int64_t depth : {1, 7, 16, 33, 256})
      for (int64_t rows : {1, 3, 5, 16, 17, 40})
        for (Epilogue epilogue :
             {Epilogue{1.0f, 1.0f, true}, Epilogue{1.0f, 0.0f, false},
              Epilogue{0.5f, 2.0f, true}, Epilogue{0.75f, 0.0f, false}})
          for (bool intoRows : {false, true}) {
            int64_t n = 4 * hidden;
            std::vector<float> weights = randomFloats(depth * n, random, 0.4f);
            PackedMatrix packed(weights.data(), depth, n, false);
            std::vector<float> bias = randomFloats(n, random, 1.0f);
            std::vector<float> a = randomFloats(rows * depth, random, 1.0f);
            std::vector<float> b = randomFloats(rows * n, random, 2.0f);
            std::vector<float> c = randomFloats(rows * hidden, random, 3.0f);
            std::vector<const float *> aRows, bRows, cRows;
            for (int64_t r = rows; r-- > 0;) { // rows in reverse: scattered
              aRows.push_back(a.data() + r * depth);
              bRows.push_back(b.data() + r * n);
              cRows.push_back(c.data() + r * hidden);
            }
            for (CpuIsa isa : isasUpToTheOneInUse()) {
              // The GEMM step, then the gates over its rows, on this ISA (the
              // portable GEMM multiplies and adds apart: its own bits).
              GemmEpilogue gemmEpilogue;
              gemmEpilogue.alpha = epilogue.alpha;
              gemmEpilogue.beta = epilogue.beta;
              gemmEpilogue.bias = epilogue.bias ? bias.data() : nullptr;
              std::vector<float> d(rows * n);
              packedGemmGathered(aRows.data(), rows, packed, gemmEpilogue,
                                 d.data(), n, nullptr, isa);
              std::vector<const float *> dRows;
              for (int64_t r = 0; r < rows; ++r)
                dRows.push_back(d.data() + r * n);
              LstmGateRows block;
              block.a = dRows.data();
              block.b = bRows.data();
              block.c = cRows.data();
              block.rows = rows;
              block.hidden = hidden;
              int64_t order[4] = {2, 0, 3, 1}; // gates in another order
              for (int g = 0; g < 4; ++g)
                block.offsets[g] = order[g] * hidden;
              std::vector<float> wantC(rows * hidden), wantH(rows * hidden);
              block.cOut = wantC.data();
              block.hOut = wantH.data();
              lstmGateRows(block, isa);
              GateGemm gemm;
              gemm.rows = aRows.data();
              gemm.weights = &packed;
              gemm.alpha = epilogue.alpha;
              gemm.beta = epilogue.beta;
              gemm.bias = epilogue.bias ? bias.data() : nullptr;
              LstmGateRows fused = block;
              fused.a = nullptr;
              fused.gemm = &gemm;
              std::vector<float> gotC(rows * hidden, -7.0f),
                  gotH(rows * hidden, -7.0f);
              std::vector<float *> cOutRows, hOutRows;
              for (int64_t r = 0; r < rows; ++r) {
                cOutRows.push_back(gotC.data() + r * hidden);
                hOutRows.push_back(gotH.data() + r * hidden);
              }
              fused.cOut = intoRows ? nullptr : gotC.data();
              fused.hOut = intoRows ? nullptr : gotH.data();
              fused.cOutRows = intoRows ? cOutRows.data() : nullptr;
              fused.hOutRows = intoRows ? hOutRows.data() : nullptr;
              lstmGateRows(fused, isa);
              std::string where = std::string(cpuIsaName(isa)) + ", hidden " +
                                  std::to_string(hidden) + ", depth " +
                                  std::to_string(depth) + ", " +
                                  std::to_string(rows) + " rows, alpha " +
                                  std::to_string(epilogue.alpha) +
                                  (epilogue.bias ? ", a bias" : "") +
                                  (intoRows ? ", into rows" : "");
              ASSERT_TRUE(sameFloats(gotC.data(), wantC)) << where << ": c'";
              ASSERT_TRUE(sameFloats(gotH.data(), wantH)) << where << ": h'";
              ++cases;
            }
          }
  EXPECT_GE(cases, 1280);
}

/// Random inputs for every row of a task's input pools (tokens below the
/// vocabulary of 1000, states of both signs), output pools poisoned.
void fillTask(const cellpack::CellType &cell, int64_t rows, int64_t poolRows,
              std::mt19937 &random, std::vector<Pool> &inputs,
              std::vector<Pool> &outputs) {
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::uniform_int_distribution<int64_t> token(0, 999);
  for (const cellpack::TensorSpec *spec : *cell.inputs()) {
    Pool pool = makePool(*spec, rows, poolRows, random);
    for (int32_t row : pool.taskRows) {
      uint8_t *at = pool.bytes.data() + row * pool.rowBytes;
      for (size_t e = 0; e < rowElements(*spec); ++e) {
        if (spec->dtype() == cellpack::DType::I64) {
          int64_t value = token(random);
          std::memcpy(at + e * sizeof(int64_t), &value, sizeof(value));
        } else {
          float value = normal(random);
          std::memcpy(at + e * sizeof(float), &value, sizeof(value));
        }
      }
    }
    inputs.push_back(std::move(pool));
  }
  for (const cellpack::TensorSpec *spec : *cell.outputs())
    outputs.push_back(makePool(*spec, rows, poolRows, random));
}

TEST(GemmInGatesTest, TheHiddenSixteenLstmsGemmsRunInTheGatesWithTheSameBits) {
  auto artifact = loadArtifact(std::string(CELL_EXAMPLES_BUILD_DIR) +
                               "/lstm/tiny-fp32.cellpack");
  ASSERT_TRUE(artifact.ok()) << artifact.status().toString();
  const cellpack::CellType &cell = *artifact.value()->cells().front();
  int folded = 0, gemmSteps = 0;
  ThreadPool workers(2);
  ASSERT_EQ(cell.inputs()->Get(1)->name()->str(), "h");
  for (const cellpack::BatchPlan *plan : *cell.plans()) {
    for (const cellpack::TaskStep *step : *plan->steps())
      gemmSteps += step->step_as_GemmStep() != nullptr;
    int64_t batch = plan->batch_size();
    for (int64_t rows : {batch, std::max<int64_t>(1, batch / 2 - 1)}) {
      std::mt19937 random(static_cast<uint32_t>(batch * 7 + rows));
      std::vector<Pool> inputs, outputs;
      fillTask(cell, rows, 2 * batch + 5, random, inputs, outputs);
      std::vector<Pool> outputsOff = outputs, outputsPool = outputs;
      std::vector<PoolView> in = poolViews(inputs);
      auto runner = CpuTaskRunner::create(cell, *plan);
      ASSERT_TRUE(runner.ok()) << runner.status().toString();
      if (rows == batch)
        folded += runner.value()->gemmsInGates();
      std::vector<PoolView> out = poolViews(outputs);
      ASSERT_TRUE(runner.value()->run(rows, in, out).isOk());
      // With workers sharing the rows (each its own interpreter), and the
      // state h read where its rows lie rather than through the pool.
      auto shared = CpuTaskRunner::create(cell, *plan, {}, &workers);
      ASSERT_TRUE(shared.ok()) << shared.status().toString();
      EXPECT_EQ(shared.value()->gemmsInGates(), runner.value()->gemmsInGates());
      std::vector<PoolView> inPlace = in;
      std::vector<const void *> hRows;
      ASSERT_TRUE(shared.value()->readsInPlace(1)) << "batch size " << batch;
      for (int64_t r = 0; r < rows; ++r)
        hRows.push_back(inputs[1].bytes.data() +
                        inputs[1].taskRows[r] * inputs[1].rowBytes);
      inPlace[1] = PoolView{nullptr, nullptr, hRows.data()};
      std::vector<PoolView> outPool = poolViews(outputsPool);
      ASSERT_TRUE(shared.value()->run(rows, inPlace, outPool).isOk());
      setenv("CELLRUN_CPU_FUSED_GATES", "off", 1);
      auto unfused = CpuTaskRunner::create(cell, *plan);
      unsetenv("CELLRUN_CPU_FUSED_GATES");
      ASSERT_TRUE(unfused.ok()) << unfused.status().toString();
      EXPECT_EQ(unfused.value()->gemmsInGates(), 0);
      std::vector<PoolView> outOff = poolViews(outputsOff);
      ASSERT_TRUE(unfused.value()->run(rows, in, outOff).isOk());
      for (size_t j = 0; j < outputs.size(); ++j) {
        EXPECT_TRUE(outputs[j].bytes == outputsOff[j].bytes)
            << "batch size " << batch << ", " << rows << " rows: output " << j
            << " differs from the unfused run's";
        EXPECT_TRUE(outputsPool[j].bytes == outputsOff[j].bytes)
            << "batch size " << batch << ", " << rows << " rows: output " << j
            << " differs with two workers and h read in place";
      }
    }
  }
  // The plans past the one-kernel step's batch sizes have a GEMM step each:
  // all of them run in the gates where the loop's fast form runs.
  ASSERT_GT(gemmSteps, 0);
  CpuIsa isa = detectCpuIsa();
  EXPECT_EQ(folded,
            isa == CpuIsa::Avx512 || isa == CpuIsa::Avx2 ? gemmSteps : 0);
}

TEST(GemmInGatesTest, WideRowsKeepTheirGemmStep) {
  // The hidden-64 example's gates are 256 floats a row: wider than the
  // loop holds, so its GEMM steps run as they are.
  auto artifact = loadExample("lstm");
  ASSERT_TRUE(artifact);
  int gemmSteps = 0, folded = 0;
  for (const cellpack::BatchPlan *plan : *artifact->cells().front()->plans()) {
    for (const cellpack::TaskStep *step : *plan->steps())
      gemmSteps += step->step_as_GemmStep() != nullptr;
    auto runner = CpuTaskRunner::create(*artifact->cells().front(), *plan);
    ASSERT_TRUE(runner.ok()) << runner.status().toString();
    folded += runner.value()->gemmsInGates();
  }
  EXPECT_GT(gemmSteps, 0);
  EXPECT_EQ(folded, 0);
}
} // namespace
