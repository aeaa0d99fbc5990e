//===- EngineChainBatch.cpp - Chains run from a persistent batch ----------===//
//
// Under cellular batching on a synchronous executor (the CPU), a chain
// model's running requests do not go through the scheduler node by node:
// they are slots of a persistent batch (ChainSlots, flat arrays), and each
// round binds its tasks by walking those arrays. A task row costs a few
// loads and stores: its generation's rows, the previous generation's (or
// step 0's state rows), where its data comes from and where its emitted
// rows go, all at the slot's index. Only the rare rows touch the request's
// records: a generation's rows taken at its first use, a request's first
// bind (when it started), a session's first step (its state rows given back
// after it) and a last step (final states read, the request finished):
// completing a task visits just those. Every slot with steps left runs in
// every task of a round when the slots fit one task (up to
// maxTasksToSubmit steps each a round, as Algorithm 1 batches a chain's
// next step behind its last); otherwise the slots are cut into tasks of the
// largest batch size (earliest deadline first when some have one, else
// taking turns across rounds). The same rows are read and written as
// through the scheduler, so results keep their bits (batch invariance).
//
//===----------------------------------------------------------------------===//
#include "engine/EngineImpl.h"

#include <algorithm>

using namespace cellrun;

void EngineWorker::setUpChainBatch(uint32_t largestBatch) {
  const ModelStructure &structure = parser_->structure();
  chainBatch_ = options_.chainBatch && options_.policy == Policy::Cellular &&
                structure.kind == cellpack::Structure::Chain &&
                structure.cells.size() == 1 && directReads_ && !overlap_;
  if (!chainBatch_)
    return;
  const CellRoles &roles = structure.cells[0];
  chainLargest_ = std::max(1u, largestBatch);
  chainSlots_.configure(roles.outputCount +
                            static_cast<uint32_t>(roles.dataInputs.size()),
                        static_cast<uint32_t>(chainStates_.size()),
                        static_cast<uint32_t>(chainData_.size()),
                        static_cast<uint32_t>(roles.emitted.size()));
}

bool EngineWorker::chainBatchTakes(const Entry &entry,
                                   const ReadySubgraph &subgraph) const {
  const CellGraph &graph = *entry.graph;
  return chainBatch_ && entry.chainSlot < 0 && graph.isChain() &&
         graph.chainReadsAllDirect() && subgraph.nodes.empty() &&
         subgraph.count > 0 && subgraph.first + subgraph.count == graph.steps();
}

Status EngineWorker::joinChainBatch(Entry &entry,
                                    const ReadySubgraph &subgraph) {
  CellGraph &graph = *entry.graph;
  const CellRoles &roles = parser_->structure().cells[0];
  const PartPools &pools = partPools_[0];
  uint32_t outputs = roles.outputCount;
  uint32_t rowSlots = outputs + static_cast<uint32_t>(roles.dataInputs.size());
  // Both generations' rows now, while its records are in cache (a moved
  // request brings its own): binding never needs them again.
  for (uint32_t generation = 0; generation < 2; ++generation) {
    int32_t *rows = graph.chainRows(generation);
    for (uint32_t c = 0; c < rowSlots; ++c) {
      if (rows[c] >= 0)
        continue;
      uint32_t pool = c < outputs ? pools.outputs[c]
                                  : pools.inputs[roles.dataInputs[c - outputs]];
      Status error;
      int32_t taken = acquireFor(entry, pool, &error);
      if (taken < 0)
        return error; // rows taken stay the request's until it ends
      rows[c] = taken;
    }
  }
  ChainSlots &slots = chainSlots_;
  uint32_t slot = slots.add();
  slots.keys[slot] = entry.key;
  slots.next[slot] = subgraph.first;
  slots.steps[slot] = graph.steps();
  slots.deadline[slot] = entry.deadline;
  uint8_t flags = 0;
  if (graph.started) {
    flags |= ChainSlots::kStarted;
    slots.startedAt[slot] = graph.firstStart;
  }
  for (uint32_t generation = 0; generation < 2; ++generation) {
    const int32_t *rows = graph.chainRows(generation);
    for (uint32_t c = 0; c < rowSlots; ++c)
      slots.rows[generation][c][slot] = rows[c];
  }
  // Step 0's states: zeros, or a session's state from its last chunk.
  for (size_t k = 0; k < chainStates_.size(); ++k) {
    uint32_t input = chainStates_[k].input;
    int32_t row = pools_[pools.inputs[input]].zeroRow;
    for (const auto &[pinnedInput, pinnedRow] : graph.initialState())
      if (pinnedInput == input) {
        row = pinnedRow;
        flags |= ChainSlots::kPinned;
      }
    slots.initial[k][slot] = row;
  }
  if (!graph.stepsEvenlySpaced())
    flags |= ChainSlots::kUnevenSteps;
  slots.stride[slot] = graph.stepStride();
  for (size_t k = 0; k < chainData_.size(); ++k)
    slots.data[k][slot] = graph.stepRow(0, chainData_[k].index);
  for (size_t e = 0; e < roles.emitted.size(); ++e)
    slots.emittedAt[e][slot] =
        static_cast<uint8_t *>(graph.readTarget(0, roles.emitted[e]));
  slots.flags[slot] = flags;
  entry.chainSlot = static_cast<int32_t>(slot);
  return Status::ok();
}

