//===- EngineCudaTest.cpp - The engine end to end on the cuda backend -----===//
//
// Skipped, with the probe's reason, without a CUDA device. On a GPU: for
// every example (and the seq2seq model whose decodes mostly reach EOS), 200
// random requests arrive at random rounds of a cellular engine on the cuda
// backend (rounds overlapped, data and results moved with the tasks), and
// each result is compared with the same request run alone on the cpu
// backend: floats within 1e-4 relative + 1e-5 absolute (another device and
// other batch sizes sum in other orders, over up to 24 steps); decoded
// tokens identical for all but a few requests (a near tie between two
// logits may break the other way on another device, and the rest of that
// decode follows it); every row back in its pool afterwards. The same with
// two workers (threads, streams, pools) sharing the device, with the
// results in page-locked memory the device writes (pinnedResults), with
// the tasks' plans launched as CUDA graphs (cudaGraphs), and with every
// task timed on the device (timeDevice).
//
//===----------------------------------------------------------------------===//
#include "ExampleArtifacts.h"
#include "RandomRequests.h"
#include "base/ValueMemory.h"
#include "cellrun/Engine.h"
#include "engine/EngineTesting.h"

#include "CudaProbe.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <tuple>

using namespace cellrun;
using cellc::testing::exampleArtifactPath;
using cellc::testing::randomRequest;

namespace {

std::unique_ptr<Engine> manual(std::shared_ptr<const LoadedArtifact> artifact,
                               DeviceKind device,
                               ExecutorOptions executor = {}) {
  EngineOptions options;
  options.startWorker = false;
  options.executor = executor;
  options.executor.device = device;
  auto engine = Engine::create(std::move(artifact), options);
  EXPECT_TRUE(engine.ok()) << engine.status().toString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

/// `got` against the cpu's `want` of request `i`: floats within 1e-4
/// relative + 1e-5 absolute; a decode's tokens counted in `tokenMismatches`
/// when they differ.
void expectNearTheCpu(const RequestResult &got, const RequestResult &want,
                      int i, int &tokenMismatches) {
  ASSERT_TRUE(got.status.isOk()) << got.status.toString();
  ASSERT_EQ(got.outputs.size(), want.outputs.size());
  for (const OutputTensor &expected : want.outputs) {
    const OutputTensor *have = got.find(expected.name);
    ASSERT_NE(have, nullptr) << expected.name;
    if (!expected.integers.empty()) {
      tokenMismatches += have->integers != expected.integers;
      continue;
    }
    ASSERT_EQ(have->floats.size(), expected.floats.size());
    for (size_t e = 0; e < expected.floats.size(); ++e)
      ASSERT_LE(std::fabs(have->floats[e] - expected.floats[e]),
                1e-4f * std::fabs(expected.floats[e]) + 1e-5f)
          << "request " << i << " " << expected.name << "[" << e << "]";
  }
}

class EngineCudaTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    auto probe = probeCudaDevice();
    CELL_SKIP_WITHOUT_CUDA(probe, "cuda engine");
  }
};

/// 200 random requests of `model` at random rounds on the cuda backend
/// (with `executor`'s options), each against the cpu run alone;
/// `afterwards` sees the engine and the results.
void matchTheCpuRunAlone(
    const std::string &model, const ExecutorOptions &executor,
    const std::function<void(Engine &, const std::vector<RequestResult> &)>
        &afterwards = {}) {
  auto loaded = loadArtifact(exampleArtifactPath(model));
  ASSERT_TRUE(loaded.ok()) << loaded.status().toString();
  std::shared_ptr<const LoadedArtifact> artifact = std::move(loaded).value();
  auto cpu = manual(artifact, DeviceKind::Cpu);
  auto gpu = manual(artifact, DeviceKind::Cuda, executor);
  ASSERT_TRUE(cpu && gpu);
  std::printf("%s on %s\n", model.c_str(), gpu->deviceDescription().c_str());
  uint32_t idle = engineExecutor(*gpu).rowsInUse();

  std::mt19937 random(2024);
  constexpr int kRequests = 200;
  std::vector<std::string> texts;
  for (int i = 0; i < kRequests; ++i)
    texts.push_back(randomRequest(model, i, random));
  std::vector<RequestResult> alone(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    auto future = cpu->submit(cpu->parser().parse(texts[i], "r").value());
    cpu->drain();
    alone[i] = future.get();
    ASSERT_TRUE(alone[i].status.isOk()) << alone[i].status.toString();
  }
  std::vector<std::future<RequestResult>> futures;
  for (int next = 0; next < kRequests;) {
    int arrivals = std::uniform_int_distribution<int>(0, 6)(random);
    for (int a = 0; a < arrivals && next < kRequests; ++a, ++next)
      futures.push_back(
          gpu->submit(gpu->parser().parse(texts[next], "r").value()));
    gpu->runOnce();
  }
  gpu->drain();

  int tokenMismatches = 0;
  std::vector<RequestResult> results;
  for (int i = 0; i < kRequests; ++i) {
    results.push_back(futures[i].get());
    expectNearTheCpu(results.back(), alone[i], i, tokenMismatches);
    if (::testing::Test::HasFatalFailure())
      return;
  }
  EXPECT_LE(tokenMismatches, kRequests / 50)
      << "decoded tokens differ from the cpu's in " << tokenMismatches
      << " requests";
  EXPECT_EQ(engineExecutor(*gpu).rowsInUse(), idle);
  EngineStats stats = gpu->stats();
  EXPECT_EQ(stats.completed, uint64_t(kRequests));
  std::printf("%s: %d of %d decodes differ from the cpu's\n", model.c_str(),
              tokenMismatches, kRequests);
  if (afterwards)
    afterwards(*gpu, results);
}

