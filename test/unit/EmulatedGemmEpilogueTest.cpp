//===- EmulatedGemmEpilogueTest.cpp - A GEMM and its epilogue on the CPU --===//
//
// The GEMM-and-epilogue kernels cellc writes (GemmEpilogueWriter.h), run on
// the CPU through their emulation launchers: for the LSTM (its gates, four
// segments), the GRU (three, which also read the input GEMM's result) and
// the LN-LSTM (a GELU after its last GEMM, one segment, written to the
// workspace) compiled with every GEMM apart from its kernels
// (model-unfused.cellpack, and the same source built as C++), each kernel
// step of a plan that lists such a kernel runs with the GEMM before it,
// once apart (the GEMM on the skinny kernel that gathers up to 16 rows)
// and once in the epilogue kernel, over the same pools and a workspace of
// random values. The state rows and the workspace written must be the same
// bits (the GEMM adds in the same order either way, and the step's
// expressions are the same), for one k split and three, with A dense and,
// where the step before the GEMM only gathers A's rows, with A's rows read
// where they lie in the pool (as the CUDA backend does), for the plan's
// rows and for a task of one row fewer, whose padding row is left alone.
//
//===----------------------------------------------------------------------===//
#include "artifact/Artifact.h"
#include "artifact/ElementIO.h"
#include "artifact/GatherFolds.h"

#include "KernelGrid.h"
#include "SkinnyGemmKernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace cellrun;

namespace {

using Launch = void (*)(void **args, unsigned grid, unsigned block);

std::string examplesDir() {
  const char *override = std::getenv("CELL_EXAMPLES_BUILD_DIR");
  return override ? override : CELL_EXAMPLES_BUILD_DIR;
}

int64_t elementCount(const cellpack::ValueRef &ref) {
  int64_t count = 1;
  for (int64_t dim : *ref.shape())
    count *= dim;
  return count;
}

/// One cell's plan run on the emulated kernels over pools of its own.
class PlanRun {
public:
  PlanRun(void *library, const cellpack::CellType &cell,
          const cellpack::BatchPlan &plan, std::mt19937 &random)
      : library_(library), cell_(cell), plan_(plan) {
    uint32_t batch = plan.batch_size();
    poolRows_ = 3 * batch + 5;
    // Each cell input and output in a pool of its own: random values (token
    // ids 0..9), its task rows spread over the pool, every other row left
    // for the test to see untouched.
    auto makePools = [&](const auto *specs, std::vector<Pool> &pools) {
      for (const cellpack::TensorSpec *spec : *specs) {
        Pool pool;
        pool.rowBytes = cpu::rowBytes(*spec);
        pool.bytes.resize(poolRows_ * pool.rowBytes);
        if (spec->dtype() == cellpack::DType::I64) {
          auto *tokens = reinterpret_cast<int64_t *>(pool.bytes.data());
          for (size_t i = 0; i < pool.bytes.size() / 8; ++i)
            tokens[i] = static_cast<int64_t>(random() % 10);
        } else {
          std::uniform_real_distribution<float> value(-1.0f, 1.0f);
          auto *floats = reinterpret_cast<float *>(pool.bytes.data());
          for (size_t i = 0; i < pool.bytes.size() / 4; ++i)
            floats[i] = value(random);
        }
        std::vector<int32_t> order(poolRows_);
        for (uint32_t r = 0; r < poolRows_; ++r)
          order[r] = static_cast<int32_t>(r);
        std::shuffle(order.begin(), order.end(), random);
        pool.rows.assign(order.begin(), order.begin() + batch);
        pools.push_back(std::move(pool));
      }
    };
    makePools(cell.inputs(), inputs_);
    makePools(cell.outputs(), outputs_);
    for (Pool &output : outputs_) // NaN where nothing is written
      std::fill(
          reinterpret_cast<float *>(output.bytes.data()),
          reinterpret_cast<float *>(output.bytes.data() + output.bytes.size()),
          NAN);
    initialOutputs_ = outputs_;
  }

