//===- Engine.h - Serving requests with cellular batching ------*- C++ -*-===//
//
// The public C++ API of the runtime: load an artifact, submit requests from
// any thread, get each result through a callback or a future as soon as the
// request is done. Inside, one worker per device runs the loop: admit
// requests whose state rows fit the pools (others wait in a bounded queue;
// when it is full, submit fails at once with ResourceExhausted), unfold them
// into cell graphs, ask the batching policy for tasks and run them on the
// executor:
//  - cellular (default): Algorithm 1 of BatchMaker; requests join and leave
//    the running batch at every cell step;
//  - padded: length buckets, requests padded to the longest of their batch,
//    a batch runs to its end (TensorFlow/MXNet style); sequences only;
//  - graph: up to a batch of requests merged and run level by level to the
//    end (DyNet/TensorFlow Fold style).
// Every policy computes the same outputs for a request; they differ in when
// work runs and when results return.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_ENGINE_H
#define CELLRUN_ENGINE_H

#include "cellrun/Device.h"
#include "cellrun/Model.h"
#include "cellrun/Request.h"
#include "cellrun/RequestParser.h"

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

namespace cellrun {

enum class Policy { Cellular, Padded, Graph };
/// "cellular", "padded" or "graph".
Result<Policy> parsePolicy(std::string_view text);
const char *policyName(Policy policy);

/// One task as it ran (EngineOptions::onTask).
struct TaskRecord {
  uint32_t worker = 0;
  uint32_t cellType = 0;    // index into EngineStats::cells
  uint32_t nodes = 0;       // cell invocations of requests
  uint32_t paddingRows = 0; // padded policy: rows computed for nobody
  uint32_t batchSize = 0;   // the plan it ran with
  bool failed = false;
  /// Steady-clock times: bound and submitted, and seen finished.
  std::chrono::steady_clock::time_point submitted, finished;
};

struct EngineOptions {
  Policy policy = Policy::Cellular;
  ExecutorOptions executor;
  /// Rows of every state pool: the memory budget requests are admitted
  /// against.
  uint32_t poolRows = 4096;
  /// Requests waiting for admission; beyond it submit fails at once.
  uint32_t maxQueue = 1024;
  uint32_t maxTasksToSubmit = 5; // cellular
  /// Cellular: a decoder (a tree's internal nodes) with fewer ready nodes
  /// than this waits a few rounds while its encoders (leaves) have at
  /// least as many ready, so that its tasks fill (0: never waits).
  uint32_t fillRows = 32;
  uint32_t bucketWidth = 8;   // padded: lengths per bucket
  uint32_t batchRequests = 0; // padded, graph: 0 = the largest batch size
  RequestLimits limits;
  /// Workers, each with its own thread, executor and pools: on cuda,
  /// `workersPerDevice` of them share each device (worker w runs on device
  /// executor.cudaDevice + w / workersPerDevice, on a stream of its own);
  /// on the cpu backend each worker has its own threads. A request is
  /// admitted by a least loaded worker (give or take admissionSlack).
  uint32_t workers = 1;
  /// Several workers: the worker admitting the head of the queue goes on
  /// admitting while no other it fits has more room (the free share of
  /// its tightest pool) by more than this (0..1). 0: strict turns, most
  /// room first, which spreads a few requests over every worker but
  /// leaves each worker's tasks a few rows when they keep up with
  /// arrivals; the default lets requests start in bunches that fill tasks.
  double admissionSlack = 0.25;
  /// cuda: workers sharing one device (at least 1). Several engine threads
  /// feed one GPU when one thread's host work a step is longer than the
  /// device's work (short steps, large emitted rows).
  uint32_t workersPerDevice = 1;
  /// Cellular batching on several workers: a worker that holds at least
  /// twice as many requests as another (plus 2), and has less room than it
  /// by more than admissionSlack, moves half the difference
  /// of its requests with no node running, most nodes left first, to that
  /// worker; the rows they hold are copied there (Algorithm 1: a subgraph
  /// with no node running is not pinned). Session chunks and custom
  /// unfolders' requests stay. false: a request runs where it was admitted.
  bool moveRequests = true;
  /// Cellular batching of a chain model whose outputs are fp32 or int64:
  /// running requests are kept in a persistent batch of flat arrays that
  /// each task is bound from, instead of going through the scheduler node
  /// by node (the same results; less host work a row-step). false: the
  /// scheduler runs them too (for comparison).
  bool chainBatch = true;
  /// Which running chains of the persistent batch a task takes (cellular
  /// batching; requests with a deadline go by earliest deadline either
  /// way). Turns: every chain in every task while they fit one, else
  /// tasks of the largest batch taking turns. LongestFirst, for a known
  /// set of requests (a file, an offline batch): each task takes the
  /// chains with the most steps left, as many as spread the steps left
  /// evenly over the tasks the longest chain still needs (ceil(steps left /
  /// the most steps left), at most the largest batch). The run then takes
  /// as many tasks as its longest chain has steps (more only where the
  /// largest batch caps them), all about equally full, instead of ending in
  /// tasks of a few rows that read the whole weights each; short requests
  /// wait for it, so it is not for serving live traffic. While a request
  /// waits at the head of the queue (for room in the pools, or for another
  /// worker to take it), the tasks take turns (the short requests
  /// finishing make room). A streaming session's next chunk, waiting
  /// behind its running one, is not in that queue: it may wait for the
  /// longest chain.
  enum class ChainOrder { Turns, LongestFirst };
  ChainOrder chainOrder = ChainOrder::Turns;
  /// The persistent batch taking turns: the requests a worker runs at
  /// once; more wait in the queue. 0: the cell's largest batch size, one
  /// task's worth, so each running request steps in every task of a round
  /// and what a round touches (the requests' rows, results and records)
  /// stays in the caches. Pools with room for more let a worker admit
  /// several tasks' worth that then took turns, each request a step every
  /// few tasks: longer latency, no more rows a task, and on a 2 MB
  /// second-level cache slower a row-step (docs/runtime.md). LongestFirst
  /// admits every request that fits (it orders the whole set); requests
  /// with a deadline, sessions' chunks and cancelled requests start
  /// whenever they fit. Requests the cap holds back count in maxQueue.
  uint32_t maxRunning = 0;
  /// The rows the host reads (emitted rows, final states) reach their
  /// destinations only when each task is waited for, as on an asynchronous
  /// executor (the cuda backend), even on the cpu one (which then takes
  /// them at submit and delivers them at wait): the tests run the GPU's
  /// path this way.
  bool readsThroughTasks = false;
  /// false: no worker threads; the caller drives the loop with runOnce()
  /// (deterministic tests, offline runs).
  bool startWorker = true;
  /// Complete a round only after submitting the next one, so the device
  /// always has work queued: Auto does so on asynchronous executors (cuda);
  /// On forces it on the cpu backend too (tests of the bookkeeping).
  enum class Overlap { Auto, On, Off };
  Overlap overlapRounds = Overlap::Auto;
  /// Streaming sessions (Request::session) idle for longer than this many
  /// seconds are closed and their state freed; 0: never.
  double sessionTimeoutSeconds = 0;
  /// Called on the worker for every task once it has finished (a task log,
  /// metrics); keep it short.
  std::function<void(const TaskRecord &)> onTask;
};

/// "turns" or "longest-first" (EngineOptions::chainOrder).
Result<EngineOptions::ChainOrder> parseChainOrder(std::string_view text);
const char *chainOrderName(EngineOptions::ChainOrder order);

struct CellTypeStats {
  std::string name;
  uint64_t tasks = 0;
  uint64_t nodes = 0;        // cell invocations of requests
  uint64_t paddingRows = 0;  // padded policy: rows computed for nobody
  uint64_t batchSizeSum = 0; // the plans' batch sizes
  double meanTaskRows() const {
    return tasks ? double(nodes + paddingRows) / tasks : 0;
  }
};

struct EngineStats {
  uint64_t submitted = 0, completed = 0, failed = 0, rejected = 0;
  /// Ended by Engine::cancel or cancelAll (not counted as failed).
  uint64_t cancelled = 0;
  uint64_t deadlineMisses = 0;
  uint32_t waiting = 0, running = 0;
  /// State memory, over every worker's pools: bytes requests may reserve
  /// (the budget) and bytes reserved by admitted requests now.
  uint64_t poolBytesBudget = 0, poolBytesReserved = 0;
  /// Streaming sessions open now, opened so far (every sequence_start that
  /// was accepted), and closed by the idle timeout so far.
  uint64_t sessionsOpen = 0, sessionsStarted = 0, sessionsExpired = 0;
  std::vector<CellTypeStats> cells;  // summed over the workers
  std::vector<uint64_t> workerTasks; // tasks each worker ran
  /// Workers still serving: one whose executor is lost (a GPU after a
  /// sticky error) fails what it held and stops; at 0 the engine refuses
  /// every request with Unavailable.
  uint32_t workersInService = 0;
  /// Requests moved from one worker to another (EngineOptions::moveRequests).
  uint64_t requestsMoved = 0;
  /// Tasks bound from the persistent chain batch (EngineOptions::chainBatch).
  uint64_t chainBatchTasks = 0;
  /// Requests whose projected inputs (cellc --hoist-input-projections) were
  /// computed at admission: their products kept in the pool rows the steps
  /// read, and read back into their own step rows (the other policies, or
  /// pools too full to keep them: EngineWorker::placeProducts).
  uint64_t productsInPoolRows = 0, productsThroughStepRows = 0;
  /// Where the workers' time went, summed over them: seconds in rounds
  /// that did something (admission, planning, binding, tasks, completion),
  /// and the part of it in the executor's task calls (on the cpu backend
  /// the tasks' computation; on cuda, submitting and waiting for the
  /// device). The rest is the host path.
  double roundSeconds = 0, executorSeconds = 0;
  /// Of executorSeconds on an asynchronous device (cuda): the seconds
  /// blocked until the device had finished what was waited for, and those
  /// copying finished tasks' rows out to the results.
  double executorBlockedSeconds = 0, executorDeliverSeconds = 0;
  /// The rows read back from the device: copied into the results by the
  /// host, and written there by the device (ExecutorOptions::pinnedResults).
  uint64_t executorDeliveredRows = 0, executorDeviceWrittenRows = 0;
  /// Task plans launched as a CUDA graph, graphs captured, plans launched
  /// kernel by kernel as the first task of their rows (before their
  /// capture), and the other plans launched kernel by kernel
  /// (ExecutorOptions::cudaGraphs).
  uint64_t executorPlanGraphLaunches = 0, executorPlanGraphCaptures = 0,
           executorPlanFirstRuns = 0, executorPlansLaunchedDirectly = 0;
  /// The tasks' spans on the device, summed, and the tasks timed
  /// (ExecutorOptions::timeDevice; several workers' streams on one device
  /// may overlap).
  double executorDeviceSeconds = 0;
  uint64_t executorDeviceTimedTasks = 0;
  uint64_t rowSteps() const {
    uint64_t nodes = 0;
    for (const CellTypeStats &cell : cells)
      nodes += cell.nodes;
    return nodes;
  }
};

class Engine {
public:
  using Callback = std::function<void(RequestResult)>;

