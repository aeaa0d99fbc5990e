//===- task_bench.cpp - Time of one task of a cell, against its floors ----===//
//
// For every batch size of a cell (default: the hidden-1024 LSTM), times one
// task on the CPU backend and, in the same run, its two floors on this
// machine: OpenBLAS sgemm of the task's largest GEMM shape (with as many
// threads as the backend), and the time to stream the cell's weight bytes
// once with that many threads (what a step at small batch sizes cannot
// beat). Prints a table and writes a CSV. The CUDA counterpart is
// cuda_task_bench.
//
//   task_bench MODEL.cellpack [--cell NAME] [--csv FILE] [--min-seconds S]
//              [--threads N]  (workers of the CPU backend, default 1)
//
//===----------------------------------------------------------------------===//
#include "BenchCommon.h"
#include "WordFold.h"
#include "cellrun/Device.h"

#include "backend/cpu/CpuTaskRunner.h"
#include "backend/cpu/PackedGemmBf16.h"

#include <CLI/CLI.hpp>

#include <cblas.h>

extern "C" void openblas_set_num_threads(int threads);

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace cellrun;
using namespace cellbench;

/// Seconds to read `bytes` of memory once, split among the pool's workers
/// (an XOR of 64-bit words, 256-bit loads: WordFold.h).
static double weightReadSeconds(size_t bytes, cpu::ThreadPool &pool,
                                double minSeconds) {
  std::vector<uint64_t> buffer(bytes / sizeof(uint64_t) + 1, 0x5a5a5a5aull);
  std::vector<uint64_t> sinks(pool.size());
  double seconds = medianSeconds(
      [&] {
        pool.parallelFor(static_cast<int64_t>(buffer.size()),
                         [&](unsigned worker, int64_t begin, int64_t end) {
                           sinks[worker] ^=
                               foldWords(buffer.data(), begin, end);
                         });
      },
      minSeconds);
  volatile uint64_t keep = sinks[0];
  (void)keep;
  return seconds;
}

static size_t weightBytes(const cellpack::CellType &cell) {
  size_t bytes = 0;
  if (cell.weights())
    for (const cellpack::Weight *weight : *cell.weights())
      bytes += weight->data() ? weight->data()->size() : 0;
  return bytes;
}

/// The command line.
struct Options {
  std::string modelPath, cellName, csvPath;
  double minSeconds = 0.2;
  unsigned threads = 1; // as the executor: see bench/results
};

/// Declares the command line's options, each writing into `options`.
static void defineOptions(CLI::App &app, Options &options) {
  app.add_option("model", options.modelPath, "the compiled model")->required();
  app.add_option("--cell", options.cellName, "the cell (default: the first)");
  app.add_option("--csv", options.csvPath, "write the rows here");
  app.add_option("--min-seconds", options.minSeconds, "time per measurement")
      ->capture_default_str();
  app.add_option("--threads", options.threads, "threads a kernel step")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
}

/// The cell called `name` (the first when `name` is empty), or null after
/// printing why there is none.
static const cellpack::CellType *chooseCell(const LoadedArtifact &artifact,
                                            const std::string &name) {
  const cellpack::CellType *cell = artifact.cells().front();
  if (!name.empty()) {
    auto named = artifact.cell(name);
    if (!named.ok()) {
      std::fprintf(stderr, "task_bench: %s\n",
                   named.status().toString().c_str());
      return nullptr;
    }
    cell = named.value();
  }
  return cell;
}

/// Prints what is measured, the weight-read floor and the table's header.
static void printPreamble(const cellpack::CellType &cell,
                          const Options &options, size_t weights, double read) {
  std::printf("cell %s of %s; CPU backend with %u thread(s), %s kernels (bf16 "
              "products on %s); %s\n",
              cell.name()->c_str(), options.modelPath.c_str(), options.threads,
              cpu::cpuIsaName(cpu::detectCpuIsa()), cpu::bf16KernelsName(),
              openblas_get_config());
  // OpenBLAS picks its kernels when it loads; Debian's 0.3.21 takes recent
  // Intel processors for a Prescott (SSE3).
  if (std::strstr(openblas_get_config(), "Prescott") && cpu::cpuHasAvx2())
    std::printf("note: OpenBLAS runs its Prescott kernels on this processor; "
                "OPENBLAS_CORETYPE=%s gives its fastest sgemm\n",
                cpu::cpuHasAvx512() ? "SkylakeX" : "Haswell");
  std::printf("weights: %.1f MB, read once in %.1f us (%.1f GB/s) with %u "
              "thread(s)\n",
              weights / 1e6, read * 1e6, weights / read / 1e9, options.threads);
  std::printf("%6s %16s %14s %14s %10s %10s\n", "batch", "largest GEMM",
              "cpu task (us)", "sgemm (us)", "task/sgemm", "task/read");
}

/// What every batch size's measurement shares.
struct BatchBench {
  const cellpack::CellType &cell;
  cpu::ThreadPool &pool;
  cpu::PackedWeightCache &packedWeights;
  std::mt19937 &random;
  std::uniform_real_distribution<float> &uniform;
  double minSeconds, read;
  size_t weights;
  std::ofstream &csv;
};

/// Pools with exactly a task's rows, and the views of them a task reads
/// and writes.
struct TaskPools {
  std::vector<std::vector<uint8_t>> inputs, outputs;
  std::vector<int32_t> rows;
  std::vector<cpu::PoolView> inViews, outViews;
};

