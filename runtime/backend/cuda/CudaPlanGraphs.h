//===- CudaPlanGraphs.h - A task's plan as a CUDA graph ---------*- C++ -*-===//
//
// ExecutorOptions::cudaGraphs: the plan of a task (its GEMMs and kernels,
// CudaTaskRunner::enqueue) is captured once for each runner, pools, row
// indices on the device and active rows, and afterwards launched as one
// graph: one call on the host instead of one for every launch. The cuda
// backend's views of a cell's pools and of the row indices in its device
// staging area are the same for every task, so a batch-b plan meets at
// most b keys. A key's first task launches kernel by kernel (its kernels
// load then, not under a capture; a row count met once costs no capture),
// its second captures the graph, up to a limit of keys, past which the
// plan launches kernel by kernel. A capture, instantiation or launch
// the driver refuses turns graphs off for the backend (said once on
// stderr, with why) and the task launches kernel by kernel; only a
// broken device is an error.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CUDA_CUDAPLANGRAPHS_H
#define CELLRUN_BACKEND_CUDA_CUDAPLANGRAPHS_H

#include "CudaTaskRunner.h"

#include <cuda_runtime_api.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace cellrun::cuda {

class PlanGraphs {
public:
  /// At most `limit` graphs are kept (their device memory is small: the
  /// launches' parameters); `device` names the device in the message.
  PlanGraphs(size_t limit, int device) : limit_(limit), device_(device) {}
  ~PlanGraphs();
  PlanGraphs(const PlanGraphs &) = delete;
  PlanGraphs &operator=(const PlanGraphs &) = delete;

  /// Enqueues `runner`'s plan for `rows` rows of `views` on `stream`: the
  /// graph of that key, captured first when it is new.
  Status enqueue(const CudaTaskRunner &runner, int64_t rows,
                 const DeviceTaskViews &views, cudaStream_t stream);

  struct Counts {
    /// Plans launched as a graph, graphs captured (each also launched),
    /// plans launched kernel by kernel as their key's first task (before
    /// its capture), and the others launched kernel by kernel (past the
    /// limit, or with graphs turned off).
    uint64_t graphLaunches = 0, captures = 0, firstRuns = 0, direct = 0;
  };
  const Counts &counts() const { return counts_; }

private:
  struct Key {
    const CudaTaskRunner *runner;
    const int32_t *inputRows, *outputRows;
    int64_t rows;
    bool operator==(const Key &other) const {
      return runner == other.runner && inputRows == other.inputRows &&
             outputRows == other.outputRows && rows == other.rows;
    }
  };
  struct KeyHash {
    size_t operator()(const Key &key) const;
  };
  struct Graph {
    /// The pools it was seen (captured) with: inputs, then outputs.
    std::vector<void *> pools;
    cudaGraphExec_t exec = nullptr; // null: seen once, not yet captured
  };
  static bool samePools(const Graph &graph, const DeviceTaskViews &views);
  /// Captures and instantiates the plan; null, with why in `refusal`,
  /// when the driver refused.
  Result<cudaGraphExec_t> capture(const CudaTaskRunner &runner, int64_t rows,
                                  const DeviceTaskViews &views,
                                  cudaStream_t stream, std::string &refusal);
  /// Graphs off from now on, said on stderr.
  void turnOff(const std::string &why);
  Status enqueueDirectly(const CudaTaskRunner &runner, int64_t rows,
                         const DeviceTaskViews &views, cudaStream_t stream);

  size_t limit_;
  int device_;
  std::unordered_map<Key, Graph, KeyHash> graphs_;
  Counts counts_;
  bool off_ = false; // turnOff() was called
};

} // namespace cellrun::cuda

#endif // CELLRUN_BACKEND_CUDA_CUDAPLANGRAPHS_H