  /// Runs kernel step `step` and the GEMM step before it for `rows` rows,
  /// the GEMM cut into `splits` k slices, apart or (`fused`) in the step's
  /// GEMM-and-epilogue kernel, over the same inputs: the pools, and a
  /// workspace of values in [-1, 1) (what the steps before would have
  /// left; the same on every run). With `gathered`, when the step before
  /// the GEMM only gathers A's rows (gatherFolds), the GEMM reads them in
  /// the pool. Returns the output pools, then the workspace.
  std::vector<std::vector<uint8_t>> run(int64_t rows, int splits, int step,
                                        bool fused, bool gathered) {
    outputs_ = initialOutputs_;
    std::mt19937 random(plan_.batch_size());
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    workspace_.resize(plan_.workspace_bytes() / 4 + 16);
    for (float &v : workspace_)
      v = value(random);
    const GatherFold *fold = nullptr;
    if (gathered)
      for (const GatherFold &f : folds_)
        if (f.gemmStep + 1 == size_t(step))
          fold = &f;
    const cellpack::GemmStep &gemm =
        *plan_.steps()->Get(step - 1)->step_as_GemmStep();
    const cellpack::KernelStep &kernel =
        *plan_.steps()->Get(step)->step_as_KernelStep();
    if (fused) {
      runEpilogue(gemm, kernel, rows, splits, fold);
    } else {
      runGemm(gemm, rows, splits, fold);
      std::vector<void *> args;
      std::vector<const void *> pointers;
      int rowCount = 0;
      kernelArguments(kernel, rows, pointers, args, rowCount);
      unsigned grid =
          static_cast<unsigned>(cellpack::kernelGridSize(kernel, rows));
      symbol(kernel.name()->str())(args.data(), grid, kernel.block_size());
    }
    std::vector<std::vector<uint8_t>> result;
    for (const Pool &output : outputs_)
      result.push_back(output.bytes);
    const auto *workspace =
        reinterpret_cast<const uint8_t *>(workspace_.data());
    result.emplace_back(workspace, workspace + plan_.workspace_bytes());
    return result;
  }

  /// Whether the GEMM before kernel step `step` can read A in the pool.
  bool gathers(int step) const {
    for (const GatherFold &fold : folds_)
      if (fold.gemmStep + 1 == size_t(step))
        return true;
    return false;
  }

  /// Row `r` of the task's result `ref` in what run() returned.
  const float *rowOf(const std::vector<std::vector<uint8_t>> &result,
                     const cellpack::ValueRef &ref, int64_t r) const {
    if (ref.kind() == cellpack::ValueKind::CellOutput) {
      const Pool &pool = outputs_[ref.index()];
      return reinterpret_cast<const float *>(result[ref.index()].data() +
                                             pool.rows[r] * pool.rowBytes);
    }
    int64_t width = elementCount(ref) / ref.shape()->Get(0);
    return reinterpret_cast<const float *>(result.back().data() +
                                           ref.offset()) +
           r * width;
  }

private:
  struct Pool {
    size_t rowBytes = 0;
    std::vector<uint8_t> bytes;
    std::vector<int32_t> rows;
  };

  Launch symbol(const std::string &name) const {
    auto function =
        reinterpret_cast<Launch>(dlsym(library_, (name + "__emulate").c_str()));
    EXPECT_NE(function, nullptr) << "no " << name << "__emulate";
    return function;
  }

  void *resolve(const cellpack::ValueRef &ref) {
    switch (ref.kind()) {
    case cellpack::ValueKind::Workspace:
      return reinterpret_cast<uint8_t *>(workspace_.data()) + ref.offset();
    case cellpack::ValueKind::Weight:
      return const_cast<uint8_t *>(
          cell_.weights()->Get(ref.index())->data()->data());
    case cellpack::ValueKind::CellInput:
      return inputs_[ref.index()].bytes.data();
    case cellpack::ValueKind::CellOutput:
      return outputs_[ref.index()].bytes.data();
    }
    return nullptr;
  }

