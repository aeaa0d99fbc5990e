//===- EngineChains.cpp - Chains bound without per-node records -----------===//
//
// A chain model's request (structure chain) is the busiest case and the
// simplest: step k reads the request's rows of step k and the outputs of
// step k - 1. The engine binds it from two generations of pool rows the
// request takes at its first steps and keeps to its end (CellGraph::isChain:
// steps k and k + 2 share rows, since tasks run in order), so a step costs
// the host a handful of index copies: no row taken or given back, no record
// per node, no dependency counts.
//
//===----------------------------------------------------------------------===//
#include "engine/EngineImpl.h"

#include <cstring>

using namespace cellrun;

bool EngineWorker::bindChainNode(Entry &entry, uint32_t node, uint32_t row,
                                 InFlight &flight, Status *error) {
  CellGraph &graph = *entry.graph;
  const CellRoles &roles = parser_->structure().cells[0];
  const PartPools &pools = partPools_[0];
  uint32_t outputs = roles.outputCount;
  uint32_t slots = outputs + static_cast<uint32_t>(roles.dataInputs.size());
  uint32_t generation = node & 1;
  int32_t *rows = graph.chainRows(generation);
  // This generation's rows, the first time it is used (taken in order: the
  // last one set means all are).
  if (slots > 0 && rows[slots - 1] < 0)
    for (uint32_t slot = 0; slot < slots; ++slot) {
      if (rows[slot] >= 0)
        continue;
      uint32_t pool = slot < outputs
                          ? pools.outputs[slot]
                          : pools.inputs[roles.dataInputs[slot - outputs]];
      int32_t taken = acquireFor(entry, pool, error);
      if (taken < 0)
        return false; // rows taken stay the request's until it ends
      rows[slot] = taken;
    }
  const int32_t *previous = graph.chainRows(generation ^ 1);
  for (const ChainInput &input : chainData_) {
    flight.inputRowData[input.input][row] = rows[outputs + input.index];
    // Written with the task (on cuda, in its one host-to-device copy).
    Executor::RowWrite &write = flight.io.writes.emplace_back();
    write.input = input.input;
    write.row = row;
    write.bytes = graph.stepRow(node, input.index);
  }
  if (node > 0) {
    for (const ChainInput &input : chainStates_)
      flight.inputRowData[input.input][row] = previous[input.index];
  } else {
    // Zeros, or a session's state from its last chunk.
    for (const ChainInput &input : chainStates_) {
      int32_t taskRow = pools_[pools.inputs[input.input]].zeroRow;
      for (const auto &[pinnedInput, pinnedRow] : graph.initialState())
        if (pinnedInput == input.input)
          taskRow = pinnedRow;
      flight.inputRowData[input.input][row] = taskRow;
    }
  }
  for (const ChainInput &input : chainZeros_)
    flight.inputRowData[input.input][row] = input.index; // the zero row
  for (uint32_t o = 0; o < outputs; ++o)
    flight.outputRowData[o][row] = rows[o];
  // What the host reads: its emitted outputs, and its states at the end.
  planReads(entry, node, row,
            node + 1 == graph.steps() ? roles.emittedAndStates : roles.emitted,
            flight);
  return true;
}

void EngineWorker::chainAfterNode(Entry &entry, uint32_t node,
                                  const InFlight &flight, uint32_t row) {
  CellGraph &graph = *entry.graph;
  // Outputs the task did not copy straight into the result are in the
  // flight's read buffer (a chain's step reads only itself).
  auto reader = [&](uint32_t producer, uint32_t output, void *bytes) {
    size_t rowBytes = graph.roles(producer).outputRowBytes[output];
    for (uint32_t k = flight.firstRead[row]; k < flight.firstRead[row + 1]; ++k)
      if (const ReadSlot &slot = flight.reads[k]; slot.output == output) {
        std::memcpy(bytes, flight.readBuffer.data() + slot.offset, rowBytes);
        return Status::ok();
      }
    return executor_->readRow(poolOf(0, true, output),
                              graph.chainRows(producer & 1)[output], bytes);
  };
  ready_.clear();
  if (Status done = graph.nodeDone(node, reader, ready_); !done.isOk()) {
    finishRequest(entry, done);
    return;
  }
  if (node == 0)
    releaseChainPinned(entry);
  if (graph.finished())
    finishRequest(entry, Status::ok());
}

void EngineWorker::releaseChainPinned(Entry &entry) {
  CellGraph &graph = *entry.graph;
  if (graph.pinnedReleased || graph.initialState().empty())
    return;
  graph.pinnedReleased = true;
  // Held by the chunk since its admission.
  for (const auto &[input, row] : graph.initialState())
    releaseRow(&entry, partPools_[0].inputs[input], row);
}

void EngineWorker::releaseChainRows(Entry &entry) {
  // A chain holds no rows but its generations' (forEachHeldRow).
  forEachHeldRow(entry, [&](uint32_t pool, int32_t &row) {
    releaseRow(&entry, pool, row);
    row = -1;
  });
}
