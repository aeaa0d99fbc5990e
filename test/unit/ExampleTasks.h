//===- ExampleTasks.h - Example cells against PyTorch -----------*- C++ -*-===//
//
// Shared by the tests that run example cells (through the region
// interpreter, or through the generated CUDA kernels on the CPU): for each
// example, every cell at every supported batch size the PyTorch reference
// cases fit (1, 3, 8 and 64 rows, so also fewer rows than the batch size).
// State pools are larger than the task, the task's rows are scattered over
// them, and every row the task must not touch is poisoned first and checked
// after. Outputs must match PyTorch within 1e-5 relative + 1e-6 absolute.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_EXAMPLETASKS_H
#define CELL_TEST_EXAMPLETASKS_H

#include "ProjectedReference.h"
#include "artifact/Artifact.h"

#include "artifact/ElementIO.h"
#include "backend/cpu/CpuTaskRunner.h"
#include "backend/cpu/RegionInterpreter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>

namespace cellc::testing {
using namespace cellrun;
using namespace cellrun::cpu;

constexpr uint8_t kPoison = 0xA7;

/// A state pool: `rows` rows of `rowBytes`, poisoned, and the pool rows the
/// task uses.
struct Pool {
  std::vector<uint8_t> bytes;
  std::vector<int32_t> taskRows;
  size_t rowBytes = 0;
};

inline size_t rowElements(const cellpack::TensorSpec &spec) {
  size_t count = 1;
  if (spec.row_shape())
    for (int64_t dim : *spec.row_shape())
      count *= static_cast<size_t>(dim);
  return count;
}

inline Pool makePool(const cellpack::TensorSpec &spec, int64_t taskRows,
                     int64_t poolRows, std::mt19937 &random) {
  Pool pool;
  pool.rowBytes = rowElements(spec) * elementSize(spec.dtype());
  pool.bytes.assign(pool.rowBytes * poolRows, kPoison);
  std::vector<int32_t> order(poolRows);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), random);
  pool.taskRows.assign(order.begin(), order.begin() + taskRows);
  return pool;
}

inline bool isPoisoned(const Pool &pool, int64_t row) {
  const uint8_t *begin = pool.bytes.data() + row * pool.rowBytes;
  return std::all_of(begin, begin + pool.rowBytes,
                     [](uint8_t b) { return b == kPoison; });
}

/// The pools of a task of `reference`'s rows: each input's rows scattered
/// over a pool of `poolRows` rows (the others poisoned), each output's pool
/// poisoned. False (with a failure) when the reference lacks an input or
/// its size is not the cell's.
inline bool makeTaskPools(const cellpack::CellType &cell,
                          const RefCase &reference, int64_t poolRows,
                          std::mt19937 &random, std::vector<Pool> &inputs,
                          std::vector<Pool> &outputs) {
  int64_t rows = reference.batch;
  for (const cellpack::TensorSpec *spec : *cell.inputs()) {
    const RefTensor *tensor = reference.find(spec->name()->str(), false);
    Pool pool = makePool(*spec, rows, poolRows, random);
    if (!tensor || tensor->data.size() != pool.rowBytes * rows) {
      ADD_FAILURE() << "no reference input " << spec->name()->str() << " of "
                    << rows << " rows";
      return false;
    }
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(pool.bytes.data() + pool.taskRows[r] * pool.rowBytes,
                  tensor->data.data() + r * pool.rowBytes, pool.rowBytes);
    inputs.push_back(std::move(pool));
  }
  for (const cellpack::TensorSpec *spec : *cell.outputs())
    outputs.push_back(makePool(*spec, rows, poolRows, random));
  return true;
}

/// What a task runner reads of each pool: its bytes and the task's rows.
inline std::vector<PoolView> poolViews(std::vector<Pool> &pools) {
  std::vector<PoolView> views;
  for (Pool &pool : pools)
    views.push_back({pool.bytes.data(), pool.taskRows.data()});
  return views;
}