  void kernelArguments(const cellpack::KernelStep &kernel, int64_t rows,
                       std::vector<const void *> &pointers,
                       std::vector<void *> &args, int &rowCount) {
    size_t count = kernel.params()->size();
    pointers.assign(count, nullptr);
    args.assign(count, nullptr);
    rowCount = static_cast<int>(rows);
    for (size_t p = 0; p < count; ++p) {
      const cellpack::KernelParam &param = *kernel.params()->Get(p);
      if (param.kind() == cellpack::ParamKind::RowCount) {
        args[p] = &rowCount;
        continue;
      }
      bool input = param.kind() == cellpack::ParamKind::Input ||
                   param.kind() == cellpack::ParamKind::InputRows;
      const cellpack::ValueRef &ref =
          *(input ? kernel.inputs() : kernel.outputs())->Get(param.index());
      if (param.kind() == cellpack::ParamKind::Input ||
          param.kind() == cellpack::ParamKind::Output)
        pointers[p] = resolve(ref);
      else if (ref.kind() == cellpack::ValueKind::CellInput)
        pointers[p] = inputs_[ref.index()].rows.data();
      else
        pointers[p] = outputs_[ref.index()].rows.data();
      args[p] = &pointers[p];
    }
  }

  /// The skinny kernels' arguments for `gemm` (with A's row indices).
  struct GemmArguments {
    const void *a, *aRows, *b, *bias, *c;
    void *d, *partial, *counters;
    int m, n, k, splits, kPerSplit;
    float alpha, beta;
    std::vector<void *> pointers() {
      return {&a, &aRows, &b, &bias,   &c,         &d,     &partial, &counters,
              &m, &n,     &k, &splits, &kPerSplit, &alpha, &beta};
    }
  };
  GemmArguments gemmArguments(const cellpack::GemmStep &gemm, int64_t rows,
                              const cellpack::SkinnyGemmLaunch &geometry,
                              const GatherFold *fold) {
    GemmArguments args{};
    args.a = fold ? inputs_[fold->cellInput].bytes.data() : resolve(*gemm.a());
    args.aRows = fold ? inputs_[fold->cellInput].rows.data() : nullptr;
    args.b = resolve(*gemm.b());
    // As the CUDA backend: a C of n values a bias, else a full C.
    if (gemm.c()) {
      bool bias = elementCount(*gemm.c()) == gemm.n() &&
                  gemm.c()->kind() == cellpack::ValueKind::Weight;
      (bias ? args.bias : args.c) = resolve(*gemm.c());
    }
    args.d = resolve(*gemm.d());
    partial_.assign(size_t(geometry.splits) * plan_.batch_size() * gemm.n(),
                    NAN);
    counters_.assign(geometry.tiles, 0u);
    args.partial = partial_.data();
    args.counters = counters_.data();
    args.m = fold ? static_cast<int>(rows) : static_cast<int>(gemm.m());
    args.n = static_cast<int>(gemm.n());
    args.k = static_cast<int>(gemm.k());
    args.splits = geometry.splits;
    args.kPerSplit = geometry.kPerSplit;
    args.alpha = gemm.alpha();
    args.beta = gemm.beta();
    return args;
  }

  void runGemm(const cellpack::GemmStep &gemm, int64_t rows, int splits,
               const GatherFold *fold) {
    ASSERT_TRUE(cellpack::skinnyGemmFits(gemm.m(), gemm.n(), gemm.k()));
    auto geometry = cellpack::skinnyGemmLaunch(gemm.n(), gemm.k(), splits);
    GemmArguments args = gemmArguments(gemm, rows, geometry, fold);
    std::vector<void *> pointers = args.pointers();
    symbol("cellrun_skinny_gemm_gather16")(pointers.data(), geometry.grid(),
                                           cellpack::kSkinnyGemmBlockSize);
  }

  void runEpilogue(const cellpack::GemmStep &gemm,
                   const cellpack::KernelStep &kernel, int64_t rows, int splits,
                   const GatherFold *fold) {
    const cellpack::GemmEpilogue &epilogue = *kernel.gemm_epilogue();
    auto geometry = cellpack::skinnyGemmLaunch(
        gemm.n(), gemm.k(), splits, static_cast<int>(epilogue.segments()));
    GemmArguments gemmArgs = gemmArguments(gemm, rows, geometry, fold);
    std::vector<void *> args = gemmArgs.pointers();
    std::vector<void *> stepArgs;
    std::vector<const void *> pointers;
    int rowCount = 0;
    kernelArguments(kernel, rows, pointers, stepArgs, rowCount);
    args.insert(args.end(), stepArgs.begin(), stepArgs.end());
    symbol(epilogue.kernel()->str())(args.data(), geometry.grid(),
                                     cellpack::kSkinnyGemmBlockSize);
    for (size_t t = 0; t < counters_.size(); ++t)
      ASSERT_EQ(counters_[t], 0u) << "tile " << t << " not reset";
  }

