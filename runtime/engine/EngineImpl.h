//===- EngineImpl.h - The engine's state and loop --------------*- C++ -*-===//
//
// EngineWorker, one per device: the thread that admits waiting requests
// (from the queue submit() fills from any thread) against its pools' rows,
// asks
// the batching policy for tasks, binds each task's nodes to pool rows
// (request data written into fresh rows, states read in place from the rows
// their producers wrote, zeros from one reserved zero row per pool, padding
// rows written to scratch rows), runs it on the executor, and grows the cell
// graphs with what the host read back.
//
// Rounds: each call of the loop asks the policy once and submits all its
// tasks. On an asynchronous executor (cuda) a round is completed only after
// the next one has been submitted, so the device always has work queued
// while the host completes the previous round and plans the next.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHED_ENGINEIMPL_H
#define CELLRUN_SCHED_ENGINEIMPL_H

#include "ChainSlots.h"
#include "EngineRecords.h"
#include "PoolCounts.h"
#include "SlotTable.h"
#include "sched/BatchingPolicy.h"

#include "artifact/Artifact.h"
#include "engine/EngineTesting.h"
#include "exec/Executor.h"

#include "cellrun/Engine.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

namespace cellrun {

struct AdmissionQueue;

/// "request <id> was cancelled: <reason>" (StatusCode::Cancelled).
Status cancelledStatus(const std::string &id, const std::string &reason);

/// One device: its executor, batching policy, requests and thread.
class EngineWorker {
public:
  using Callback = Engine::Callback;
  using Entry = EngineEntry;
  using PoolState = EnginePoolState;
  using PartPools = EnginePartPools;
  using ChainInput = EngineChainInput;

  /// `index` picks the CUDA device (options.executor.cudaDevice +
  /// index / options.workersPerDevice);
  /// requests come from `admission`, shared by every worker.
  Status initialise(std::shared_ptr<const LoadedArtifact> artifact,
                    const EngineOptions &options, uint32_t index,
                    AdmissionQueue *admission, FaultInjector injectFault);
  /// initialise's parts: the executor (and how many of a chain's nodes may
  /// be bound at once); the batching policy (returns the largest batch
  /// size of any cell); pool ids per cell input and output; the zero and
  /// padding scratch rows of every pool; a chain's inputs sorted into
  /// request data, states and zeros.
  Status createExecutor(FaultInjector injectFault);
  uint32_t createPolicy();
  void mapPools();
  Status reserveFixedRows(uint32_t largestBatch);
  void sortChainInputs();
  bool runOnce();
  /// The rows `graph` may hold at once, per pool id; an error when they
  /// can never fit (or a custom unfolder fails). With `productsInPools`:
  /// whether its projected inputs' products are to stay in pool rows (they
  /// fit; those rows are then in the need).
  Result<std::vector<uint32_t>> needOf(const CellGraph &graph,
                                       bool *productsInPools = nullptr) const;
  /// A chain request's need with its products in pool rows (a row a step).
  std::vector<uint32_t> needWithProducts(uint32_t steps) const;
  /// Where an entry whose products may stay in pools (needOf) puts them if
  /// this worker admits it now: in pool rows while what is left of those
  /// pools still holds a full batch of requests without products in them,
  /// else through its own step rows. Sets its need to match.
  void placeProducts(Entry &entry) const;
  /// needOf for chains and seq2seq: the same for every request (found at
  /// initialisation; empty for other structures).
  std::vector<uint32_t> fixedNeed_;
  /// Runs rounds until this worker has nothing admitted and can take
  /// nothing more; true when something ran or was taken.
  bool drain();
  void workerLoop();
  void startThread(); // the loop on a thread of its own, once
  void stop();

  std::shared_ptr<const LoadedArtifact> artifact_;
  EngineOptions options_;
  uint32_t index_ = 0;
  std::unique_ptr<RequestParser> parser_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<BatchingPolicy> policy_;
  AdmissionQueue *admission_ = nullptr;

