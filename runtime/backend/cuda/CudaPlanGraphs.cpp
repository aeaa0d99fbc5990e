//===- CudaPlanGraphs.cpp - A task's plan launched as a CUDA graph --------===//
#include "CudaPlanGraphs.h"

#include "CudaCheck.h"

#include <cstdio>
#include <functional>

using namespace cellrun;
using namespace cellrun::cuda;

PlanGraphs::~PlanGraphs() {
  for (auto &entry : graphs_)
    if (entry.second.exec)
      cudaGraphExecDestroy(entry.second.exec);
}

size_t PlanGraphs::KeyHash::operator()(const Key &key) const {
  size_t hash = std::hash<const void *>()(key.runner);
  auto mix = [&hash](size_t value) {
    hash ^= value + 0x9e3779b97f4a7c15ull + (hash << 6) + (hash >> 2);
  };
  mix(std::hash<const void *>()(key.inputRows));
  mix(std::hash<const void *>()(key.outputRows));
  mix(std::hash<int64_t>()(key.rows));
  return hash;
}

bool PlanGraphs::samePools(const Graph &graph, const DeviceTaskViews &views) {
  size_t inputs = views.inputs.size();
  if (graph.pools.size() != inputs + views.outputs.size())
    return false;
  for (size_t i = 0; i < inputs; ++i)
    if (graph.pools[i] != views.inputs[i])
      return false;
  for (size_t i = 0; i < views.outputs.size(); ++i)
    if (graph.pools[inputs + i] != views.outputs[i])
      return false;
  return true;
}

void PlanGraphs::turnOff(const std::string &why) {
  (void)cudaGetLastError(); // the refusal is not a later call's error
  off_ = true;
  std::fprintf(stderr,
               "cellrun: CUDA graphs turned off on device %d (%s); task "
               "plans launch kernel by kernel\n",
               device_, why.c_str());
}

Status PlanGraphs::enqueueDirectly(const CudaTaskRunner &runner, int64_t rows,
                                   const DeviceTaskViews &views,
                                   cudaStream_t stream) {
  ++counts_.direct;
  return runner.enqueue(rows, views, stream);
}

Result<cudaGraphExec_t> PlanGraphs::capture(const CudaTaskRunner &runner,
                                            int64_t rows,
                                            const DeviceTaskViews &views,
                                            cudaStream_t stream,
                                            std::string &refusal) {
  // What the driver refused, when it is no fault of the device (not a
  // later call's error either).
  auto refused = [&refusal](const std::string &why) -> Result<cudaGraphExec_t> {
    (void)cudaGetLastError();
    refusal = why;
    return static_cast<cudaGraphExec_t>(nullptr);
  };
  cudaError_t began =
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (began != cudaSuccess) {
    if (isStickyCudaError(began))
      return cudaFailure(began, "cudaStreamBeginCapture", __FILE__, __LINE__);
    return refused(std::string("cudaStreamBeginCapture: ") +
                   cudaGetErrorString(began));
  }
  Status enqueued = runner.enqueue(rows, views, stream);
  cudaGraph_t graph = nullptr;
  cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (!enqueued.isOk() || ended != cudaSuccess) {
    if (graph)
      cudaGraphDestroy(graph);
    if (ended != cudaSuccess && isStickyCudaError(ended))
      return cudaFailure(ended, "cudaStreamEndCapture", __FILE__, __LINE__);
    return refused(enqueued.isOk()
                       ? std::string("cudaStreamEndCapture: ") +
                             cudaGetErrorString(ended)
                       : "the plan under capture: " + enqueued.message());
  }
  cudaGraphExec_t exec = nullptr;
  cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (made != cudaSuccess) {
    if (isStickyCudaError(made))
      return cudaFailure(made, "cudaGraphInstantiate", __FILE__, __LINE__);
    return refused(std::string("cudaGraphInstantiate: ") +
                   cudaGetErrorString(made));
  }
  return exec;
}

Status PlanGraphs::enqueue(const CudaTaskRunner &runner, int64_t rows,
                           const DeviceTaskViews &views, cudaStream_t stream) {
  if (off_)
    return enqueueDirectly(runner, rows, views, stream);
  Key key{&runner, views.inputRows, views.outputRows, rows};
  auto found = graphs_.find(key);
  bool known = found != graphs_.end() && samePools(found->second, views);
  if (!known) {
    // First sight of the key (or of these pools): the plan runs kernel by
    // kernel, which loads its kernels (lazily loaded modules load at a
    // kernel's first use, and a load is no part of a capture) and leaves
    // plans of a row count met once uncaptured; the next task of the key
    // captures it.
    if (found == graphs_.end() && graphs_.size() >= limit_)
      return enqueueDirectly(runner, rows, views, stream);
    Graph &graph = graphs_[key];
    if (graph.exec) // one of other pools
      cudaGraphExecDestroy(graph.exec);
    graph.exec = nullptr;
    graph.pools = views.inputs;
    graph.pools.insert(graph.pools.end(), views.outputs.begin(),
                       views.outputs.end());
    ++counts_.firstRuns;
    return runner.enqueue(rows, views, stream);
  }
  Graph *graph = &found->second;
  if (!graph->exec) {
    std::string refusal;
    auto captured = capture(runner, rows, views, stream, refusal);
    if (!captured.ok())
      return captured.status();
    if (!captured.value()) {
      // Refused under capture: the task launches directly. If that fails
      // too, the plan was at fault, not the capture: its error is the
      // caller's and graphs stay on; otherwise they go off.
      CELL_TRY(enqueueDirectly(runner, rows, views, stream));
      turnOff(refusal);
      return Status::ok();
    }
    graph->exec = captured.value();
    ++counts_.captures;
  }
  cudaError_t launched = cudaGraphLaunch(graph->exec, stream);
  if (launched == cudaSuccess) {
    ++counts_.graphLaunches;
    return Status::ok();
  }
  if (isStickyCudaError(launched))
    return cudaFailure(launched, "cudaGraphLaunch", __FILE__, __LINE__);
  turnOff(std::string("cudaGraphLaunch: ") + cudaGetErrorString(launched));
  return enqueueDirectly(runner, rows, views, stream);
}