void EngineWorker::leaveChainBatch(Entry &entry) {
  if (entry.chainSlot < 0)
    return;
  uint32_t slot = static_cast<uint32_t>(entry.chainSlot);
  CellGraph &graph = *entry.graph;
  graph.resumeChainAt(chainSlots_.next[slot]);
  if (chainSlots_.flags[slot] & ChainSlots::kStarted) {
    graph.started = true;
    graph.firstStart = chainSlots_.startedAt[slot];
  }
  uint64_t moved = chainSlots_.remove(slot);
  entry.chainSlot = -1;
  if (moved != entry.key)
    if (Entry *other = entries_.find(moved))
      other->chainSlot = static_cast<int32_t>(slot);
}

uint32_t EngineWorker::nodesLeft(const Entry &entry) const {
  if (entry.chainSlot < 0)
    return entry.graph->outstanding();
  uint32_t slot = static_cast<uint32_t>(entry.chainSlot);
  return chainSlots_.steps[slot] - chainSlots_.next[slot];
}

void EngineWorker::launchChainTasks(std::vector<InFlight> &round) {
  ChainSlots &slots = chainSlots_;
  auto runs = [&](uint32_t slot) {
    return slots.next[slot] < slots.steps[slot];
  };
  std::vector<uint32_t> order;
  for (uint32_t slot = 0; slot < slots.size(); ++slot)
    if (runs(slot))
      order.push_back(slot);
  if (order.empty())
    return;
  uint32_t tasks = std::max(1u, options_.maxTasksToSubmit);
  std::vector<uint32_t> taskSlots;
  if (order.size() <= chainLargest_) {
    // All in one task, a step more of each in each of the round's tasks.
    for (uint32_t t = 0; t < tasks; ++t) {
      taskSlots.clear();
      for (uint32_t slot : order)
        if (runs(slot))
          taskSlots.push_back(slot);
      if (taskSlots.empty())
        break;
      round.push_back(launchChainTask(taskSlots));
    }
    return;
  }
  // More than a task holds: tasks of the largest batch, one step each.
  bool deadlines = std::any_of(order.begin(), order.end(), [&](uint32_t slot) {
    return slots.deadline[slot] != UINT64_MAX;
  });
  if (deadlines)
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return slots.deadline[a] < slots.deadline[b];
    });
  else
    std::rotate(order.begin(), order.begin() + chainRotation_ % order.size(),
                order.end());
  size_t at = 0;
  for (uint32_t t = 0; t < tasks && at < order.size(); ++t) {
    size_t end = std::min(order.size(), at + chainLargest_);
    taskSlots.assign(order.begin() + at, order.begin() + end);
    at = end;
    round.push_back(launchChainTask(taskSlots));
  }
  chainRotation_ += static_cast<uint32_t>(at);
}