TEST_P(EngineCudaTest, RequestsMatchTheCpuRunAlone) {
  matchTheCpuRunAlone(GetParam(), {});
}

TEST_P(EngineCudaTest, PinnedResultsWrittenByTheDeviceMatchTheCpu) {
  // ExecutorOptions::pinnedResults: results in page-locked memory the
  // device maps, read rows written there by the task's own kernel (rows
  // whose destination is elsewhere, such as a projection's step rows, go
  // the staged way): results as the cpu's, all in that memory.
  std::string model = GetParam();
  ExecutorOptions executor;
  executor.pinnedResults = true;
  matchTheCpuRunAlone(model, executor, [&](Engine &gpu, const auto &results) {
    const ValueMemory *pinned = installedValueMemory();
    ASSERT_NE(pinned, nullptr);
    for (const RequestResult &result : results)
      for (const OutputTensor &tensor : result.outputs)
        if (!tensor.floats.empty()) {
          EXPECT_TRUE(pinned->owns(tensor.floats.data())) << tensor.name;
        }
    EngineStats stats = gpu.stats();
    std::printf("%s: %llu rows written by the device, %llu copied by the "
                "host\n",
                model.c_str(),
                (unsigned long long)stats.executorDeviceWrittenRows,
                (unsigned long long)stats.executorDeliveredRows);
    EXPECT_GT(stats.executorDeviceWrittenRows, 0u);
  });
}

TEST_P(EngineCudaTest, PlansLaunchedAsCudaGraphsMatchTheCpu) {
  // ExecutorOptions::cudaGraphs: each task's plan launched kernel by
  // kernel the first time its row count comes, captured the second, then
  // launched as one graph. Results as the cpu's; every other plan went as
  // a graph (none refused, none past the limit), and some graph served
  // more than one task.
  std::string model = GetParam();
  ExecutorOptions executor;
  executor.cudaGraphs = true;
  matchTheCpuRunAlone(model, executor, [&](Engine &gpu, const auto &) {
    EngineStats stats = gpu.stats();
    std::printf("%s: %llu plans launched as graphs, %llu captured, %llu "
                "kernel by kernel before their capture, %llu kernel by "
                "kernel\n",
                model.c_str(),
                (unsigned long long)stats.executorPlanGraphLaunches,
                (unsigned long long)stats.executorPlanGraphCaptures,
                (unsigned long long)stats.executorPlanFirstRuns,
                (unsigned long long)stats.executorPlansLaunchedDirectly);
    EXPECT_GE(stats.executorPlanFirstRuns, stats.executorPlanGraphCaptures);
    EXPECT_EQ(stats.executorPlansLaunchedDirectly, 0u)
        << "graphs were turned off (see the log) or ran past their limit";
    EXPECT_GT(stats.executorPlanGraphCaptures, 0u);
    EXPECT_GT(stats.executorPlanGraphLaunches, stats.executorPlanGraphCaptures)
        << "no graph was launched again";
  });
}

TEST_P(EngineCudaTest, TasksTimedOnTheDeviceMatchTheCpu) {
  // ExecutorOptions::timeDevice: results as the cpu's; every task the
  // engine ran was timed (input projections run as tasks of their own, not
  // counted in the cells' tasks), each at least a microsecond, and their
  // spans add up to less than the test's own wall time.
  std::string model = GetParam();
  ExecutorOptions executor;
  executor.timeDevice = true;
  auto start = std::chrono::steady_clock::now();
  matchTheCpuRunAlone(model, executor, [&](Engine &gpu, const auto &) {
    double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    EngineStats stats = gpu.stats();
    uint64_t tasks = 0;
    for (const CellTypeStats &cell : stats.cells)
      tasks += cell.tasks;
    std::printf("%s: %llu tasks, %.6f s on the device in %.6f s\n",
                model.c_str(), (unsigned long long)tasks,
                stats.executorDeviceSeconds, wall);
    EXPECT_GT(tasks, 0u);
    EXPECT_GE(stats.executorDeviceTimedTasks, tasks);
    EXPECT_GT(stats.executorDeviceSeconds,
              stats.executorDeviceTimedTasks * 1e-6);
    EXPECT_LT(stats.executorDeviceSeconds, wall);
  });
}

