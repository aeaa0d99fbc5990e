//===- cuda_task_bench.cpp - One task of a cell on the GPU, against floors ===//
//
// For every batch size of a cell (default: the first cell of the artifact;
// run it on the hidden-1024 LSTM), times on the CUDA backend:
//  - task latency: one task submitted and waited for (median);
//  - task throughput: 200 tasks submitted back to back, time per task (the
//    steady state the scheduler sees with tasks in flight);
//  - plan time: the plan's GEMMs and kernels alone (no staging copies, no
//    completion ticket), 200 back to back captured in a CUDA graph and
//    timed with events: what the GPU spends on the step itself, without
//    the host's launch costs;
//  - the host's time: a submitted task's (CudaBackend::submit, less its
//    waits for a free slot), the plan's launches alone (its GEMMs and
//    kernels enqueued one by one), and one launch of the plan captured as
//    a CUDA graph: what a graph per (cell, batch size) would save the host
//    (with --graphs, the backend launches the plans as graphs itself,
//    CudaBackendOptions::graphs, and the first column shows what is left);
// and, in the same run, two floors:
//  - a bare cuBLAS GEMM of the plan's largest GEMM shape on fp32 data, its
//    products in the artifact's precision (fp32, or tf32/bf16/fp16 tensor
//    cores: cublasGemmEx's compute type), timed with events;
//  - the time to read the cell's weights once at the device bandwidth
//    measured here (a device-to-device copy: bytes read + written / time).
// Only weights read whole count (GEMM operands, not embedding tables).
// Ratio = throughput time / max(GEMM floor, weight-read floor); the goal is
// at most 1.3 at every batch size. Prints a table and writes a CSV.
//
//   cuda_task_bench MODEL.cellpack [--cell NAME] [--csv FILE] [--device N]
//                   [--graphs]
//
//===----------------------------------------------------------------------===//
#include "BenchCommon.h"

#include "backend/cuda/CudaBackend.h"
#include "backend/cuda/CudaGemm.h"
#include "backend/cuda/CudaLaunch.h"

#include <CLI/CLI.hpp>

#include <cublas_v2.h>

#include <cstdio>
#include <fstream>
#include <numeric>
#include <set>
#include <string>

using namespace cellrun;
using namespace cellbench;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "cuda_task_bench: %s\n", message.c_str());
  return 1;
}

/// Milliseconds per repetition of `enqueue` on `stream`, timed with events.
template <typename Enqueue>
float eventMilliseconds(cudaStream_t stream, int repetitions, Enqueue enqueue) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  enqueue(); // warm-up
  cudaEventRecord(start, stream);
  for (int r = 0; r < repetitions; ++r)
    enqueue();
  cudaEventRecord(stop, stream);
  cudaEventSynchronize(stop);
  float milliseconds = 0;
  cudaEventElapsedTime(&milliseconds, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return milliseconds / repetitions;
}

/// Bytes per second of a large device-to-device copy (read + written).
double deviceBandwidth() {
  size_t bytes = size_t(1) << 30;
  void *from = nullptr, *to = nullptr;
  if (cudaMalloc(&from, bytes) != cudaSuccess ||
      cudaMalloc(&to, bytes) != cudaSuccess)
    return 0;
  float ms = eventMilliseconds(nullptr, 10, [&] {
    cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, nullptr);
  });
  cudaFree(from);
  cudaFree(to);
  return 2.0 * bytes / (ms * 1e-3);
}

/// Microseconds of a cuBLAS GEMM on fp32 data for row-major [m,k] x [k,n],
/// its products in the artifact's precision.
double cublasMicroseconds(int64_t m, int64_t n, int64_t k,
                          cellpack::Precision precision) {
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
    return -1;
  cublasComputeType_t compute = cuda::gemmComputeType(precision);
  void *a, *b, *c;
  cudaMalloc(&a, m * k * sizeof(float));
  cudaMalloc(&b, k * n * sizeof(float));
  cudaMalloc(&c, m * n * sizeof(float));
  cudaMemset(a, 0, m * k * sizeof(float));
  cudaMemset(b, 0, k * n * sizeof(float));
  float alpha = 1, beta = 0;
  // Column-major C^T = B^T A^T.
  auto gemm = [&] {
    return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b,
                        CUDA_R_32F, n, a, CUDA_R_32F, k, &beta, c, CUDA_R_32F,
                        n, compute, CUBLAS_GEMM_DEFAULT);
  };
  // A compute type this cuBLAS refuses would time calls that do nothing.
  float ms = gemm() == CUBLAS_STATUS_SUCCESS
                 ? eventMilliseconds(nullptr, 100, [&] { gemm(); })
                 : -1e-3f;
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cublasDestroy(handle);
  return ms * 1e3;
}

