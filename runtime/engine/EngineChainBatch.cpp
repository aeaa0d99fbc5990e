//===- EngineChainBatch.cpp - Chains run from a persistent batch ----------===//
//
// Under cellular batching, a chain model's running requests (fp32 or int64
// outputs) do not go through the scheduler node by node: they are slots of
// a persistent batch (ChainSlots, flat arrays), and each round binds its
// tasks column by column over those arrays. A task row costs a few loads
// and stores: its generation's rows, the previous generation's (or step
// 0's state rows), where its data comes from and where its emitted rows go,
// all at the slot's index. A request's records are touched when it joins
// (both generations' rows taken) and at its events: a session's first step
// (its state rows given back after it) and its last step (final states,
// the request finished); completing a task visits just those. Every slot
// with steps left runs in every task of a round when the slots fit one
// task (up to maxTasksToSubmit steps each a round, as Algorithm 1 batches a
// chain's next step behind its last); otherwise the slots are cut into
// tasks of the largest batch size (earliest deadline first when some have
// one, else taking turns across rounds). For a known set of requests the
// longest-first order instead gives each task the chains with the most
// steps left, sized so that the steps left spread evenly over the tasks the
// longest chain still needs (EngineOptions::ChainOrder). The executor
// copies the host's rows straight into the results: a synchronous one as it
// runs the task, an asynchronous one when the task is waited for (a request
// that ends before then keeps its outputs until that round has completed).
// The same rows are read and written as through the scheduler, so results
// keep their bits (batch invariance).
//
//===----------------------------------------------------------------------===//
#include "engine/EngineImpl.h"

#include <algorithm>
#include <cstring>

using namespace cellrun;

void EngineWorker::setUpChainBatch(uint32_t largestBatch) {
  const ModelStructure &structure = parser_->structure();
  chainBatch_ = options_.chainBatch && options_.policy == Policy::Cellular &&
                structure.kind == cellpack::Structure::Chain &&
                structure.cells.size() == 1;
  if (!chainBatch_)
    return;
  const CellRoles &roles = structure.cells[0];
  // Results placed for every step (CellGraph::readTarget) need fp32 or
  // int64 outputs.
  for (uint32_t output = 0; output < roles.outputCount; ++output)
    chainBatch_ &= roles.outputTypes[output] == cellpack::DType::F32 ||
                   roles.outputTypes[output] == cellpack::DType::I64;
  if (!chainBatch_)
    return;
  chainLargest_ = std::max(1u, largestBatch);
  // One task's worth running at once unless told otherwise; longest first
  // orders every request that fits.
  if (options_.chainOrder == EngineOptions::ChainOrder::Turns)
    runningCap_.store(options_.maxRunning ? options_.maxRunning : chainLargest_,
                      std::memory_order_relaxed);
  chainFinalOnly_.clear();
  for (uint32_t output : roles.stateOutputs)
    if (std::find(roles.emitted.begin(), roles.emitted.end(), output) ==
        roles.emitted.end())
      chainFinalOnly_.push_back(output);
  chainSlots_.configure(roles.outputCount +
                            static_cast<uint32_t>(roles.dataInputs.size()),
                        static_cast<uint32_t>(chainStates_.size()),
                        static_cast<uint32_t>(chainData_.size()),
                        static_cast<uint32_t>(roles.emitted.size()),
                        static_cast<uint32_t>(chainFinalOnly_.size()));
  // A projected input's products can stay where the projection writes
  // them when that pool is the one the step reads the input from (the
  // executor's pools are per row type: the same rows).
  productsInPools_.assign(roles.dataInputs.size(), 0);
  for (size_t d = 0; d < roles.dataInputs.size(); ++d)
    if (const cellpack::CellType *projection = roles.dataProjections[d])
      productsInPools_[d] = &executor_->pool(*projection, true, 0) ==
                            pools_[poolId(0, false, roles.dataInputs[d])].pool;
}

