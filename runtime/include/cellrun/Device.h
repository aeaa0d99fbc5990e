//===- Device.h - Which backend runs the tasks -----------------*- C++ -*-===//
//
// `--device cuda|cpu|auto`: cuda needs a usable CUDA device; auto takes it
// when there is one and falls back to the CPU backend otherwise, saying why
// in one line. The probe goes through the CUDA runtime (linked statically;
// never the driver stub), so a machine without a driver or a GPU gets a
// "no CUDA device" status, not a crash. ExecutorOptions says how a
// worker's tasks run on the chosen backend.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_DEVICE_H
#define CELLRUN_DEVICE_H

#include "cellrun/Status.h"

#include <cstddef>
#include <string>
#include <string_view>

namespace cellrun {

enum class DeviceChoice { Cpu, Cuda, Auto };
enum class DeviceKind { Cpu, Cuda };

/// "cpu", "cuda" or "auto"; InvalidArgument otherwise.
Result<DeviceChoice> parseDeviceChoice(std::string_view text);

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int computeCapability = 0; // e.g. 90 for sm_90
  size_t memoryBytes = 0;
  int multiprocessors = 0;
  std::string describe() const; // "cuda:0 NVIDIA H100 (sm_90, 79.1 GiB)"
};

/// The CUDA device `index`, or Unavailable "no CUDA device: <reason>".
Result<CudaDeviceInfo> probeCudaDevice(int index = 0);

/// The backend for `choice`: Cuda when asked for and usable (Unavailable
/// otherwise); for Auto, Cuda when usable, else Cpu with `note` set to the
/// one-line reason.
Result<DeviceKind> resolveDevice(DeviceChoice choice, std::string &note);

/// How an engine worker runs its tasks (EngineOptions::executor).
struct ExecutorOptions {
  DeviceKind device = DeviceKind::Cpu;
  /// cpu: threads that share a task's GEMM columns and kernel rows;
  /// 0: one per core (std::thread::hardware_concurrency).
  unsigned threads = 0;
  /// cuda: the device index and how many tasks may be in flight.
  int cudaDevice = 0;
  unsigned tasksInFlight = 4;
  /// Benchmarks of the host path only (bench/host_bench): cpu tasks move
  /// their rows in and out but compute nothing, so what is timed is the
  /// runtime's own work. Results are meaningless.
  bool nullTasks = false;
  /// cpu: the rows a task reads back are taken from the pools when it is
  /// submitted and copied to their destinations only when it is waited
  /// for, as the cuda backend delivers them (EngineOptions::
  /// readsThroughTasks: the GPU's path on the CPU, tests).
  bool readsAtWait = false;
  /// cuda: threads (the caller included) that copy a task's rows from its
  /// staging slot into their destinations (the results) when they come to
  /// 256 KB or more; 0: a quarter of the cores, at most 4 (1: the caller
  /// alone). The cpu backend uses its task threads for it.
  unsigned copyThreads = 0;
  /// cpu: a task's rows copied into the results are shared among its
  /// threads when they come to this many bytes or more (a first write into
  /// fresh result memory faults its pages in, as long again as the copy
  /// at hidden 1024); fewer are copied on the calling thread. Tests lower
  /// it so that small models take the shared way too.
  size_t sharedCopyBytes = 256 * 1024;
  /// cuda: request and result values live in page-locked host memory that
  /// the device maps (at most a quarter of the machine's memory, 8 GiB; for
  /// the rest of the process, since results outlive the engine), and a
  /// task's kernels write its read rows straight into the results: no copy
  /// back through the staging slot, none by the host after the task. Rows
  /// whose destination is elsewhere (memory allocated before, a vector over
  /// 64 MiB, past the limit, off its copy unit), rows under 256 bytes
  /// (cheaper staged) and cells compiled before the kernel existed go the
  /// staged way. Unsupported on a device that cannot use host pointers
  /// directly.
  bool pinnedResults = false;
  /// cuda: a task's GEMMs and kernels launched as one CUDA graph, captured
  /// the first time a cell's batch plan runs a number of rows (at most
  /// cudaGraphLimit graphs a worker; past them, and when the driver refuses
  /// a capture, kernel by kernel as without).
  bool cudaGraphs = false;
  unsigned cudaGraphLimit = 2048;
  /// cuda: each task's span on the device (from its copy in to its ticket's
  /// copy out, in stream order) timed by two CUDA events, the spans summed
  /// in Executor::Times::deviceSeconds: the time the stream held a task
  /// (its wait, within the task, for the host's next launch included), so
  /// the rest of the wall time is the device waiting for the engine's next
  /// task (`cellrun run --time-device`). Costs the host two event records
  /// and one elapsed-time query a task.
  bool timeDevice = false;
};

} // namespace cellrun

#endif // CELLRUN_DEVICE_H
