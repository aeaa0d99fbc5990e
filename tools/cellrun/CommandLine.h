//===- CommandLine.h - Subcommands and their command lines ------*- C++ -*-===//
//
// Every subcommand of cellrun describes its options with CLI11 and parses
// them through parseCommandLine: `--help` prints the help, an unknown
// option, a missing value or a bad value is an error with exit code 2.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_COMMANDLINE_H
#define CELLRUN_TOOLS_COMMANDLINE_H

#include "cellrun/Engine.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace cellrun::tool {

/// Exit codes of cellrun.
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1; // the command ran and failed (bad artifact)
constexpr int kExitUsage = 2;   // the command line is wrong

/// Parses `args` (the subcommand's arguments) with `app`. Returns nothing
/// to go on, or the exit code to return at once: 0 after printing the help,
/// 2 after printing "cellrun NAME: <what is wrong>".
std::optional<int> parseCommandLine(CLI::App &app,
                                    const std::vector<std::string> &args);

/// The help of --fill-rows (run, bench): EngineOptions::fillRows.
constexpr const char *kFillRowsHelp =
    "cellular: a decoder (a tree's internal nodes) with fewer ready nodes "
    "than this waits up to 4 rounds while its encoders (leaves) have at "
    "least as many ready, so its tasks fill (0: never waits)";

/// The help of --chain-order (run): EngineOptions::chainOrder.
constexpr const char *kChainOrderHelp =
    "cellular, a chain model: which running requests a task takes. turns: "
    "all while they fit a task, else taking turns; longest-first, for a "
    "file of requests: serving starts once --max-queue requests wait or the "
    "input has ended, and each task takes the most steps left first, as "
    "many as spread the steps left evenly over the tasks the longest "
    "request still needs, so the run ends sooner (no long tail of tasks of "
    "a few rows) and short requests wait (not for live traffic)";

/// The help of --max-running (run, bench, serve): EngineOptions::maxRunning.
constexpr const char *kMaxRunningHelp =
    "cellular, a chain model taking turns: requests a worker runs at once, "
    "the rest waiting in the queue (0: the largest batch size, one task's "
    "worth, so each running request steps in every task)";

/// The check of --chain-order (run, bench): a name parseChainOrder takes.
inline CLI::Validator chainOrderCheck() {
  return CLI::Validator(
      [](std::string &text) {
        auto order = parseChainOrder(text);
        return order.ok() ? std::string() : order.status().message();
      },
      "turns|longest-first");
}

/// The help of --no-move (run, bench, serve): EngineOptions::moveRequests.
constexpr const char *kNoMoveHelp =
    "with several --workers: a request runs where it was admitted (by "
    "default a worker holding at least twice the requests of another moves "
    "running requests there, their rows copied)";

/// The help of --no-chain-batch (run, bench, serve): EngineOptions::chainBatch.
constexpr const char *kNoChainBatchHelp =
    "a chain model: run its requests through the scheduler node by node, "
    "as other structures (by default they are slots "
    "of a persistent batch each task is bound from; the same results)";

/// The help of --copy-threads (run, bench, serve): ExecutorOptions::
/// copyThreads.
constexpr const char *kCopyThreadsHelp =
    "cuda: threads (the engine's own included) that copy a finished task's "
    "rows into the results when they come to 256 KB or more (0: a quarter "
    "of the cores, at most 4; 1: the engine's thread alone)";

/// The help of --pinned-results (run, bench, serve): ExecutorOptions::
/// pinnedResults.
constexpr const char *kPinnedResultsHelp =
    "cuda: keep request and result values in page-locked memory the GPU "
    "maps (up to a quarter of the machine's memory, 8 GiB), so that a task "
    "writes its emitted rows straight into the results instead of the host "
    "copying them there";

/// The help of --cuda-graphs (run, bench, serve): ExecutorOptions::
/// cudaGraphs.
constexpr const char *kCudaGraphsHelp =
    "cuda: launch a task's GEMMs and kernels as one CUDA graph, captured "
    "the second time a batch plan runs a number of rows (up to 2048 graphs "
    "a worker, then kernel by kernel)";

/// The help of --time-device (run, serve): ExecutorOptions::timeDevice.
constexpr const char *kTimeDeviceHelp =
    "cuda: time each task on the device (two CUDA events a task) and report "
    "the time a task was on the stream";

/// The help of --workers-per-device (run, bench, serve):
/// EngineOptions::workersPerDevice.
constexpr const char *kWorkersPerDeviceHelp =
    "cuda: workers sharing each device, each with its own thread, stream "
    "and pools (--workers 4 --workers-per-device 2: two on device 0, two "
    "on device 1); more engine threads for one GPU when one cannot keep it "
    "busy";

/// The help of --memory-budget (run, bench, serve).
constexpr const char *kMemoryBudgetHelp =
    "state memory for requests on each worker, e.g. 2GB (overrides "
    "--pool-rows)";

/// The pool rows a state memory budget of `budgetBytes` buys when every
/// row type costs `bytesPerRow` together (ModelInfo::poolBytesPerRow), at
/// most 2^28; nothing (the message in `error`) when it is less than two
/// rows.
std::optional<uint32_t> poolRowsOfBudget(uint64_t budgetBytes,
                                         uint64_t bytesPerRow,
                                         std::string &error);

/// "--cuda-graphs and --time-device have no effect on the cpu backend":
/// the options of the cuda backend set in `executor` while it runs on the
/// cpu, by their flags; empty on cuda or when none is set.
std::string cudaOnlyFlagsNote(const ExecutorOptions &executor);

/// One subcommand of cellrun: `cellrun <name> ARGS...`.
struct Subcommand {
  const char *name;
  const char *summary; // one line for `cellrun --help`
  int (*run)(const std::vector<std::string> &args); // returns the exit code
};

} // namespace cellrun::tool

#endif // CELLRUN_TOOLS_COMMANDLINE_H