  static Result<std::unique_ptr<Engine>>
  create(std::shared_ptr<const LoadedArtifact> artifact,
         const EngineOptions &options);
  /// Finishes the requests already admitted, then stops.
  ~Engine();
  /// What create() would refuse of `artifact` on any backend, beyond the
  /// loader's checks: an unusable unfolding, or a batch plan that cannot be
  /// prepared (checked by preparing every plan on the cpu backend).
  static Status check(std::shared_ptr<const LoadedArtifact> artifact);

  const RequestParser &parser() const;
  /// Where `worker` runs its tasks: "cpu (2 threads)" or the CUDA
  /// device's description.
  std::string deviceDescription(uint32_t worker = 0) const;
  uint32_t workers() const;
  const EngineOptions &options() const;

  /// Queues `request` (checked first); `done` is called exactly once, on
  /// the worker, unless an error is returned here (queue full:
  /// ResourceExhausted; a bad request: InvalidArgument; no worker left
  /// serving: Unavailable).
  Status submit(Request request, Callback done);
  /// The same with a future; errors arrive through the future too.
  std::future<RequestResult> submit(Request request);
  /// Refuses now, without a request, when submit would refuse any request
  /// for load: no worker serving (Unavailable) or the queue full
  /// (ResourceExhausted), counted as rejected like submit's refusals (so
  /// call it once per request you refuse with it); ok otherwise, counting
  /// nothing (submit checks again). A front end calls it before it decodes
  /// a body, so an overloaded server refuses at once and cheaply.
  Status refuseForLoad();
  /// True when the queue has room for a request now (an offline caller
  /// waits for it instead of being refused).
  bool hasRoom() const;