inline void runCase(const cellpack::CellType &cell,
                    const cellpack::BatchPlan &plan, const RefCase &reference,
                    const KernelLauncher &launcher, std::mt19937 &random,
                    ThreadPool *pool = nullptr) {
  std::string where = cell.name()->str() + " at batch size " +
                      std::to_string(plan.batch_size()) + " with " +
                      std::to_string(reference.batch) + " rows";
  int64_t rows = reference.batch;
  int64_t poolRows = 2 * plan.batch_size() + 5;
  std::vector<Pool> inputs, outputs;
  if (!makeTaskPools(cell, reference, poolRows, random, inputs, outputs))
    return;
  std::vector<Pool> inputsBefore = inputs;

  auto runner = CpuTaskRunner::create(cell, plan, launcher, pool);
  ASSERT_TRUE(runner.ok()) << runner.status().toString();
  std::vector<PoolView> inViews = poolViews(inputs),
                        outViews = poolViews(outputs);
  Status status = runner.value()->run(rows, inViews, outViews);
  ASSERT_TRUE(status.isOk()) << where << ": " << status.toString();

  for (size_t i = 0; i < inputs.size(); ++i)
    EXPECT_EQ(inputs[i].bytes, inputsBefore[i].bytes)
        << where << ": input pool " << i << " changed";
  for (size_t j = 0; j < outputs.size(); ++j) {
    const cellpack::TensorSpec &spec = *cell.outputs()->Get(j);
    const RefTensor *want = reference.find(spec.name()->str(), true);
    ASSERT_NE(want, nullptr) << "no reference output " << spec.name()->str();
    const Pool &pool = outputs[j];
    size_t perRow = rowElements(spec);
    int mismatches = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (size_t e = 0; e < perRow && mismatches < 5; ++e) {
        int64_t at = pool.taskRows[r] * perRow + e;
        int64_t wantAt = r * perRow + e;
        if (want->dtype == 0) {
          float got = loadFloat(pool.bytes.data(), spec.dtype(), at);
          float expected = want->f32()[wantAt];
          if (!(std::fabs(got - expected) <=
                1e-5f * std::fabs(expected) + 1e-6f)) {
            ++mismatches;
            ADD_FAILURE() << where << ": " << spec.name()->str() << "[" << r
                          << "][" << e << "] = " << got << ", PyTorch "
                          << expected;
          }
        } else {
          int64_t got = loadInt(pool.bytes.data(), spec.dtype(), at);
          if (got != want->i64()[wantAt]) {
            ++mismatches;
            ADD_FAILURE() << where << ": " << spec.name()->str() << "[" << r
                          << "] = " << got << ", PyTorch "
                          << want->i64()[wantAt];
          }
        }
      }
    std::vector<bool> written(poolRows, false);
    for (int32_t row : pool.taskRows)
      written[row] = true;
    for (int64_t row = 0; row < poolRows; ++row)
      if (!written[row]) {
        EXPECT_TRUE(isPoisoned(pool, row))
            << where << ": output " << spec.name()->str() << " pool row " << row
            << " is not the task's but was written";
      }
  }
}

/// Where example `model` was built (CELL_EXAMPLES_BUILD_DIR/<model>) and
/// its artifact there; "<model>_step": its model-step.cellpack, the input
/// projection left in the step (model.cellpack has it hoisted).
struct ExampleFiles {
  std::string dir, artifact;
};
inline ExampleFiles exampleFiles(const std::string &model) {
  const std::string suffix = "_step";
  bool inStep =
      model.size() > suffix.size() &&
      model.compare(model.size() - suffix.size(), suffix.size(), suffix) == 0;
  std::string dir =
      std::string(CELL_EXAMPLES_BUILD_DIR) + "/" +
      (inStep ? model.substr(0, model.size() - suffix.size()) : model);
  return {dir, dir + (inStep ? "/model-step.cellpack" : "/model.cellpack")};
}

/// Checks every cell of example `model` (exampleFiles) and returns how many
/// tasks ran.
inline int checkExampleAgainstPyTorch(const std::string &model,
                                      const KernelLauncher &launcher = {},
                                      ThreadPool *pool = nullptr) {
  ExampleFiles files = exampleFiles(model);
  const std::string &dir = files.dir;
  auto artifact = loadArtifact(files.artifact);
  EXPECT_TRUE(artifact.ok()) << artifact.status().toString();
  if (!artifact.ok())
    return 0;
  std::mt19937 random(1234);
  int tasks = 0;
  for (const cellpack::CellType *cell : artifact.value()->cells()) {
    std::vector<RefCase> cases;
    std::string error;
    EXPECT_TRUE(referenceCasesFor(*artifact.value(), *cell, dir, cases, error))
        << error;
    EXPECT_FALSE(cases.empty());
    for (const RefCase &reference : cases)
      for (const cellpack::BatchPlan *plan : *cell->plans())
        if (plan->batch_size() >= reference.batch) {
          runCase(*cell, *plan, reference, launcher, random, pool);
          ++tasks;
        }
  }
  std::printf("%s: %d tasks checked against PyTorch\n", model.c_str(), tasks);
  return tasks;
}

/// The example's artifact (exampleFiles).
inline std::shared_ptr<const LoadedArtifact>
loadExample(const std::string &model) {
  auto artifact = loadArtifact(exampleFiles(model).artifact);
  EXPECT_TRUE(artifact.ok()) << artifact.status().toString();
  return artifact.ok() ? artifact.value() : nullptr;
}