EngineWorker::InFlight
EngineWorker::launchChainTask(const std::vector<uint32_t> &taskSlots) {
  InFlight flight = takeFlight();
  flight.chainBatch = true;
  flight.task.part = 0;
  const CellRoles &roles = parser_->structure().cells[0];
  uint32_t capacity = static_cast<uint32_t>(taskSlots.size());
  flight.inputRows.resize(roles.inputCount);
  flight.outputRows.resize(roles.outputCount);
  flight.inputRowData.clear();
  flight.outputRowData.clear();
  for (auto &taskRows : flight.inputRows) {
    taskRows.resize(capacity);
    flight.inputRowData.push_back(taskRows.data());
  }
  for (auto &taskRows : flight.outputRows) {
    taskRows.resize(capacity);
    flight.outputRowData.push_back(taskRows.data());
  }
  flight.firstRead.resize(capacity + 1);
  flight.nodes.reserve(capacity);
  flight.io.writes.reserve(capacity * chainData_.size());
  flight.io.reads.reserve(capacity * roles.emitted.size());
  flight.submitted = Clock::now();

  ChainSlots &slots = chainSlots_;
  uint32_t outputs = roles.outputCount;
  uint32_t row = 0;
  for (uint32_t slot : taskSlots) {
    uint32_t step = slots.next[slot];
    uint32_t generation = step & 1;
    const std::vector<std::vector<int32_t>> &mine = slots.rows[generation];
    for (uint32_t o = 0; o < outputs; ++o)
      flight.outputRowData[o][row] = mine[o][slot];
    uint8_t flags = slots.flags[slot];
    for (size_t k = 0; k < chainData_.size(); ++k) {
      const ChainInput &input = chainData_[k];
      flight.inputRowData[input.input][row] = mine[outputs + input.index][slot];
      // Written with the task.
      Executor::RowWrite &write = flight.io.writes.emplace_back();
      write.input = input.input;
      write.row = row;
      write.bytes =
          flags & ChainSlots::kUnevenSteps
              ? entries_.find(slots.keys[slot])
                    ->graph->stepRow(step, input.index)
              : slots.data[k][slot] + size_t(step) * slots.stride[slot];
    }
    if (step > 0) {
      const std::vector<std::vector<int32_t>> &previous =
          slots.rows[generation ^ 1];
      for (const ChainInput &state : chainStates_)
        flight.inputRowData[state.input][row] = previous[state.index][slot];
    } else {
      for (size_t k = 0; k < chainStates_.size(); ++k)
        flight.inputRowData[chainStates_[k].input][row] =
            slots.initial[k][slot];
    }
    for (const ChainInput &zero : chainZeros_)
      flight.inputRowData[zero.input][row] = zero.index; // the zero row
    flight.firstRead[row] = static_cast<uint32_t>(flight.reads.size());
    if (!(flags & ChainSlots::kStarted)) { // its graph hears at the end
      slots.startedAt[slot] = flight.submitted;
      slots.flags[slot] |= ChainSlots::kStarted;
    }
    bool last = step + 1 == slots.steps[slot];
    if (last) // its emitted rows and its final states
      planReads(*entries_.find(slots.keys[slot]), step, row,
                roles.emittedAndStates, flight);
    else
      for (size_t e = 0; e < roles.emitted.size(); ++e) {
        uint32_t output = roles.emitted[e];
        Executor::RowRead &read = flight.io.reads.emplace_back();
        read.output = output;
        read.row = row;
        read.destination = slots.emittedAt[e][slot] +
                           size_t(step) * roles.outputRowBytes[output];
      }
    if (last || (step == 0 && (flags & ChainSlots::kPinned)))
      flight.chainEvents.push_back(row);
    PlannedNode &node = flight.nodes.emplace_back();
    node.request = slots.keys[slot];
    node.node = step;
    ++slots.next[slot];
    ++row;
  }
  if (!flight.nodes.empty())
    submitBound(flight, roles);
  return flight;
}

void EngineWorker::completeChainRows(InFlight &flight) {
  for (uint32_t row : flight.chainEvents) {
    const PlannedNode &node = flight.nodes[row];
    Entry *entry = entries_.find(node.request);
    if (!entry || entry->complete || !entry->failure.isOk())
      continue;
    // nodeDone counts this step: the steps from it on are the ones left.
    entry->graph->resumeChainAt(node.node);
    chainAfterNode(*entry, node.node, flight, row);
  }
}
