//===- EngineRecords.h - A worker's records of requests, tasks -*- C++ -*-===//
//
// The records an EngineWorker (EngineImpl.h) keeps: of each request it has
// admitted (EngineEntry, its graph inside: one allocation), of each task it
// has bound and submitted (EngineFlight, with the rows it reads back and the
// request data it holds), of request ends it answers once its locks are let
// go (EngineHeldEnds), of the rows binding one node took (EngineBindUndo),
// of its executor's pools (EnginePoolState, EnginePartPools) and of where a
// chain cell's inputs come from (EngineChainInput).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_ENGINE_ENGINERECORDS_H
#define CELLRUN_ENGINE_ENGINERECORDS_H

#include "PoolCounts.h"
#include "sched/BatchingPolicy.h"

#include "exec/Executor.h"
#include "graph/CellGraph.h"

#include "cellrun/Engine.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cellrun {

/// A request a worker has admitted (or one waiting for admission).
struct EngineEntry {
  uint64_t key = 0; // in the worker's table, from admission on
  // What every step reads first, side by side with the graph's own
  // hot fields (CellGraph::chainRows).
  bool complete = false;
  /// Set when a task could not bind one of its nodes: the request fails
  /// once the tasks holding its other nodes have finished.
  Status failure;
  std::optional<CellGraph> graph; // in the entry: one allocation
  Engine::Callback done;
  /// Per pool id: the rows it may hold at once (found at submission and
  /// reserved at admission), and those held now (never more than
  /// reserved: a request cannot take rows reserved for others).
  PoolCounts need, held;
  /// A chunk of a session runs on the worker that holds its state.
  int32_t pinnedWorker = -1;
  /// graph->deadline(), found at submission (the queue's order).
  uint64_t deadline = UINT64_MAX;
  /// Per held slot of the graph (CellGraph::heldRowCount): the pool and
  /// row its first reader took (a memory's: its first encoder step), or
  /// row -1 before that.
  std::vector<std::pair<uint32_t, int32_t>> heldRows;
  /// Engine::cancelAll reached it while it waited (under the admission
  /// mutex): it ends as soon as it is admitted, with `cancelReason`.
  bool cancelled = false;
  std::string cancelReason;
  /// Its number in the order of admission (AdmissionQueue::admissions).
  uint64_t admission = 0;
  /// Moved from another worker (EngineMoves.cpp), until it is taken
  /// there: the bytes of every row it held, one after another in the
  /// order of forEachHeldRow, and its subgraphs' nodes not yet run.
  std::vector<uint8_t> movedState;
  std::vector<ReadySubgraph> movedSubgraphs;
  /// Its slot in the worker's chain batch (chainSlots_), or -1.
  int32_t chainSlot = -1;
  /// Its projected inputs' products stay in the pool rows the steps read
  /// (reserved in `need`: productsInPools_), and those rows: per such
  /// input in order, one a step (-1 until taken).
  bool productsInPools = false;
  /// Its products fit the pools at all (Engine::submit): each worker that
  /// may admit it decides where they go then (placeProducts).
  bool productsMayStayInPools = false;
  std::vector<int32_t> productRows;
};

/// A row the host reads back with a task: output `output` of task row
/// `row`, at `offset` of the task's read buffer.
struct EngineReadSlot {
  uint32_t row;
  uint32_t output;
  size_t offset;
};
/// A row of request data a task holds until it has finished.
struct EngineDataRow {
  uint64_t request;
  uint32_t pool;
  int32_t row;
};
/// A task bound to rows and submitted to the executor.
struct EngineFlight {
  PlannedTask task;
  std::vector<PlannedNode> nodes; // bound, in task-row order
  uint64_t ticket = 0;
  uint32_t batchSize = 0;
  std::vector<EngineDataRow> dataRows;
  /// Per cell input (output): the pool row of each task row, and where
  /// those rows are (set once the vectors have their size).
  std::vector<std::vector<int32_t>> inputRows, outputRows;
  std::vector<int32_t *> inputRowData, outputRowData;
  Executor::TaskIO io; // request data in, results out
  /// Reads into readBuffer (those not copied straight into a result), in
  /// row order; per task row, its first entry of reads.
  std::vector<EngineReadSlot> reads;
  std::vector<uint32_t> firstRead;
  /// Not zeroed when resized: every byte a task reads back is written by
  /// the executor before anything reads it (at 512 rows of 4 KB a task
  /// reads 2 MB: zeroing it each task cost a tenth of the GPU path's host
  /// time).
  std::vector<uint8_t, UninitializedAllocator<uint8_t>> readBuffer;
  Clock::time_point submitted;
  Status status;
  /// A task of the chain batch (EngineChainBatch.cpp), and its rows
  /// that need the graph when it completes (a session's first step, a
  /// last step).
  bool chainBatch = false;
  std::vector<uint32_t> chainEvents;
  uint64_t round = 0; // the worker's round it was submitted in
};

/// What a worker's request ends leave to do once it lets go of its
/// locks (EngineWorker::releaseHeldEnds): reservations to give back,
/// stats to add, answers to give and entries to retire.
struct EngineHeldEnds {
  PoolCounts unreserve;
  EngineStats stats;
  std::vector<std::pair<Engine::Callback, RequestResult>> answers;
  /// The answered requests' entries, for the submitting threads to free
  /// (AdmissionQueue::retired).
  std::vector<std::unique_ptr<EngineEntry>> retired;
};

/// The rows binding one node has taken so far, given back if it fails.
struct EngineBindUndo {
  size_t dataBefore = 0, writesBefore = 0, placesBefore = 0;
  uint32_t heldTaken[8], heldTakenCount = 0; // held slots this node took
  std::vector<uint32_t> moreHeldTaken;       // past eight (rare)
};

/// A pool of the worker's executor, by id, and what its requests hold of it.
struct EnginePoolState {
  SlotPool *pool = nullptr;
  int32_t zeroRow = -1;             // all zeros, read by nodes, never written
  std::vector<int32_t> scratchRows; // written by padding rows
  uint32_t budget = 0;              // rows requests may reserve
  /// Rows reserved by admitted requests, and rows of ended requests that
  /// tasks in flight still hold.
  uint32_t reserved = 0;
};

/// Per part of a model, the pool id of each cell input and output.
struct EnginePartPools {
  std::vector<uint32_t> inputs, outputs;
};

/// The inputs of a chain's cell by where they come from: data inputs
/// (index: which of the request's rows), states (index: the output that
/// updates them) and the rest (index: the pool's zero row).
struct EngineChainInput {
  uint32_t input = 0;
  uint32_t index = 0;
};

} // namespace cellrun

#endif // CELLRUN_ENGINE_ENGINERECORDS_H