void EngineWorker::setUpProductNeed() {
  productNeed_.clear();
  productPools_.clear();
  if (std::none_of(productsInPools_.begin(), productsInPools_.end(),
                   [](uint8_t in) { return in; }))
    return;
  // A request's need with its products in pools: a row a step (added per
  // request) in place of the two rows of data a step would be written
  // into. The projection's input rows are taken for its tasks outside any
  // reservation: where they come from the same pool, one row of it is
  // left unheld, so one is always free.
  const CellRoles &roles = parser_->structure().cells[0];
  productNeed_ = fixedNeed_;
  for (size_t d = 0; d < productsInPools_.size(); ++d) {
    if (!productsInPools_[d])
      continue;
    uint32_t pool = poolId(0, false, roles.dataInputs[d]);
    productPools_.push_back(pool);
    productNeed_[pool] -= std::min(productNeed_[pool], 2u);
    if (&executor_->pool(*roles.dataProjections[d], false, 0) ==
        pools_[pool].pool)
      ++productNeed_[pool];
  }
}

uint32_t EngineWorker::productBlock(uint32_t d) const {
  return static_cast<uint32_t>(
      std::count(productsInPools_.begin(), productsInPools_.begin() + d, 1));
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
  auto inPools = [&](uint32_t c) { // a data input read from its products
    return entry.productsInPools && c >= outputs &&
           productsInPools_[c - outputs];
  };
  for (uint32_t generation = 0; generation < 2; ++generation) {
    int32_t *rows = graph.chainRows(generation);
    for (uint32_t c = 0; c < rowSlots; ++c) {
      if (rows[c] >= 0 || inPools(c))
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
  slots.withDeadlines += entry.deadline != UINT64_MAX;
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
  for (size_t k = 0; k < chainData_.size(); ++k) {
    uint32_t d = chainData_[k].index;
    slots.data[k][slot] = graph.stepRow(0, d);
    slots.products[k][slot] =
        inPools(outputs + d)
            ? entry.productRows.data() + size_t(productBlock(d)) * graph.steps()
            : nullptr;
  }
  for (size_t e = 0; e < roles.emitted.size(); ++e) {
    uint32_t output = roles.emitted[e];
    uint8_t *rows = graph.emittedRowsOf(output);
    slots.emittedAt[e][slot] = rows;
    slots.emittedFinalAt[e][slot] = rows ? nullptr : graph.finalRowOf(output);
  }
  for (size_t k = 0; k < chainFinalOnly_.size(); ++k)
    slots.finalAt[k][slot] = static_cast<uint8_t *>(
        graph.readTarget(graph.steps() - 1, chainFinalOnly_[k]));
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
  chainSlotsDone_ -= chainSlots_.next[slot] >= chainSlots_.steps[slot];
  chainSlots_.remove(slot);
  entry.chainSlot = -1;
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
  std::vector<uint32_t> &order = chainOrder_;
  order.clear();
  for (uint32_t slot = 0; slot < slots.size(); ++slot)
    if (runs(slot))
      order.push_back(slot);
  if (order.empty())
    return;
  uint32_t tasks = std::max(1u, options_.maxTasksToSubmit);
  auto hasDeadline = [&](uint32_t slot) {
    return slots.deadline[slot] != UINT64_MAX;
  };
  auto anyDeadline = [&] {
    return slots.withDeadlines > 0 &&
           std::any_of(order.begin(), order.end(), hasDeadline);
  };
  // Longest first, unless requests wait for room: those that finish
  // first, making room, are the short ones.
  if (options_.chainOrder == EngineOptions::ChainOrder::LongestFirst &&
      !headWaits_ && !anyDeadline()) {
    launchLongestChainsFirst(round, tasks);
    return;
  }
  std::vector<uint32_t> &taskSlots = chainTaskSlots_;
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
  if (anyDeadline())
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

void EngineWorker::launchLongestChainsFirst(std::vector<InFlight> &round,
                                            uint32_t tasks) {
  ChainSlots &slots = chainSlots_;
  auto left = [&](uint32_t slot) {
    return slots.steps[slot] - slots.next[slot];
  };
  std::vector<uint32_t> &order = chainOrder_;
  std::vector<uint32_t> &taskSlots = chainTaskSlots_;
  for (uint32_t t = 0; t < tasks; ++t) {
    order.clear();
    uint64_t stepsLeft = 0;
    uint32_t most = 0;
    for (uint32_t slot = 0; slot < slots.size(); ++slot)
      if (uint32_t steps = left(slot)) {
        order.push_back(slot);
        stepsLeft += steps;
        most = std::max(most, steps);
      }
    if (order.empty())
      return;
    // The longest chain needs `most` more tasks whatever is done; rows
    // enough that the others' steps fit in those tasks too, evenly.
    uint64_t spread = (stepsLeft + most - 1) / most;
    size_t take = static_cast<size_t>(
        std::min<uint64_t>({order.size(), uint64_t(chainLargest_), spread}));
    if (take < order.size())
      std::nth_element(order.begin(), order.begin() + take, order.end(),
                       [&](uint32_t a, uint32_t b) {
                         uint32_t leftA = left(a), leftB = left(b);
                         return leftA != leftB ? leftA > leftB : a < b;
                       });
    taskSlots.assign(order.begin(), order.begin() + take);
    round.push_back(launchChainTask(taskSlots));
  }
}

EngineWorker::InFlight
EngineWorker::launchChainTask(const std::vector<uint32_t> &taskSlots) {
  // Its nodes and columns sized as they were (every field of each one kept
  // is set below).
  InFlight flight = takeFlight(/*sized=*/true);
  flight.round = roundNumber_;
  flight.chainBatch = true;
  flight.task.part = 0;
  const CellRoles &roles = parser_->structure().cells[0];
  uint32_t capacity = static_cast<uint32_t>(taskSlots.size());
  sizeTaskRows(flight, roles, capacity);
  flight.submitted = Clock::now();

  // Column by column: each pass one short loop over the task's slots.
  ChainSlots &slots = chainSlots_;
  const uint32_t *order = taskSlots.data();
  uint32_t outputs = roles.outputCount;
  std::vector<uint32_t> &steps = chainSteps_;
  steps.resize(capacity);
  for (uint32_t r = 0; r < capacity; ++r)
    steps[r] = slots.next[order[r]];
  // This step's generation of rows, and the one before it for the states
  // (step 0: zeros, or a session's state): a state input and the output
  // that feeds it in one pass over the output's two generations.
  // Rows of random requests alternate generations at random: a select by
  // mask, not a branch the processor would mispredict half the time.
  auto generationRows = [&](uint32_t column, int32_t *to, int32_t *before,
                            const int32_t *initial) {
    const int32_t *even = slots.rows[0][column].data();
    const int32_t *odd = slots.rows[1][column].data();
    for (uint32_t r = 0; r < capacity; ++r) {
      uint32_t slot = order[r];
      int32_t takeOdd = -static_cast<int32_t>(steps[r] & 1);
      int32_t evenRow = even[slot], oddRow = odd[slot];
      to[r] = (evenRow & ~takeOdd) | (oddRow & takeOdd);
      if (!before)
        continue; // the same every row: predicted
      int32_t first = -static_cast<int32_t>(steps[r] == 0);
      int32_t previous = (oddRow & ~takeOdd) | (evenRow & takeOdd);
      before[r] = (previous & ~first) | (initial[slot] & first);
    }
  };
  // Each state with the output that feeds it (a second state fed by the
  // same output, if any, makes the output's rows again: the same values).
  for (uint32_t o = 0; o < outputs; ++o) {
    bool fed = false;
    for (size_t k = 0; k < chainStates_.size(); ++k)
      if (chainStates_[k].index == o) {
        generationRows(o, flight.outputRowData[o],
                       flight.inputRowData[chainStates_[k].input],
                       slots.initial[k].data());
        fed = true;
      }
    if (!fed)
      generationRows(o, flight.outputRowData[o], nullptr, nullptr);
  }
  for (const ChainInput &zero : chainZeros_)
    std::fill_n(flight.inputRowData[zero.input], capacity,
                static_cast<int32_t>(zero.index)); // the zero row
  // Request data: its rows, and the bytes written into them with the task,
  // a column an input (a projected input's products are in their rows
  // already: no column then).
  Executor::TaskIO &io = flight.io;
  io.writes.clear();
  io.reads.clear();
  resizeColumns(io.writeColumns, spareWriteColumns_, chainData_.size());
  size_t columns = 0;
  for (size_t k = 0; k < chainData_.size(); ++k) {
    const ChainInput &input = chainData_[k];
    int32_t *rows = flight.inputRowData[input.input];
    generationRows(outputs + input.index, rows, nullptr, nullptr);
    const uint8_t *const *base = slots.data[k].data();
    const int32_t *const *products = slots.products[k].data();
    const uint32_t *stride = slots.stride.data();
    Executor::WriteColumn &column = io.writeColumns[columns];
    column.input = input.input;
    column.bytes.resize(capacity);
    uint32_t written = 0;
    for (uint32_t r = 0; r < capacity; ++r) {
      uint32_t slot = order[r];
      if (products[slot]) {
        rows[r] = products[slot][steps[r]];
        continue;
      }
      ++written;
      const uint8_t *bytes = slots.flags[slot] & ChainSlots::kUnevenSteps
                                 ? entries_.find(slots.keys[slot])
                                       ->graph->stepRow(steps[r], input.index)
                                 : base[slot] + size_t(steps[r]) * stride[slot];
      column.bytes[r] = bytes;
      // Request data, last read a round ago or made on the submitting
      // thread: asked for now, long before the task reads it.
      __builtin_prefetch(bytes);
    }
    if (written == 0)
      continue;
    if (written == capacity) {
      ++columns;
      continue;
    }
    // Some rows' products, others' data (requests admitted while the
    // projections could not run): the data row by row.
    for (uint32_t r = 0; r < capacity; ++r)
      if (!products[order[r]])
        io.writes.push_back({input.input, r, column.bytes[r], true});
  }
  resizeColumns(io.writeColumns, spareWriteColumns_, columns);
  // Emitted rows go straight into the results, on every executor (an
  // asynchronous one writes them as it finishes the task: a request that
  // ends before then keeps its outputs until that round has completed,
  // keptOutputs_); a last step's final states that are not emitted too.
  // A request that did not ask for an output's rows reads none of them,
  // only its last step's when it asked for the final state.
  resizeColumns(io.readColumns, spareReadColumns_,
                roles.emitted.size() + chainFinalOnly_.size());
  for (size_t e = 0; e < roles.emitted.size(); ++e) {
    Executor::ReadColumn &column = io.readColumns[e];
    column.output = roles.emitted[e];
    column.to.resize(capacity);
    size_t rowBytes = roles.outputRowBytes[column.output];
    uint8_t *const *at = slots.emittedAt[e].data();
    uint8_t *const *finalAt = slots.emittedFinalAt[e].data();
    for (uint32_t r = 0; r < capacity; ++r) {
      uint32_t slot = order[r];
      uint8_t *destination = at[slot] ? at[slot] + size_t(steps[r]) * rowBytes
                             : steps[r] + 1 == slots.steps[slot] ? finalAt[slot]
                                                                 : nullptr;
      column.to[r] = destination;
    }
  }
  for (size_t k = 0; k < chainFinalOnly_.size(); ++k) {
    Executor::ReadColumn &column = io.readColumns[roles.emitted.size() + k];
    column.output = chainFinalOnly_[k];
    column.to.assign(capacity, nullptr); // last steps' below
  }
  // Nothing is read into the flight's buffer.
  std::fill(flight.firstRead.begin(), flight.firstRead.end(), 0);
  flight.nodes.resize(capacity);
  for (uint32_t r = 0; r < capacity; ++r) {
    uint32_t slot = order[r];
    uint32_t step = steps[r];
    PlannedNode &node = flight.nodes[r];
    node.request = slots.keys[slot];
    node.node = step;
    slots.next[slot] = step + 1;
    slots.boundRound[slot] = roundNumber_;
    uint8_t flags = slots.flags[slot];
    bool last = step + 1 == slots.steps[slot];
    chainSlotsDone_ += last;
    if (!(flags & ChainSlots::kStarted)) { // its graph hears at the end
      slots.startedAt[slot] = flight.submitted;
      slots.flags[slot] = flags | ChainSlots::kStarted;
    }
    if (!last && !(step == 0 && (flags & ChainSlots::kPinned)))
      continue;
    flight.chainEvents.push_back(r);
    for (size_t k = 0; last && k < chainFinalOnly_.size(); ++k) {
      if (!slots.finalAt[k][slot])
        continue; // not asked for
      Executor::ReadColumn &column = io.readColumns[roles.emitted.size() + k];
      column.to[r] = slots.finalAt[k][slot];
    }
  }
  if (!flight.nodes.empty())
    submitBound(flight, roles);
  return flight;
}

void EngineWorker::completeChainRows(InFlight &flight) {
  // The rows are in the results already: only the events (mostly last
  // steps), their records asked for first.
  for (uint32_t row : flight.chainEvents)
    if (const Entry *entry = entries_.find(flight.nodes[row].request))
      prefetchRecords(*entry);
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

void EngineWorker::prefetchRecords(const Entry &entry) {
  // The graph lies in the entry (one allocation): its lines are the entry's.
  prefetchLines(&entry, sizeof(Entry));
}
