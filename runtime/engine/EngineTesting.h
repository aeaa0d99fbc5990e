//===- EngineTesting.h - The engine as its tests reach it ------*- C++ -*-===//
//
// Internal: what the runtime's tests and benchmarks need of an engine that
// the public API (cellrun/Engine.h) does not offer: executors that inject
// faults, and a worker's executor (its pools' rows in use).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHED_ENGINETESTING_H
#define CELLRUN_SCHED_ENGINETESTING_H

#include "exec/Executor.h"

#include "cellrun/Engine.h"

namespace cellrun {

/// Engine::create whose every worker's executor calls `injectFault` at its
/// fault points (Executor.h: FaultPoint).
Result<std::unique_ptr<Engine>>
createEngineForTesting(std::shared_ptr<const LoadedArtifact> artifact,
                       const EngineOptions &options, FaultInjector injectFault);

/// The executor of `worker`.
const Executor &engineExecutor(const Engine &engine, uint32_t worker = 0);

/// Pool rows in use on every worker (Executor::rowsInUse summed).
uint64_t engineRowsInUse(const Engine &engine);

/// Output sets of ended requests kept for tasks still in flight, on every
/// worker (EngineWorker::keptOutputs_); from the workers' own threads only
/// (e.g. EngineOptions::onTask) or with the workers stopped.
uint64_t engineKeptOutputs(const Engine &engine);

/// Bytes of results made on the submitting threads for requests that have
/// not started yet (CellGraph::ResultBudget).
int64_t engineQueuedResultBytes(const Engine &engine);

/// Entries of answered requests waiting for the next submitter to free
/// them (AdmissionQueue::retired), and the most that may wait.
uint64_t engineRetiredEntries(const Engine &engine);
uint64_t engineRetiredLimit();

} // namespace cellrun

#endif // CELLRUN_SCHED_ENGINETESTING_H
