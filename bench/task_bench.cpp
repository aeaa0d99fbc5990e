//===- task_bench.cpp - Time of one task of a cell, against its floors ----===//
//
// For every batch size of a cell (default: the hidden-1024 LSTM), times one
// task on the CPU backend and, in the same run, a plain BLAS call of the same
// GEMM shape (the floor the task cannot beat on this machine), and prints a
// table and a CSV. The CUDA counterpart is cuda_task_bench.
//
//   task_bench MODEL.cellpack [--cell NAME] [--csv FILE] [--min-seconds S]
//              [--threads N]  (workers of the CPU backend, default 1)
//
//===----------------------------------------------------------------------===//
#include "BenchCommon.h"
#include "cellrun/Device.h"

#include "../runtime/backend/cpu/CpuTaskRunner.h"

#include <CLI/CLI.hpp>

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

using namespace cellrun;
using namespace cellbench;

int main(int argc, char **argv) {
  CLI::App app("One CPU task per batch size next to a bare sgemm of the same "
               "shape.",
               "task_bench");
  std::string modelPath, cellName, csvPath;
  double minSeconds = 0.2;
  unsigned threads = 1; // as the executor: see bench/results
  app.add_option("model", modelPath, "the compiled model")->required();
  app.add_option("--cell", cellName, "the cell (default: the first)");
  app.add_option("--csv", csvPath, "write the rows here");
  app.add_option("--min-seconds", minSeconds, "time per measurement")
      ->capture_default_str();
  app.add_option("--threads", threads, "threads a kernel step")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  CLI11_PARSE(app, argc, argv);
  auto artifact = loadArtifact(modelPath);
  if (!artifact.ok()) {
    std::fprintf(stderr, "task_bench: %s\n",
                 artifact.status().toString().c_str());
    return 1;
  }
  const cellpack::CellType *cell = artifact.value()->cells().front();
  if (!cellName.empty()) {
    auto named = artifact.value()->cell(cellName);
    if (!named.ok()) {
      std::fprintf(stderr, "task_bench: %s\n",
                   named.status().toString().c_str());
      return 1;
    }
    cell = named.value();
  }
  std::string note;
  DeviceKind device = resolveDevice(DeviceChoice::Auto, note).value();

  cpu::ThreadPool pool(threads);
  std::printf("cell %s of %s; CPU backend with %u thread(s); %s\n",
              cell->name()->c_str(), modelPath.c_str(), threads,
              openblas_get_config());
  std::printf("%6s %14s %22s %12s %8s\n", "batch", "largest GEMM",
              "cpu task (us)", "BLAS (us)", "ratio");
  std::ofstream csv;
  if (!csvPath.empty()) {
    csv.open(csvPath);
    csv << "batch,m,n,k,cpu_task_us,cpu_blas_us,ratio\n";
  }
  for (const cellpack::BatchPlan *plan : *cell->plans()) {
    uint32_t batch = plan->batch_size();
    // Pools with exactly the task's rows, filled with small values.
    std::vector<std::vector<uint8_t>> inputs, outputs;
    std::vector<int32_t> rows(batch);
    std::iota(rows.begin(), rows.end(), 0);
    std::vector<cpu::PoolView> inViews, outViews;
    for (const cellpack::TensorSpec *spec : *cell->inputs()) {
      inputs.emplace_back(rowBytes(*spec) * batch, 0);
      inViews.push_back({inputs.back().data(), rows.data()});
    }
    for (const cellpack::TensorSpec *spec : *cell->outputs()) {
      outputs.emplace_back(rowBytes(*spec) * batch, 0);
      outViews.push_back({outputs.back().data(), rows.data()});
    }
    auto created = cpu::CpuTaskRunner::create(*cell, *plan, {}, &pool);
    if (!created.ok()) {
      std::fprintf(stderr, "task_bench: batch %u: %s\n", batch,
                   created.status().toString().c_str());
      return 1;
    }
    auto runner = std::move(created).value();
    // A task that fails is not timed.
    if (Status status = runner->run(batch, inViews, outViews); !status.isOk()) {
      std::fprintf(stderr, "task_bench: batch %u: %s\n", batch,
                   status.toString().c_str());
      return 1;
    }
    double task = medianSeconds(
        [&] { (void)runner->run(batch, inViews, outViews); }, minSeconds);

    int64_t m, n, k;
    largestGemm(*plan, m, n, k);
    std::vector<float> a(m * k, 0.01f), b(k * n, 0.01f), c(m * n);
    double blas = medianSeconds(
        [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
                      a.data(), k, b.data(), n, 0.0f, c.data(), n);
        },
        minSeconds);
    std::printf("%6u %5ldx%4ldx%4ld %22.1f %12.1f %8.2f\n", batch, (long)m,
                (long)n, (long)k, task * 1e6, blas * 1e6, task / blas);
    if (csv)
      csv << batch << "," << m << "," << n << "," << k << "," << task * 1e6
          << "," << blas * 1e6 << "," << task / blas << "\n";
  }
  if (device == DeviceKind::Cpu)
    std::printf("\nCUDA: not measured here (%s); cuda_task_bench times the "
                "CUDA backend on a GPU.\n",
                note.c_str());
  else
    std::printf("\nCUDA: a GPU is present; cuda_task_bench times the CUDA "
                "backend.\n");
  return 0;
}