  // Worker-owned state: the requests admitted here.
  SlotTable<Entry> entries_;
  /// The engine copies a task's host reads straight into the results
  /// (CellGraph::readTarget): the executor is synchronous.
  bool directReads_ = false;
  /// The outputs of chain requests that ended while a task of theirs was
  /// in flight on an asynchronous executor (a failure, a cancellation): the
  /// executor still writes that task's rows into them, so they are freed
  /// only once the round that last bound them has completed (round, outputs).
  std::vector<std::pair<uint64_t, std::vector<OutputTensor>>> keptOutputs_;
  /// New requests' chain results are placed for every step (the graph's
  /// `directReads`): direct reads, or the chain batch's executor writing
  /// them there.
  bool placesResults() const { return directReads_ || chainBatch_; }
  /// Time in the executor's submit and wait calls during this round
  /// (EngineStats::executorSeconds).
  Clock::duration executorTime_{};
  /// The executor's pools, by id; per part, the pool ids of its cell's
  /// inputs and outputs.
  std::vector<PoolState> pools_;
  std::vector<PartPools> partPools_;
  /// Nodes of one chain that may be bound before the first completes.
  uint32_t nodesInFlight_ = 1;
  /// Rounds overlap: a round is completed after the next is submitted.
  bool overlap_ = false;

  // Shared with stats().
  mutable std::mutex mutex_;
  EngineStats stats_;
  std::thread worker_;
  /// The worker thread has returned (it admits nothing any more).
  std::atomic<bool> exited_{false};
  /// Cancelled requests admitted here (Engine::cancel), and the reason of
  /// an Engine::cancelAll that reached it (under the admission mutex);
  /// whether there are any, read without the mutex every round.
  std::vector<std::shared_ptr<CancelToken>> cancelled_;
  std::optional<std::string> cancelAllReason_;
  uint64_t cancelAllBefore_ = 0; // the admissions it reaches
  std::atomic<bool> cancelPending_{false};
  /// Ends the requests cancelled since the last round (at the start of a
  /// round, before the policy plans: none of their nodes is bound again).
  void endCancelled();
  /// Ends the admitted request `key` with Cancelled, if it is still running.
  void endAsCancelled(uint64_t key, const std::string &reason);
  /// Its executor was lost (Executor::lost): it failed what it held and
  /// admits and runs nothing any more (set with exited_).
  std::atomic<bool> outOfService_{false};
  /// Requests admitted here (and moved here, not yet taken), as other
  /// workers see it when they consider moving requests (EngineMoves.cpp).
  std::atomic<uint32_t> load_{0};
  /// Requests moved here and not taken yet (AdmissionQueue::arriving).
  std::atomic<uint32_t> arriving_{0};
  /// Publishes load_: admitted requests and those on their way here.
  void publishLoad() {
    load_.store(static_cast<uint32_t>(entries_.size()) + arriving_.load(),
                std::memory_order_relaxed);
  }
  /// Running requests may move between workers (EngineOptions::
  /// moveRequests, cellular batching, several workers, no custom unfolder).
  bool movesAllowed_ = false;
  /// Rounds to skip before trying to move again (none could move).
  uint32_t moveBackoff_ = 0;
  /// Moves some of this worker's requests to the least loaded worker when
  /// it holds fewer than half as many (at the start of a round).
  void moveRequests();
  /// Takes the requests other workers moved here, their rows written into
  /// this worker's pools and their remaining nodes handed to the policy;
  /// true when there were any.
  bool takeArrivals();
  /// Nothing admitted and nothing in flight: its reservations are only the
  /// state of parked sessions. Set true by the worker after a round, false
  /// under the admission mutex when it admits.
  std::atomic<bool> idle_{true};

private:
  using ReadSlot = EngineReadSlot;
  using DataRow = EngineDataRow;
  using InFlight = EngineFlight;
  using BindUndo = EngineBindUndo;
  using DeferredRow = EngineDataRow; // a row given back after a submit
  /// Rows whose last reader was bound in the task being launched: they go
  /// back to their pools once it is submitted, for later tasks to write
  /// (tasks run in order on a worker, so the readers have read them by
  /// then). Not for custom unfolders, which may read any finished node.
  bool releaseAtBind_ = false;
  std::vector<DeferredRow> deferredRows_;
  /// Marks the producers of `node` that have no reader left to bind, and
  /// defers their rows (bindNode, once the node is bound).
  void releaseReadRows(Entry &entry, uint32_t node);
  /// Finished flights, cleared, kept for their vectors' capacity; their
  /// nodes and row writes and reads keep their sizes too (stale entries).
  std::vector<InFlight> spareFlights_;
  /// A spare flight (or a new one), its nodes, row writes and reads and
  /// columns empty; `sized`: its nodes and columns left as they were, for a
  /// chain task that sets every field of each entry it keeps (resizing them
  /// from empty would first set each to zero: 5 ns a row-step of the
  /// hidden-16 LSTM).
  InFlight takeFlight(bool sized = false);
  /// Columns of a task's writes and reads (Executor::WriteColumn,
  /// ReadColumn) not in use, their arrays' room kept: a flight that takes
  /// none leaves its columns here and a chain task takes them back.
  std::vector<Executor::WriteColumn> spareWriteColumns_;
  std::vector<Executor::ReadColumn> spareReadColumns_;
  /// `columns` made `size` long, from and into `spare`.
  template <typename Column>
  static void resizeColumns(std::vector<Column> &columns,
                            std::vector<Column> &spare, size_t size) {
    while (columns.size() > size) {
      spare.push_back(std::move(columns.back()));
      columns.pop_back();
    }
    while (columns.size() < size && !spare.empty()) {
      columns.push_back(std::move(spare.back()));
      spare.pop_back();
    }
    columns.resize(size); // new ones past the spares
  }
  void recycle(InFlight &&flight);
  /// Completes `flights` in order, then keeps them for reuse.
  void completeAll(std::vector<InFlight> &flights);
  /// While completeAll runs, requests that end leave their reservations,
  /// stats and results here (heldEnds_): releaseHeldEnds applies the first
  /// two at its end, then answers the requests (a caller that has its
  /// result sees it counted).
  bool endsHeld_ = false;
  /// While complete() handles a finished task: when it saw the task done,
  /// the end of the requests it finishes (one clock read a task, not one a
  /// request); the epoch otherwise.
  Clock::time_point taskFinishedAt_{};
  EngineHeldEnds heldEnds_;
  void releaseHeldEnds();

