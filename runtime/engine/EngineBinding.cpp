//===- EngineBinding.cpp - A task's nodes bound to pool rows --------------===//
//
// Rows taken from the pools against a request's reservation and given back;
// a node of a cell graph bound to the rows its inputs read (a zero row, a
// pinned row, fresh rows for request data and held inputs, the rows its
// producers wrote) and fresh rows for its outputs, undone as a whole if a
// row cannot be taken; the rows a node was the last to read released and
// the host reads of its outputs planned. Chains bind without per-node
// records (EngineChains.cpp).
//
//===----------------------------------------------------------------------===//
#include "engine/EngineImpl.h"

#include <algorithm>
#include <cstring>

using namespace cellrun;

int32_t EngineWorker::acquireFor(Entry &entry, uint32_t pool, Status *error) {
  PoolState &state = pools_[pool];
  if (entry.held[pool] < entry.need[pool]) {
    int32_t row = state.pool->take();
    if (row < 0) { // none free, or a fault hook: the full path says which
      auto acquired = state.pool->acquire();
      if (!acquired.ok()) {
        *error = Status(StatusCode::Internal,
                        "request " + entry.graph->request().id + ": " +
                            acquired.status().message());
        return -1;
      }
      row = static_cast<int32_t>(acquired.value());
    }
    ++entry.held[pool];
    return row;
  }
  // Reservations are the engine's (or a custom unfolder's) promise: a
  // request that outgrows its own is a server-side fault, not load.
  *error = Status(StatusCode::Internal,
                  "request " + entry.graph->request().id + " needs more than " +
                      std::to_string(entry.need[pool]) + " rows of " +
                      std::to_string(state.pool->rowBytes()) +
                      "-byte state at once, what it reserved" +
                      (parser_->structure().kind == cellpack::Structure::Custom
                           ? " (the unfolder's peakNodes is too small)"
                           : ""));
  return -1;
}

void EngineWorker::releaseRow(Entry *entry, uint32_t pool, int32_t row) {
  pools_[pool].pool->put(static_cast<uint32_t>(row));
  if (entry && !entry->complete) {
    --entry->held[pool];
  } else {
    std::lock_guard<std::mutex> lock(admission_->mutex);
    --pools_[pool].reserved; // the ended request's rows in flight
  }
}

Status EngineWorker::bindNode(Entry &entry, uint32_t node, uint32_t row,
                              InFlight &flight) {
  CellGraph &graph = *entry.graph;
  Span<NodeSource> sources = graph.inputs(node);
  const PartPools &pools = partPools_[graph.nodes()[node].part];
  BindUndo undo;
  undo.dataBefore = flight.dataRows.size();
  undo.writesBefore = flight.io.writes.size();
  undo.placesBefore = flight.io.places.size();
  Status error;
  for (uint32_t i = 0; i < sources.size(); ++i) {
    int32_t bound = -1;
    if (!bindInput(entry, node, i, row, sources[i], pools.inputs[i], flight,
                   undo, bound, error))
      return undoBind(entry, node, flight, undo, std::move(error));
    flight.inputRows[i][row] = bound;
  }
  Span<int32_t> outputRows = graph.outputRows(node);
  for (uint32_t o = 0; o < outputRows.size(); ++o) {
    int32_t taken = acquireFor(entry, pools.outputs[o], &error);
    if (taken < 0)
      return undoBind(entry, node, flight, undo, std::move(error));
    outputRows[o] = taken;
    flight.outputRows[o][row] = taken;
  }
  if (graph.fillsMemories(node) &&
      !placeInMemories(entry, node, flight, undo, error))
    return undoBind(entry, node, flight, undo, std::move(error));
  if (releaseAtBind_)
    releaseReadRows(entry, node);
  return Status::ok();
}

bool EngineWorker::bindInput(Entry &entry, uint32_t node, uint32_t input,
                             uint32_t row, const NodeSource &source,
                             uint32_t pool, InFlight &flight, BindUndo &undo,
                             int32_t &bound, Status &error) {
  switch (source.kind) {
  case NodeSource::Kind::Zero:
    bound = pools_[pool].zeroRow;
    return true;
  case NodeSource::Kind::Pinned:
    bound = source.row;
    return true;
  case NodeSource::Kind::Data: {
    int32_t taken = acquireFor(entry, pool, &error);
    if (taken < 0)
      return false;
    // Field by field: a braced temporary copied in costs a store-forwarding
    // stall per row.
    DataRow &data = flight.dataRows.emplace_back();
    data.request = entry.key;
    data.pool = pool;
    data.row = taken;
    // Written with the task (on cuda, in its one host-to-device copy).
    Executor::RowWrite &write = flight.io.writes.emplace_back();
    write.input = input;
    write.row = row;
    write.bytes = source.bytes;
    bound = taken;
    return true;
  }
  case NodeSource::Kind::Held: {
    CellGraph &graph = *entry.graph;
    if (entry.heldRows.size() < graph.heldRowCount())
      entry.heldRows.resize(graph.heldRowCount(), {0, -1});
    int32_t &heldRow = entry.heldRows.at(source.output).second;
    if (heldRow < 0 && !source.bytes) {
      // A memory the encoder's steps fill: they were bound first.
      error = Status(StatusCode::Internal,
                     "request " + graph.request().id + ": node " +
                         std::to_string(node) +
                         " reads a memory no encoder step has filled");
      return false;
    }
    if (heldRow < 0) {
      // The first reader writes it with its task; later ones read it.
      if (!takeHeldRow(entry, source.output, pool, undo, error))
        return false;
      flight.io.writes.push_back({input, row, source.bytes});
    }
    bound = heldRow;
    return true;
  }
  case NodeSource::Kind::Output: {
    int32_t produced = entry.graph->outputRows(source.node)[source.output];
    if (produced < 0) {
      error = Status(StatusCode::Internal,
                     "node " + std::to_string(node) + " reads node " +
                         std::to_string(source.node) + ", which has no rows");
      return false;
    }
    bound = produced;
    return true;
  }
  }
  return false;
}