/// The sum of `count` over the region interpreters of `model`'s kernel
/// steps: in every plan, or in each cell's largest only; -1 without the
/// model.
inline int
sumOverRegions(const std::string &model, bool largestPlanOnly,
               const std::function<int(RegionInterpreter &)> &count) {
  auto artifact = loadExample(model);
  if (!artifact)
    return -1;
  int sum = 0;
  for (const cellpack::CellType *cell : artifact->cells())
    for (uint32_t p = largestPlanOnly ? cell->plans()->size() - 1 : 0;
         p < cell->plans()->size(); ++p) {
      const cellpack::BatchPlan *plan = cell->plans()->Get(p);
      for (const cellpack::TaskStep *step : *plan->steps()) {
        const cellpack::KernelStep *kernel = step->step_as_KernelStep();
        if (!kernel || !kernel->region())
          continue;
        RegionOptions options;
        options.maxRows = plan->batch_size();
        auto interpreter = RegionInterpreter::create(*kernel, options);
        EXPECT_TRUE(interpreter.ok()) << interpreter.status().toString();
        if (interpreter.ok())
          sum += count(*interpreter.value());
      }
    }
  return sum;
}

/// The output pools of one task of `cell` at `plan` on `reference`'s
/// inputs, its rows scattered as `seed` draws them.
inline std::vector<std::vector<uint8_t>>
taskOutputs(const cellpack::CellType &cell, const cellpack::BatchPlan &plan,
            const RefCase &reference, uint32_t seed) {
  std::mt19937 random(seed);
  int64_t rows = reference.batch, poolRows = 2 * plan.batch_size() + 5;
  std::vector<Pool> inputs, outputs;
  if (!makeTaskPools(cell, reference, poolRows, random, inputs, outputs))
    return {};
  auto runner = CpuTaskRunner::create(cell, plan, {}, nullptr);
  EXPECT_TRUE(runner.ok()) << runner.status().toString();
  if (!runner.ok())
    return {};
  std::vector<PoolView> inViews = poolViews(inputs),
                        outViews = poolViews(outputs);
  Status status = runner.value()->run(rows, inViews, outViews);
  EXPECT_TRUE(status.isOk()) << status.toString();
  std::vector<std::vector<uint8_t>> result;
  for (Pool &pool : outputs)
    result.push_back(std::move(pool.bytes));
  return result;
}

/// Calls visit(cell, plan, reference, index, where) for every reference
/// case of the example `model` on every plan whose batch size holds its rows
/// (index counts the calls from 0; where names the case for messages);
/// returns the number of calls (0 when the example is not built).
template <typename Visit>
int forEachCaseAndPlan(const std::string &model, Visit visit) {
  auto artifact = loadExample(model);
  if (!artifact)
    return 0;
  std::string dir = exampleFiles(model).dir;
  int index = 0;
  for (const cellpack::CellType *cell : artifact->cells()) {
    std::vector<RefCase> cases;
    std::string error;
    EXPECT_TRUE(referenceCasesFor(*artifact, *cell, dir, cases, error))
        << error;
    for (const RefCase &reference : cases)
      for (const cellpack::BatchPlan *plan : *cell->plans()) {
        if (plan->batch_size() < reference.batch)
          continue;
        std::string where = model + ": cell " + cell->name()->str() +
                            ", batch size " +
                            std::to_string(plan->batch_size()) + ", " +
                            std::to_string(reference.batch) + " rows";
        visit(*cell, *plan, reference, index++, where);
      }
  }
  return index;
}

/// Runs every task of `model`'s reference cases twice, the second time with
/// the environment variable `off` set to "off" (a backend switch read when
/// a task runner is made), and expects the same output pools; the number
/// of tasks.
inline int sameOutputsWithSwitchOff(const std::string &model, const char *off) {
  return forEachCaseAndPlan(model, [&](const cellpack::CellType &cell,
                                       const cellpack::BatchPlan &plan,
                                       const RefCase &reference, int index,
                                       const std::string &where) {
    uint32_t seed = 77 + index;
    auto on = taskOutputs(cell, plan, reference, seed);
    setenv(off, "off", 1);
    auto without = taskOutputs(cell, plan, reference, seed);
    unsetenv(off);
    EXPECT_FALSE(on.empty());
    EXPECT_TRUE(on == without)
        << where << ": the outputs differ with " << off << "=off";
  });
}

/// The instruction sets up to the one in use (detectCpuIsa, which
/// CELLRUN_CPU_ISA holds to): the loops a test runs on each.
inline std::vector<CpuIsa> isasUpToTheOneInUse() {
  std::vector<CpuIsa> isas = {CpuIsa::Generic};
  if (detectCpuIsa() != CpuIsa::Generic)
    isas.push_back(CpuIsa::Avx2);
  if (detectCpuIsa() == CpuIsa::Avx512)
    isas.push_back(CpuIsa::Avx512);
  return isas;
}

/// The same bits as `want`, but that a NaN may carry another payload (which
/// of two NaN operands is passed on follows their order, and the compiler
/// may swap a product's or a sum's).
inline bool sameFloats(const float *got, const std::vector<float> &want) {
  for (size_t k = 0; k < want.size(); ++k)
    if (std::memcmp(&got[k], &want[k], sizeof(float)) != 0 &&
        !(std::isnan(got[k]) && std::isnan(want[k])))
      return false;
  return true;
}

} // namespace cellc::testing

#endif // CELL_TEST_EXAMPLETASKS_H