/// Bytes of the weights a task of `plan` reads whole: the B and C operands of
/// its GEMMs (GEMM steps, or Gemm ops inside single-kernel steps). Tables
/// read a few rows at a time (embeddings) do not count.
size_t weightReadBytes(const cellpack::CellType &cell,
                       const cellpack::BatchPlan &plan) {
  std::set<uint32_t> weights;
  auto note = [&](const cellpack::ValueRef *ref) {
    if (ref && ref->kind() == cellpack::ValueKind::Weight)
      weights.insert(ref->index());
  };
  for (const cellpack::TaskStep *step : *plan.steps()) {
    if (const auto *gemm = step->step_as_GemmStep()) {
      note(gemm->b());
      note(gemm->c());
    }
    const auto *kernel = step->step_as_KernelStep();
    if (!kernel)
      continue;
    const cellpack::PortableRegion *region = kernel->region();
    for (const cellpack::PortableOp *op : *region->ops())
      if (op->opcode() == cellpack::OpCode::Gemm)
        for (uint32_t operand = 1; operand < op->operands()->size();
             ++operand) {
          uint32_t value = op->operands()->Get(operand);
          if (value < region->num_inputs())
            note(kernel->inputs()->Get(value));
        }
  }
  size_t bytes = 0;
  for (uint32_t index : weights)
    bytes += cell.weights()->Get(index)->data()->size();
  return bytes;
}

/// Tasks (or plans) run back to back for the throughput and plan timings.
constexpr int kBackToBack = 200;

/// The command line.
struct Options {
  std::string modelPath, cellName, csvPath;
  cuda::CudaBackendOptions backend;
};

/// Declares the command line's options, each writing into `options`.
void defineOptions(CLI::App &app, Options &options) {
  app.add_option("model", options.modelPath, "the compiled model")->required();
  app.add_option("--cell", options.cellName, "the cell (default: the first)");
  app.add_option("--csv", options.csvPath, "write the rows here");
  app.add_option("--device", options.backend.device, "CUDA device index")
      ->capture_default_str();
  app.add_flag("--graphs", options.backend.graphs,
               "the backend launches each task's plan as a CUDA graph "
               "(--cuda-graphs): the host column is then a task's submit "
               "with its plan launched that way");
}

/// The cell called `name` (the first when `name` is empty), or null after
/// printing why there is none.
const cellpack::CellType *chooseCell(const LoadedArtifact &artifact,
                                     const std::string &name) {
  const cellpack::CellType *cell = artifact.cells().front();
  if (!name.empty()) {
    auto named = artifact.cell(name);
    if (!named.ok()) {
      fail(named.status().toString());
      return nullptr;
    }
    cell = named.value();
  }
  return cell;
}

/// What every batch size's measurement shares.
struct CellBench {
  cuda::CudaBackend &backend;
  const cellpack::CellType &cell;
  double bandwidth;
  cellpack::Precision precision;
  std::ofstream &csv;
  std::vector<std::string> &algorithms; // the GEMM choices, per batch size
};

/// A task's pools on the device and its row indices (rows 0..batch-1 for
/// every cell input, then every output). Filled in place: rowIndices points
/// at rows.
struct TaskBuffers {
  std::vector<void *> inputs, outputs;
  std::vector<int32_t> rows;
  std::vector<const std::vector<int32_t> *> rowIndices;
};