bool EngineWorker::takeHeldRow(Entry &entry, uint32_t slot, uint32_t pool,
                               BindUndo &undo, Status &error) {
  int32_t taken = acquireFor(entry, pool, &error);
  if (taken < 0)
    return false;
  entry.heldRows[slot] = {pool, taken};
  if (undo.heldTakenCount < 8)
    undo.heldTaken[undo.heldTakenCount++] = slot;
  else
    undo.moreHeldTaken.push_back(slot);
  return true;
}

bool EngineWorker::placeInMemories(Entry &entry, uint32_t node,
                                   InFlight &flight, BindUndo &undo,
                                   Status &error) {
  CellGraph &graph = *entry.graph;
  const ModelStructure &structure = parser_->structure();
  if (entry.heldRows.size() < graph.heldRowCount())
    entry.heldRows.resize(graph.heldRowCount(), {0, -1});
  Span<int32_t> outputRows = graph.outputRows(node);
  for (size_t m = 0; m < structure.memories.size(); ++m) {
    const ModelStructure::Memory &memory = structure.memories[m];
    uint32_t pool = partPools_[1].inputs[memory.input];
    SlotPool &memoryPool = *pools_[pool].pool;
    int32_t &heldRow = entry.heldRows[m].second;
    if (heldRow < 0) {
      if (!takeHeldRow(entry, static_cast<uint32_t>(m), pool, undo, error))
        return false;
      // Zeros past the source (a pool row keeps what it last held).
      Executor::RowPlace &zeros = flight.io.places.emplace_back();
      zeros.to = &memoryPool;
      zeros.toRow = heldRow;
      zeros.bytes = static_cast<uint32_t>(memoryPool.rowBytes());
    }
    // Encoder nodes are the first nodes, one a source step. The structure
    // checked that an output row is a position of the memory, and the
    // request checks that its source fits the positions.
    Executor::RowPlace &step = flight.io.places.emplace_back();
    step.from = pools_[partPools_[0].outputs[memory.encoderOutput]].pool;
    step.fromRow = outputRows[memory.encoderOutput];
    step.to = &memoryPool;
    step.toRow = heldRow;
    step.offset = static_cast<uint32_t>(node * memory.positionBytes);
    step.bytes = static_cast<uint32_t>(memory.positionBytes);
  }
  return true;
}

Status EngineWorker::undoBind(Entry &entry, uint32_t node, InFlight &flight,
                              const BindUndo &undo, Status status) {
  auto &dataRows = flight.dataRows;
  for (size_t d = undo.dataBefore; d < dataRows.size(); ++d)
    releaseRow(&entry, dataRows[d].pool, dataRows[d].row);
  auto giveBack = [&](uint32_t slot) {
    releaseRow(&entry, entry.heldRows[slot].first, entry.heldRows[slot].second);
    entry.heldRows[slot].second = -1;
  };
  for (uint32_t k = 0; k < undo.heldTakenCount; ++k)
    giveBack(undo.heldTaken[k]);
  for (uint32_t slot : undo.moreHeldTaken)
    giveBack(slot);
  dataRows.resize(undo.dataBefore);
  flight.io.writes.resize(undo.writesBefore);
  flight.io.places.resize(undo.placesBefore);
  releaseOutputs(entry, node);
  return status;
}

void EngineWorker::releaseReadRows(Entry &entry, uint32_t node) {
  CellGraph &graph = *entry.graph;
  for (const NodeSource &source : graph.inputs(node)) {
    if (source.kind != NodeSource::Kind::Output ||
        --graph.nodes()[source.node].unbound != 0)
      continue;
    const PartPools &pools = partPools_[graph.nodes()[source.node].part];
    Span<int32_t> rows = graph.outputRows(source.node);
    for (uint32_t o = 0; o < rows.size(); ++o)
      if (rows[o] >= 0) {
        DeferredRow &deferred = deferredRows_.emplace_back();
        deferred.request = entry.key;
        deferred.pool = pools.outputs[o];
        deferred.row = rows[o];
        rows[o] = -1;
      }
  }
}

/// The rows the host will read when the task has finished (`outputs` of
/// `node`, bound as task row `row`): straight into the request's result
/// where the graph says so, else laid out in one buffer the executor fills
/// with the task (its addresses are taken once the whole task is planned,
/// in launch).
void EngineWorker::planReads(Entry &entry, uint32_t node, uint32_t row,
                             Span<const uint32_t> outputs, InFlight &flight) {
  CellGraph &graph = *entry.graph;
  flight.firstRead[row] = static_cast<uint32_t>(flight.reads.size());
  const CellRoles &roles = graph.roles(node);
  size_t bytes = flight.readBuffer.size();
  for (uint32_t output : outputs) {
    if (graph.skipsRead(node, output))
      continue; // the request did not ask for it
    if (void *target =
            directReads_ ? graph.readTarget(node, output) : nullptr) {
      Executor::RowRead &read = flight.io.reads.emplace_back();
      read.output = output;
      read.row = row;
      read.destination = target;
      continue;
    }
    ReadSlot &slot = flight.reads.emplace_back();
    slot.row = row;
    slot.output = output;
    slot.offset = bytes;
    bytes += roles.outputRowBytes[output];
  }
  flight.readBuffer.resize(bytes);
}