/// Pools for `batch` rows of the cell's inputs and outputs; the F32 inputs
/// filled with small random values (never zeros).
static TaskPools makePools(BatchBench &bench, uint32_t batch) {
  TaskPools pools;
  pools.rows.resize(batch);
  std::iota(pools.rows.begin(), pools.rows.end(), 0);
  for (const cellpack::TensorSpec *spec : *bench.cell.inputs()) {
    pools.inputs.emplace_back(rowBytes(*spec) * batch, 0);
    std::vector<uint8_t> &input = pools.inputs.back();
    if (spec->dtype() == cellpack::DType::F32) // random, never zeros
      for (size_t at = 0; at + 4 <= input.size(); at += 4) {
        float value = bench.uniform(bench.random);
        std::memcpy(input.data() + at, &value, 4);
      }
    pools.inViews.push_back({input.data(), pools.rows.data()});
  }
  for (const cellpack::TensorSpec *spec : *bench.cell.outputs()) {
    pools.outputs.emplace_back(rowBytes(*spec) * batch, 0);
    pools.outViews.push_back({pools.outputs.back().data(), pools.rows.data()});
  }
  return pools;
}

/// Median seconds of OpenBLAS sgemm for [m,k] x [n,k]^T on random operands.
static double sgemmSeconds(BatchBench &bench, int64_t m, int64_t n, int64_t k) {
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (float &value : a)
    value = bench.uniform(bench.random);
  for (float &value : b)
    value = bench.uniform(bench.random);
  return medianSeconds(
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f,
                    a.data(), k, b.data(), k, 0.0f, c.data(), n);
      },
      bench.minSeconds);
}

/// Times one task of `plan` and the sgemm of its largest GEMM; prints the
/// row (and writes it to the CSV). False, after printing why, when the task
/// cannot be made or fails.
static bool timeBatch(BatchBench &bench, const cellpack::BatchPlan &plan) {
  uint32_t batch = plan.batch_size();
  TaskPools pools = makePools(bench, batch);
  const std::vector<cpu::PoolView> &inViews = pools.inViews;
  const std::vector<cpu::PoolView> &outViews = pools.outViews;
  auto created = cpu::CpuTaskRunner::create(bench.cell, plan, {}, &bench.pool,
                                            &bench.packedWeights);
  if (!created.ok()) {
    std::fprintf(stderr, "task_bench: batch %u: %s\n", batch,
                 created.status().toString().c_str());
    return false;
  }
  auto runner = std::move(created).value();
  // A task that fails is not timed.
  if (Status status = runner->run(batch, inViews, outViews); !status.isOk()) {
    std::fprintf(stderr, "task_bench: batch %u: %s\n", batch,
                 status.toString().c_str());
    return false;
  }
  double task = medianSeconds(
      [&] { (void)runner->run(batch, inViews, outViews); }, bench.minSeconds);

  int64_t m, n, k;
  largestGemm(plan, m, n, k);
  double blas = sgemmSeconds(bench, m, n, k);
  double read = bench.read;
  std::printf("%6u %5ldx%5ldx%4ld %14.1f %14.1f %10.2f %10.2f\n", batch,
              (long)m, (long)n, (long)k, task * 1e6, blas * 1e6, task / blas,
              task / read);
  if (bench.csv)
    bench.csv << batch << "," << m << "," << n << "," << k << "," << task * 1e6
              << "," << blas * 1e6 << "," << task / blas << "," << bench.weights
              << "," << read * 1e6 << "," << task / read << "\n";
  return true;
}

int main(int argc, char **argv) {
  CLI::App app("One CPU task per batch size next to a bare sgemm of the same "
               "shape.",
               "task_bench");
  Options options;
  defineOptions(app, options);
  CLI11_PARSE(app, argc, argv);
  auto artifact = loadArtifact(options.modelPath);
  if (!artifact.ok()) {
    std::fprintf(stderr, "task_bench: %s\n",
                 artifact.status().toString().c_str());
    return 1;
  }
  const cellpack::CellType *cell =
      chooseCell(*artifact.value(), options.cellName);
  if (!cell)
    return 1;
  std::string note;
  DeviceKind device = resolveDevice(DeviceChoice::Auto, note).value();

  cpu::ThreadPool pool(options.threads);
  openblas_set_num_threads(static_cast<int>(options.threads));
  size_t weights = weightBytes(*cell);
  double read = weightReadSeconds(weights, pool, options.minSeconds);
  printPreamble(*cell, options, weights, read);
  std::ofstream csv;
  if (!options.csvPath.empty()) {
    csv.open(options.csvPath);
    csv << "batch,m,n,k,cpu_task_us,openblas_sgemm_us,task_over_sgemm,"
           "weight_bytes,weight_read_us,task_over_read\n";
  }
  cpu::PackedWeightCache packedWeights;
  std::mt19937 random(1);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  BatchBench bench{*cell,  pool,    packedWeights,
                   random, uniform, options.minSeconds,
                   read,   weights, csv};
  for (const cellpack::BatchPlan *plan : *cell->plans())
    if (!timeBatch(bench, *plan))
      return 1;
  if (device == DeviceKind::Cpu)
    std::printf("\nCUDA: not measured here (%s); cuda_task_bench times the "
                "CUDA backend on a GPU.\n",
                note.c_str());
  else
    std::printf("\nCUDA: a GPU is present; cuda_task_bench times the CUDA "
                "backend.\n");
  return 0;
}