  /// Ends the request submitted with `token` (Request::cancel) early, with
  /// a Cancelled status "request <id> was cancelled: <reason>". One still
  /// waiting is answered at once, on this thread (a session's chunk once it
  /// is admitted, closing its session); an admitted one at its worker's
  /// next round: none of its nodes is bound again and its rows go back as
  /// the tasks holding them finish. Nothing happens when it has been
  /// answered already; a token cancelled before submit makes submit refuse.
  void cancel(const std::shared_ptr<CancelToken> &token,
              const std::string &reason);
  /// The same for every request submitted so far that has not been
  /// answered (a server's shutdown after its drain deadline).
  void cancelAll(const std::string &reason);

  /// Manual mode: one round of the loop on every worker (admission, one
  /// call to the policy, its tasks run). False when there was nothing to do,
  /// and always once the worker threads run (they alone run the loop).
  bool runOnce();
  /// Manual mode: rounds until every submitted request is done. Returns at
  /// once when the worker threads run: wait for the answers instead.
  void drain();
  /// Manual mode: starts the worker threads, which serve from here on as
  /// if startWorker had been true (runOnce and drain are not called any
  /// more). An offline batch submitted before starts in full: the first
  /// round sees every request that fits.
  void startWorkers();

  EngineStats stats() const;

  /// The runtime's own; an Engine is made by create().
  class Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  Impl &impl() const { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace cellrun

#endif // CELLRUN_ENGINE_H