/// Allocates a pool of `batch` rows for every cell input and output; false
/// after printing why one could not be.
bool allocateBuffers(cuda::CudaBackend &backend, const cellpack::CellType &cell,
                     uint32_t batch, TaskBuffers &buffers) {
  buffers.rows.resize(batch);
  std::iota(buffers.rows.begin(), buffers.rows.end(), 0);
  for (const auto *specs : {cell.inputs(), cell.outputs()})
    for (const cellpack::TensorSpec *spec : *specs) {
      auto memory = backend.allocatePool(rowBytes(*spec) * batch, false);
      if (!memory.ok()) {
        fail(memory.status().toString());
        return false;
      }
      (specs == cell.inputs() ? buffers.inputs : buffers.outputs)
          .push_back(memory->device);
      buffers.rowIndices.push_back(&buffers.rows);
    }
  return true;
}

/// Seconds of a task through the backend: submitted and waited for alone
/// (latency), and per task of kBackToBack submitted back to back
/// (throughput).
struct SubmitTimes {
  double latency = 0, throughput = 0;
  double host = 0; // a task's submit, less its waits for a slot
};

/// Times tasks of `plan` submitted through the backend (medians); false
/// after printing the error a task returned.
bool timeSubmitted(cuda::CudaBackend &backend, const cellpack::CellType &cell,
                   const cellpack::BatchPlan &plan, const TaskBuffers &buffers,
                   SubmitTimes &times) {
  uint32_t batch = plan.batch_size();
  const std::vector<void *> &inputs = buffers.inputs;
  const std::vector<void *> &outputs = buffers.outputs;
  const std::vector<const std::vector<int32_t> *> &rowIndices =
      buffers.rowIndices;
  Status status = Status::ok();
  auto submit = [&]() -> uint64_t {
    auto ticket =
        backend.submit(cell, plan, batch, inputs, outputs, rowIndices);
    if (!ticket.ok()) {
      status = ticket.status();
      return 0;
    }
    return ticket.value();
  };
  times.latency = medianSeconds(
      [&] {
        uint64_t ticket = submit();
        if (ticket)
          status = backend.wait(ticket);
      },
      0.2);
  times.throughput = medianSeconds(
                         [&] {
                           uint64_t last = 0;
                           for (int t = 0; t < kBackToBack; ++t)
                             last = submit();
                           if (last)
                             status = backend.wait(last);
                         },
                         0.5) /
                     kBackToBack;
  // The host's own time a task: submit's, less what it waited for a slot.
  double blockedBefore = backend.times().blockedSeconds, submitting = 0;
  uint64_t last = 0;
  for (int t = 0; t < kBackToBack; ++t) {
    auto begin = std::chrono::steady_clock::now();
    last = submit();
    submitting +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
            .count();
  }
  times.host = (submitting - (backend.times().blockedSeconds - blockedBefore)) /
               kBackToBack;
  if (last)
    status = backend.wait(last);
  if (!status.isOk()) {
    fail(status.toString());
    return false;
  }
  return true;
}

/// Host seconds a plan: enqueued launch by launch, and as one launch of a
/// graph of it.
struct LaunchTimes {
  double direct = 0, graph = 0;
};