  void *library_;
  const cellpack::CellType &cell_;
  const cellpack::BatchPlan &plan_;
  uint32_t poolRows_ = 0;
  std::vector<Pool> inputs_, outputs_, initialOutputs_;
  std::vector<GatherFold> folds_ = gatherFolds(plan_);
  std::vector<float> workspace_, partial_;
  std::vector<unsigned> counters_;
};

class EmulatedGemmEpilogueTest : public ::testing::TestWithParam<const char *> {
};

TEST_P(EmulatedGemmEpilogueTest, GivesTheBitsOfTheGemmAndTheStepApart) {
  std::string model = GetParam();
  std::string path = std::string(CELL_EMULATED_KERNELS_DIR) + "/libemulated-" +
                     model + "-unfused.so";
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  auto loaded =
      loadArtifact(examplesDir() + "/" + model + "/model-unfused.cellpack");
  ASSERT_TRUE(loaded.ok()) << loaded.status().toString();
  std::shared_ptr<const LoadedArtifact> artifact = std::move(loaded).value();
  std::mt19937 random(20261130);
  int epilogues = 0;
  for (const cellpack::CellType *cell : artifact->cells())
    for (const cellpack::BatchPlan *plan : *cell->plans()) {
      std::vector<int> steps; // the kernel steps that list one
      for (size_t i = 1; i < plan->steps()->size(); ++i) {
        const cellpack::KernelStep *kernel =
            plan->steps()->Get(i)->step_as_KernelStep();
        if (kernel && kernel->gemm_epilogue())
          steps.push_back(static_cast<int>(i));
      }
      // cellc writes them for the plans of up to 16 rows (skinny GEMMs).
      EXPECT_EQ(!steps.empty(), plan->batch_size() <= 16)
          << cell->name()->str() << " at batch " << plan->batch_size();
      PlanRun run(library, *cell, *plan, random);
      for (int epilogue : steps) {
        ASSERT_NE(plan->steps()->Get(epilogue - 1)->step_as_GemmStep(),
                  nullptr);
        ++epilogues;
        for (int64_t rows :
             {int64_t(plan->batch_size()), int64_t(plan->batch_size()) - 1}) {
          if (rows < 1)
            continue;
          for (int splits : {1, 3})
            for (bool gathered : {false, true}) {
              if (gathered && !run.gathers(epilogue))
                continue;
              SCOPED_TRACE(cell->name()->str() + " at batch " +
                           std::to_string(plan->batch_size()) + ", step " +
                           std::to_string(epilogue) + ", " +
                           std::to_string(rows) + " rows, " +
                           std::to_string(splits) + " k splits" +
                           (gathered ? ", gathers read in the pool" : ""));
              auto apart = run.run(rows, splits, epilogue, false, gathered);
              auto fused = run.run(rows, splits, epilogue, true, gathered);
              ASSERT_EQ(apart.size(), fused.size());
              for (size_t o = 0; o < apart.size(); ++o)
                EXPECT_EQ(std::memcmp(apart[o].data(), fused[o].data(),
                                      apart[o].size()),
                          0)
                    << (o + 1 < apart.size()
                            ? "output pool " + std::to_string(o)
                            : std::string("the workspace"))
                    << " differs";
              // What the step writes: its task rows (finite), not a state
              // pool's padding row (a workspace buffer's may hold an
              // earlier value's).
              const cellpack::KernelStep &step =
                  *plan->steps()->Get(epilogue)->step_as_KernelStep();
              for (const cellpack::ValueRef *ref : *step.outputs()) {
                bool pool = ref->kind() == cellpack::ValueKind::CellOutput;
                for (int64_t r = 0; r < (pool ? plan->batch_size() : rows); ++r)
                  EXPECT_EQ(std::isfinite(run.rowOf(fused, *ref, r)[0]),
                            r < rows)
                      << "a result of the step, row " << r;
              }
            }
        }
      }
    }
  // At least one in each of the plans of 1, 2, 4, 8 and 16 rows.
  EXPECT_GE(epilogues, 5);
  dlclose(library);
}

INSTANTIATE_TEST_SUITE_P(Examples, EmulatedGemmEpilogueTest,
                         ::testing::Values("lstm", "gru", "lnlstm"));

} // namespace