  /// Admits waiting requests while they fit here and this worker is the
  /// one to take them; true when it took one.
  bool admit();
  // Reservations: read and written only under the admission mutex (other
  // workers compare their room with this worker's).
  bool fits(const PoolCounts &need) const;
  bool fits(const Entry &entry) const;
  double room() const; // the free share of the tightest pool
  /// This worker takes the head of the queue: it fits here and no other
  /// running worker it fits has more room by over
  /// EngineOptions::admissionSlack (an idle worker takes it;
  /// `holdsRequests`: this worker has admitted some, or is admitting).
  bool takesHead(const Entry &head, bool holdsRequests) const;
  /// The first waiting request this worker may take: chunks of sessions
  /// held by other workers are passed over (they wait for their worker).
  std::deque<std::unique_ptr<Entry>>::iterator headForMe();
  /// The head can never start while things stay as they are: the workers
  /// it may run on are idle and it does not fit beside the state that open
  /// sessions hold there (only a session's end or time-out could free it).
  bool neverStarts(const Entry &head, bool holdsRequests) const;
  /// Answers a request that is not admitted (closing its session).
  void refuse(std::unique_ptr<Entry> entry);
  /// Fails the chunks that waited behind a session that closed.
  void failOrphans(std::deque<std::unique_ptr<Entry>> orphans, uint64_t session,
                   const Status &cause);
  /// Hands an admitted request's first nodes to the policy; it fails at
  /// once with `projected` when that is an error (projectInputs).
  void startRequest(Entry &entry, const Status &projected);
  /// A chain's projected inputs (CellRoles::dataProjections) of the
  /// requests `entries`, admitted together: each projection cell run over
  /// all of their steps in shared tasks, its products made the steps' rows
  /// (EngineProjections.cpp). On an error no request is projected.
  Status projectInputs(const std::vector<Entry *> &entries);
  /// projectInputs' two ways: the products written into the requests' own
  /// pool rows (Entry::productRows), or read back into their step rows.
  Status projectIntoPools(const std::vector<Entry *> &entries);
  Status projectIntoSteps(const std::vector<Entry *> &entries);
  /// One task of projection cell `cell` (data input d's), timed with the
  /// executor's; its error names the input.
  Status runProjection(const cellpack::CellType &cell, uint32_t d,
                       uint32_t rows,
                       const std::vector<std::vector<int32_t>> &inputRows,
                       const std::vector<std::vector<int32_t>> &outputRows,
                       const Executor::TaskIO &io);
  /// Per data input of the chain: 1 when its products can stay in the pool
  /// rows the step reads (the projection's output pool is that input's
  /// pool, and the chain batch runs the steps); set with the chain batch.
  std::vector<uint8_t> productsInPools_;
  /// Where data input d's rows start in Entry::productRows, in steps.
  uint32_t productBlock(uint32_t d) const;
  /// A chain request's need with its products in pools, but for the row a
  /// step added in each of productPools_ (empty: no products in pools;
  /// found at initialisation by setUpProductNeed).
  std::vector<uint32_t> productNeed_, productPools_;
  void setUpProductNeed();
  InFlight launch(PlannedTask task);
  /// launch's parts: the task's row vectors sized for `capacity` rows
  /// (its nodes and padding); its planned nodes bound (those of ended or
  /// failing requests dropped, a node that cannot be bound failing its
  /// request); padding rows [bound, rows) reading zero rows and writing scratch
  /// rows.
  void sizeTaskRows(InFlight &flight, const CellRoles &roles,
                    uint32_t capacity);
  void bindPlannedNodes(InFlight &flight);
  void bindPaddingRows(InFlight &flight, const CellRoles &roles, uint32_t bound,
                       uint32_t rows);
  void complete(InFlight &flight);
  /// complete's per-node part for a scheduled task (the chain batch's is
  /// completeChainRows).
  void completeNodes(InFlight &flight);
  Status bindNode(Entry &entry, uint32_t node, uint32_t row, InFlight &flight);
  /// Sets `bound` to the pool row input `input` of `node` reads as task
  /// row `row` (taking a row for request data or a held input); false with
  /// `error` set when it cannot.
  bool bindInput(Entry &entry, uint32_t node, uint32_t input, uint32_t row,
                 const NodeSource &source, uint32_t pool, InFlight &flight,
                 BindUndo &undo, int32_t &bound, Status &error);
  /// Takes a row of `pool` for held slot `slot` of the request (recorded
  /// in `undo`); false with `error` set when it cannot.
  bool takeHeldRow(Entry &entry, uint32_t slot, uint32_t pool, BindUndo &undo,
                   Status &error);
  /// A seq2seq encoder step (`node`, bound): its outputs placed in the
  /// request's memories on the device (Executor::RowPlace) at the step's
  /// position, the memory row taken and zeroed with the first step bound.
  /// False with `error` set when a row cannot be taken.
  bool placeInMemories(Entry &entry, uint32_t node, InFlight &flight,
                       BindUndo &undo, Status &error);
  /// Gives back what `undo` recorded and the node's outputs; returns
  /// `status`.
  Status undoBind(Entry &entry, uint32_t node, InFlight &flight,
                  const BindUndo &undo, Status status);
  /// Chains (CellGraph::isChain): step `node` bound to its generation's
  /// rows, with no per-node record.
  bool bindChainNode(Entry &entry, uint32_t node, uint32_t row,
                     InFlight &flight, Status *error);
  void chainAfterNode(Entry &entry, uint32_t node, const InFlight &flight,
                      uint32_t row);
  /// Gives back a chain's pinned rows (a session's state) once step 0 has
  /// run or the chunk has ended.
  void releaseChainPinned(Entry &entry);
  /// Gives back both generations of a chain's rows.
  void releaseChainRows(Entry &entry);
  /// EngineMoves.cpp: whether `entry` may move (no session, nodes left;
  /// the policy says whether one is running); moving it to `target`
  /// (TargetFull: it left, or the request does not fit there); a moved
  /// request's rows written into this worker's pools and its remaining
  /// nodes handed to the policy; `visit(pool, row)` for every row `entry`
  /// holds (a chain's generations, its nodes' output rows, held rows).
  bool movable(const Entry &entry) const;
  void forEachHeldRow(Entry &entry,
                      FunctionRef<void(uint32_t pool, int32_t &row)> visit);
  enum class MoveResult { Moved, Kept, TargetFull };
  MoveResult moveTo(Entry &entry, EngineWorker &target);
  void resumeMoved(Entry &entry);
  /// A chain cell's inputs: request data, states and zeros.
  std::vector<ChainInput> chainData_, chainStates_, chainZeros_;
  // The persistent chain batch (EngineChainBatch.cpp): under cellular
  // batching, chain requests whose results are placed for every step run
  // from chainSlots_, not the policy.
  bool chainBatch_ = false;
  ChainSlots chainSlots_;
  /// The batch sizes of the chain's cell: tasks hold at most the largest.
  uint32_t chainLargest_ = 0;
  /// The requests this worker runs at once (EngineOptions::maxRunning), or
  /// no limit; other workers admitting read it (takesHead).
  std::atomic<uint32_t> runningCap_{UINT32_MAX};
  /// Chain slots whose every step is bound (their requests end when those
  /// tasks complete: a round later with overlapped rounds): not counted
  /// against the cap.
  uint32_t chainSlotsDone_ = 0;
  /// Whether `head` waits while this worker runs as many as its cap: not
  /// one with a deadline (it goes first by it), a session's chunk (its
  /// state is parked) or a cancelled one (it ends as it is admitted).
  bool heldByCap(const Entry &head) const;
  /// As other workers see it: this one admits no more until some end.
  bool atRunningCap() const {
    return load_.load(std::memory_order_relaxed) >=
           runningCap_.load(std::memory_order_relaxed);
  }
  /// The chain's state outputs that are not emitted (read at a last step).
  std::vector<uint32_t> chainFinalOnly_;
  /// The step of each row of the task being bound, the round's slots with
  /// steps left and a task's slots (reused: nothing allocated a round).
  std::vector<uint32_t> chainSteps_, chainOrder_, chainTaskSlots_;
  /// Rounds begun, and the last whose tasks have all completed.
  uint64_t roundNumber_ = 0, completedRound_ = 0;
  /// Where the next round's first task starts when the slots need more
  /// tasks than a round submits (so that every slot gets its turn).
  uint32_t chainRotation_ = 0;
  /// The last admit() left a request at the head of the queue that was not
  /// taken (no room here, or another worker has more).
  bool headWaits_ = false;
  /// Room of prepared results (CellGraph::takePreparedRoom) of the requests
  /// admit() started, given back to the budget once when it ends.
  int64_t preparedRoomToGiveBack_ = 0;
  /// Sets chainBatch_ and chainSlots_' layout (at initialisation).
  void setUpChainBatch(uint32_t largestBatch);
  /// Whether `subgraph` of `entry` (a whole chain from some step on) runs
  /// in the batch rather than through the policy.
  bool chainBatchTakes(const Entry &entry, const ReadySubgraph &subgraph) const;
  /// Adds it to the batch at step subgraph.first, with both generations'
  /// rows (an error when they cannot be taken: the request fails).
  Status joinChainBatch(Entry &entry, const ReadySubgraph &subgraph);
  /// Takes `entry` out of the batch (it ends or moves), its graph told
  /// how many steps are left.
  void leaveChainBatch(Entry &entry);
  /// Steps the request has not run (the batch's count, or the graph's).
  uint32_t nodesLeft(const Entry &entry) const;
  /// The round's tasks of the batch, bound and submitted, appended to
  /// `round`.
  void launchChainTasks(std::vector<InFlight> &round);
  /// Up to `tasks` tasks of the chains with the most steps left
  /// (EngineOptions::ChainOrder::LongestFirst).
  void launchLongestChainsFirst(std::vector<InFlight> &round, uint32_t tasks);
  /// One task of slots `slots` (one step of each), bound from the slot
  /// arrays and submitted.
  InFlight launchChainTask(const std::vector<uint32_t> &slots);
  /// A bound task's row vectors finished and submitted (launch and
  /// launchChainTask).
  void submitBound(InFlight &flight, const CellRoles &roles);
  /// Completing a batch task (its rows are in the results already): only
  /// its events' rows touch their graphs.
  void completeChainRows(InFlight &flight);
  /// Asks the processor for `entry`'s record and its graph's without
  /// waiting for them: called for every request that starts or ends in a
  /// round before any is handled, so that their cache misses overlap
  /// (their records were made on the submitting thread, or last touched a
  /// request's length ago).
  static void prefetchRecords(const Entry &entry);
  /// Waiting requests whose records admit() asks for ahead of taking them.
  static constexpr size_t kRecordsAhead = 6;
  /// The reads of task row `row` (node `node` of `entry`'s graph), laid
  /// out in the flight's read buffer unless copied straight to the result.
  void planReads(Entry &entry, uint32_t node, uint32_t row,
                 Span<const uint32_t> outputs, InFlight &flight);
  /// A row of pool `pool` for `entry`, within its reservation; -1 (and
  /// *error says why) when there is none.
  int32_t acquireFor(Entry &entry, uint32_t pool, Status *error);
  /// Gives back a row `request` held (its own count, or the pool's
  /// reservation once the request has ended).
  void releaseFor(uint64_t request, uint32_t pool, int32_t row) {
    releaseRow(entries_.find(request), pool, row);
  }
  /// The same for a request at hand (null: one that has left).
  void releaseRow(Entry *entry, uint32_t pool, int32_t row);
  void afterNode(Entry &entry, uint32_t node, const InFlight &flight,
                 uint32_t row);
  /// Hands `ready` (emptied) to the policy, or ends the request.
  void addReady(Entry &entry, std::vector<ReadySubgraph> &ready);
  /// Adds `subgraphs` to the policy; false when one is refused (the
  /// request then fails and is gone).
  bool handToPolicy(Entry &entry, std::vector<ReadySubgraph> &subgraphs);
  /// What a graph hands over at its start or as a node finishes (reused).
  std::vector<ReadySubgraph> ready_;
  /// Requests the policy returns when one ends (reused).
  std::vector<uint64_t> returned_;
  void releaseOutputs(Entry &entry, uint32_t node);
  void finishRequest(Entry &entry, Status status);
  /// A session chunk has ended: parks the state it ends with for the next
  /// chunk, or closes the session (the chunk ended it, or failed).
  void endChunk(Entry &entry, const Status &status);
  /// Frees the state of this worker's sessions idle past the timeout.
  void expireSessions();
  Clock::time_point lastSessionSweep_;
  /// Gives back the session state `node` read (the entry holds it).
  void releasePinned(Entry &entry, uint32_t node);
  /// Per pool id, the rows of session state parked here for `entry`, the
  /// chunk that continues the session (under the admission mutex): they
  /// count towards its need, as the outputs of the node before its first.
  PoolCounts parkedFor(const Entry &entry) const;
  void deliver(uint64_t key);
  void failStuck();
  /// The executor is lost: fails the round in flight, every request
  /// admitted here, the sessions whose state is parked here and the chunks
  /// waiting for this worker (every waiting request when no worker is left),
  /// gives their rows back and leaves the other workers serving.
  void takeOutOfService(const Status &lost);
  /// What a lost worker leaves behind, taken from the admission queue: the
  /// rows of sessions parked here, the requests it was to run (pinned here,
  /// or every waiting one when no worker is left), and the chunks waiting
  /// behind each session it closes (a deque: a deque of entries cannot be
  /// copied, and a vector would copy).
  struct Orphans;
  Orphans takeOrphans(const Status &cause, bool noneLeft);
  /// Answers `entry`, which was never run, with `cause`.
  void failUnserved(Entry &entry, const Status &cause, bool noneLeft);
  /// The error of a request this worker fails because `lost` lost its
  /// executor ("worker N stopped serving: ...").
  Status stoppedBy(const Status &lost) const;
  uint32_t poolId(uint32_t part, bool isOutput, uint32_t index) const;
  SlotPool &poolOf(uint32_t part, bool isOutput, uint32_t index) {
    return *pools_[poolId(part, isOutput, index)].pool;
  }

  /// The round submitted last and not yet completed (asynchronous
  /// executors only).
  std::vector<InFlight> pending_;
  std::vector<InFlight> spareRound_; // runOnce's vector, kept for its array
};

} // namespace cellrun

// The queue the workers admit from, sessions, and the engine's own state.
#include "AdmissionQueue.h"

#endif // CELLRUN_SCHED_ENGINEIMPL_H