/// A model, and whether plans launch as CUDA graphs.
class EngineCudaWorkersTest
    : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
protected:
  void SetUp() override {
    auto probe = probeCudaDevice();
    CELL_SKIP_WITHOUT_CUDA(probe, "cuda engine");
  }
};

TEST_P(EngineCudaWorkersTest, TwoWorkersSharingTheDeviceMatchTheCpuRunAlone) {
  // Two engine threads on one GPU (EngineOptions::workersPerDevice), each
  // with its own stream and pools, requests admitted by the less loaded
  // and moved between them: the same results as the cpu's; with graphs,
  // each worker capturing on its own stream while the other launches.
  std::string model = std::get<0>(GetParam());
  bool graphs = std::get<1>(GetParam());
  auto loaded = loadArtifact(exampleArtifactPath(model));
  ASSERT_TRUE(loaded.ok()) << loaded.status().toString();
  std::shared_ptr<const LoadedArtifact> artifact = std::move(loaded).value();
  auto cpu = manual(artifact, DeviceKind::Cpu);
  ASSERT_TRUE(cpu);
  EngineOptions options;
  options.executor.device = DeviceKind::Cuda;
  options.workers = 2;
  options.workersPerDevice = 2;
  options.executor.cudaGraphs = graphs;
  // Strict turns: once one worker holds requests the other, with more
  // room, must take the next, so both run some (asserted).
  options.admissionSlack = 0;
  auto created = Engine::create(artifact, options);
  ASSERT_TRUE(created.ok()) << created.status().toString();
  Engine &gpu = *created.value();
  EXPECT_EQ(gpu.deviceDescription(0), gpu.deviceDescription(1));

  std::mt19937 random(77);
  constexpr int kRequests = 300;
  std::vector<std::string> texts;
  std::vector<std::future<RequestResult>> futures;
  for (int i = 0; i < kRequests; ++i) {
    texts.push_back(randomRequest(model, i, random));
    futures.push_back(gpu.submit(gpu.parser().parse(texts[i], "r").value()));
  }
  int tokenMismatches = 0;
  for (int i = 0; i < kRequests; ++i) {
    auto future = cpu->submit(cpu->parser().parse(texts[i], "r").value());
    cpu->drain();
    RequestResult want = future.get();
    ASSERT_TRUE(want.status.isOk()) << want.status.toString();
    expectNearTheCpu(futures[i].get(), want, i, tokenMismatches);
    if (HasFatalFailure())
      return;
  }
  EXPECT_LE(tokenMismatches, kRequests / 50);
  EngineStats stats = gpu.stats();
  EXPECT_EQ(stats.completed, uint64_t(kRequests));
  ASSERT_EQ(stats.workerTasks.size(), 2u);
  EXPECT_GT(stats.workerTasks[0], 0u);
  EXPECT_GT(stats.workerTasks[1], 0u);
  if (graphs) {
    EXPECT_EQ(stats.executorPlansLaunchedDirectly, 0u);
    EXPECT_GT(stats.executorPlanGraphLaunches, stats.executorPlanGraphCaptures);
  } else {
    EXPECT_EQ(stats.executorPlanGraphLaunches, 0u);
  }
  std::printf("%s on two workers of one device: %llu and %llu tasks\n",
              model.c_str(), (unsigned long long)stats.workerTasks[0],
              (unsigned long long)stats.workerTasks[1]);
}

INSTANTIATE_TEST_SUITE_P(
    ChainAndMemories, EngineCudaWorkersTest,
    ::testing::Combine(::testing::Values(std::string("lstm"),
                                         std::string("attention")),
                       ::testing::Bool()),
    [](const auto &info) {
      return std::get<0>(info.param) +
             (std::get<1>(info.param) ? "_graphs" : "");
    });

INSTANTIATE_TEST_SUITE_P(Examples, EngineCudaTest,
                         ::testing::Values("lstm", "gru", "seq2seq",
                                           "seq2seq_eos", "treelstm",
                                           "attention", "bahdanau", "mamba",
                                           "rwkv", "slstm"));

} // namespace