/// Microseconds of the plan alone on a stream of its own (row indices
/// 0..batch-1): kBackToBack runs captured in a CUDA graph, so that the
/// host's launch costs do not count, timed with events. False after
/// printing why it could not be timed.
bool planMicroseconds(const cuda::CudaTaskRunner &runner,
                      const cellpack::CellType &cell, uint32_t batch,
                      const TaskBuffers &buffers, double &micros,
                      LaunchTimes &launches) {
  int32_t *deviceRows = nullptr;
  size_t rowCount = size_t(batch) * buffers.rowIndices.size();
  std::vector<int32_t> allRows;
  for (size_t i = 0; i < buffers.rowIndices.size(); ++i)
    allRows.insert(allRows.end(), buffers.rows.begin(), buffers.rows.end());
  cudaStream_t planStream = nullptr;
  if (cudaMalloc(reinterpret_cast<void **>(&deviceRows),
                 rowCount * sizeof(int32_t)) != cudaSuccess ||
      cudaMemcpy(deviceRows, allRows.data(), rowCount * sizeof(int32_t),
                 cudaMemcpyHostToDevice) != cudaSuccess ||
      cudaStreamCreate(&planStream) != cudaSuccess) {
    fail("cannot prepare the plan-only timing");
    return false;
  }
  cuda::DeviceTaskViews views;
  views.inputs = buffers.inputs;
  views.outputs = buffers.outputs;
  views.inputRows = deviceRows;
  views.outputRows = deviceRows + size_t(batch) * cell.inputs()->size();
  Status status = Status::ok();
  // The host's launch costs: the plan enqueued launch by launch, then as
  // one graph launch of a capture of it.
  auto hostSeconds = [&](auto enqueue) {
    auto begin = std::chrono::steady_clock::now();
    for (int t = 0; t < kBackToBack && status.isOk(); ++t)
      enqueue();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
            .count();
    cudaStreamSynchronize(planStream);
    return seconds / kBackToBack;
  };
  launches.direct =
      hostSeconds([&] { status = runner.enqueue(batch, views, planStream); });
  cudaGraph_t oneGraph = nullptr;
  cudaGraphExec_t oneExec = nullptr;
  cudaError_t capturedOne =
      cudaStreamBeginCapture(planStream, cudaStreamCaptureModeThreadLocal);
  if (capturedOne == cudaSuccess) {
    Status enqueued = runner.enqueue(batch, views, planStream);
    capturedOne = cudaStreamEndCapture(planStream, &oneGraph);
    if (capturedOne == cudaSuccess && enqueued.isOk())
      capturedOne = cudaGraphInstantiate(&oneExec, oneGraph, 0);
    if (!enqueued.isOk())
      status = enqueued;
  }
  if (capturedOne == cudaSuccess && status.isOk())
    launches.graph = hostSeconds([&] {
      if (cudaGraphLaunch(oneExec, planStream) != cudaSuccess)
        capturedOne = cudaErrorLaunchFailure;
    });
  if (capturedOne != cudaSuccess)
    launches.graph = -1; // not measured: printed as -1
  if (oneExec)
    cudaGraphExecDestroy(oneExec);
  if (oneGraph)
    cudaGraphDestroy(oneGraph);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graphExec = nullptr;
  cudaError_t captured =
      cudaStreamBeginCapture(planStream, cudaStreamCaptureModeThreadLocal);
  for (int t = 0; t < kBackToBack && status.isOk() && captured == cudaSuccess;
       ++t)
    status = runner.enqueue(batch, views, planStream);
  if (captured == cudaSuccess)
    captured = cudaStreamEndCapture(planStream, &graph);
  if (captured == cudaSuccess && status.isOk())
    captured = cudaGraphInstantiate(&graphExec, graph, 0);
  if (captured != cudaSuccess || !status.isOk()) {
    fail("cannot capture the plan in a CUDA graph: " +
         (status.isOk() ? std::string(cudaGetErrorString(captured))
                        : status.toString()));
    return false;
  }
  micros = 1e3 / kBackToBack * eventMilliseconds(planStream, 3, [&] {
             cudaGraphLaunch(graphExec, planStream);
           });
  cudaGraphExecDestroy(graphExec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(planStream);
  cudaFree(deviceRows);
  return true;
}

/// Times one batch size (task latency and throughput, the plan alone) and
/// its floors (cuBLAS, the weight read); prints the row (and writes it to
/// the CSV). False after printing why it could not be measured.
bool timeBatch(CellBench &bench, const cellpack::BatchPlan &plan) {
  uint32_t batch = plan.batch_size();
  TaskBuffers buffers;
  if (!allocateBuffers(bench.backend, bench.cell, batch, buffers))
    return false;
  auto runner = bench.backend.runner(bench.cell, plan);
  if (!runner.ok()) {
    fail(runner.status().toString());
    return false;
  }
  for (const std::string &line : runner.value()->gemmDescriptions())
    bench.algorithms.push_back("batch " + std::to_string(batch) + ": " + line);
  SubmitTimes times;
  if (!timeSubmitted(bench.backend, bench.cell, plan, buffers, times))
    return false;
  double planMicros = 0;
  LaunchTimes launches;
  if (!planMicroseconds(*runner.value(), bench.cell, batch, buffers, planMicros,
                        launches))
    return false;
  int64_t m, n, k;
  largestGemm(plan, m, n, k);
  double gemm = cublasMicroseconds(m, n, k, bench.precision);
  double weightFloor = bench.bandwidth > 0 ? weightReadBytes(bench.cell, plan) /
                                                 bench.bandwidth * 1e6
                                           : 0;
  double floor = std::max(gemm, weightFloor);
  double latency = times.latency, task = times.throughput * 1e6;
  std::printf("%6u %5ldx%5ldx%4ld %12.1f %12.1f %10.1f %12.1f %12.1f %8.2f "
              "%8.2f %8.1f %8.1f %8.1f\n",
              batch, (long)m, (long)n, (long)k, latency * 1e6, task, planMicros,
              gemm, weightFloor, task / floor, planMicros / floor,
              times.host * 1e6, launches.direct * 1e6, launches.graph * 1e6);
  if (bench.csv)
    bench.csv << batch << "," << m << "," << n << "," << k << ","
              << latency * 1e6 << "," << task << "," << planMicros << ","
              << gemm << "," << weightFloor << "," << floor << ","
              << task / floor << "," << planMicros / floor << ","
              << times.host * 1e6 << "," << launches.direct * 1e6 << ","
              << launches.graph * 1e6 << "\n";
  return true;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app("One GPU task per batch size next to a bare cuBLAS GEMM and the "
               "weight-read time.",
               "cuda_task_bench");
  Options options;
  options.backend.tasksInFlight = 8;
  defineOptions(app, options);
  CLI11_PARSE(app, argc, argv);
  auto loaded = loadArtifact(options.modelPath);
  if (!loaded.ok())
    return fail(loaded.status().toString());
  std::shared_ptr<const LoadedArtifact> artifact = std::move(loaded).value();
  const cellpack::CellType *cell = chooseCell(*artifact, options.cellName);
  if (!cell)
    return 1;
  auto created = cuda::CudaBackend::create(artifact, options.backend);
  if (!created.ok())
    return fail("not measured: " + created.status().message());
  cuda::CudaBackend &backend = *created.value();

  double bandwidth = deviceBandwidth();
  cellpack::Precision precision = artifact->model().precision();
  std::printf("cell %s of %s on %s; precision %s; device bandwidth %.0f GB/s "
              "(device-to-device copy)\n",
              cell->name()->c_str(), options.modelPath.c_str(),
              backend.device().describe().c_str(),
              cellpack::EnumNamePrecision(artifact->model().precision()),
              bandwidth / 1e9);
  std::printf("programmatic dependent launch: %s\n",
              cuda::programmaticLaunchRequested()
                  ? "on (used for code built for sm_90 and later; "
                    "CELLRUN_CUDA_PDL=0 turns it off)"
                  : "off (CELLRUN_CUDA_PDL=0)");
  std::printf("%6s %16s %12s %12s %10s %12s %12s %8s %8s %8s %8s %8s\n",
              "batch", "largest GEMM", "latency(us)", "task(us)", "plan(us)",
              "cuBLAS(us)", "weights(us)", "ratio", "plan/fl", "host", "launch",
              "graph");
  std::ofstream csv;
  if (!options.csvPath.empty()) {
    csv.open(options.csvPath);
    csv << "batch,m,n,k,latency_us,task_us,plan_us,cublas_us,weight_read_us,"
           "floor_us,ratio,plan_ratio,host_submit_us,host_launch_us,"
           "host_graph_launch_us\n";
  }
  std::vector<std::string> algorithms;
  CellBench bench{backend, *cell, bandwidth, precision, csv, algorithms};
  for (const cellpack::BatchPlan *plan : *cell->plans())
    if (!timeBatch(bench, *plan))
      return 1;
  if (options.backend.graphs) {
    Executor::Times times = backend.times();
    std::printf("\n--graphs: %llu plans launched as CUDA graphs (%llu "
                "captured), %llu kernel by kernel before their capture, %llu "
                "kernel by kernel\n",
                (unsigned long long)times.planGraphLaunches,
                (unsigned long long)times.planGraphCaptures,
                (unsigned long long)times.planFirstRuns,
                (unsigned long long)times.plansLaunchedDirectly);
  }
  std::printf("\nhost, launch, graph: the host's microseconds a task in "
              "submit (its waits for a slot left out), a plan's launches "
              "enqueued one by one, and one launch of the plan captured as a "
              "CUDA graph\n");
  std::printf("\nGEMM choices made at load time (cuBLASLt's fastest proposal "
              "against the skinny kernel):\n");
  for (const std::string &line : algorithms)
    std::printf("  %s\n", line.c_str());
  return 0;
}
