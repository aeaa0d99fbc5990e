//===- ChainSlots.h - A worker's running chains in flat arrays --*- C++ -*-===//
//
// The persistent batch of a worker's chain requests (cellular batching,
// EngineChainBatch.cpp): one slot per request, every
// field an array indexed by slot, so that binding a task walks dense arrays
// instead of a request's records (scheduler subgraph, policy record, entry,
// cell graph) row by row. A request joins with add() and leaves with
// remove(): both O(1) amortised. A slot left stays a hole (no steps to run,
// so the rounds' walks pass over it) until an add() takes it, the most
// recently left first (its lines are the warmest), and holes at the end are
// cut off (walks stay as long as the slots in use): no other request's slot
// moves, so leaving touches no other request's records.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_ENGINE_CHAINSLOTS_H
#define CELLRUN_ENGINE_CHAINSLOTS_H

#include <chrono>
#include <cstdint>
#include <vector>

namespace cellrun {

struct ChainSlots {
  /// The fields per request, each for `rowSlots` pool rows of a generation
  /// (a cell's outputs, then its data inputs), `states` state inputs,
  /// `dataInputs` data inputs and `emitted` emitted outputs.
  void configure(uint32_t rowSlots, uint32_t states, uint32_t dataInputs,
                 uint32_t emitted, uint32_t finalOnly) {
    rows[0].assign(rowSlots, {});
    rows[1].assign(rowSlots, {});
    initial.assign(states, {});
    data.assign(dataInputs, {});
    products.assign(dataInputs, {});
    emittedAt.assign(emitted, {});
    emittedFinalAt.assign(emitted, {});
    finalAt.assign(finalOnly, {});
    holes.clear();
    withDeadlines = 0;
  }

  /// Slots in all, holes included: walks go over [0, size()).
  uint32_t size() const { return static_cast<uint32_t>(keys.size()); }

  /// A slot for a new request, a hole or a new one at the end, its fields
  /// as a new slot's (the caller sets them); its index.
  uint32_t add() {
    while (!holes.empty()) {
      uint32_t slot = holes.back();
      holes.pop_back();
      if (slot >= size() || keys[slot] != 0)
        continue; // cut off the end since it was left
      startedAt[slot] = {};
      boundRound[slot] = 0;
      flags[slot] = 0;
      return slot;
    }
    // No holes are listed now, so none can name the slot made here.
    forEachColumn([](auto &column) { column.emplace_back(); });
    deadline.back() = UINT64_MAX; // none until the caller sets one
    return size() - 1;
  }

  /// Makes slot `slot` a hole (key 0, which no request has: no steps left,
  /// so walks skip it; no deadline); holes at the end are cut off.
  void remove(uint32_t slot) {
    withDeadlines -= deadline[slot] != UINT64_MAX;
    keys[slot] = 0;
    next[slot] = 0;
    steps[slot] = 0;
    deadline[slot] = UINT64_MAX;
    holes.push_back(slot);
    while (!keys.empty() && keys.back() == 0)
      forEachColumn([](auto &column) { column.pop_back(); });
  }

  enum Flag : uint8_t {
    /// Its data rows are not evenly spaced: the graph finds each step's.
    kUnevenSteps = 1,
    /// Step 0 reads a session's state: the engine gives it back after.
    kPinned = 2,
    /// Bound at least once (startedAt is set).
    kStarted = 4,
  };

  /// Calls visit(column) for every array indexed by slot.
  template <typename Visit> void forEachColumn(Visit visit) {
    visit(keys);
    visit(next);
    visit(steps);
    visit(deadline);
    visit(stride);
    visit(flags);
    visit(startedAt);
    visit(boundRound);
    for (auto *columns : {&rows[0], &rows[1]})
      for (auto &column : *columns)
        visit(column);
    for (auto &column : initial)
      visit(column);
    for (auto &column : data)
      visit(column);
    for (auto &column : products)
      visit(column);
    for (auto *columns : {&emittedAt, &emittedFinalAt, &finalAt})
      for (auto &column : *columns)
        visit(column);
  }

  /// Slots no request holds, taken by add() from the back.
  std::vector<uint32_t> holes;
  /// Slots whose deadline is not UINT64_MAX (the caller counts the ones it
  /// sets; remove() the ones that go): none, and the rounds look for none.
  uint32_t withDeadlines = 0;
  std::vector<uint64_t> keys;     // the request's key in the worker's table
  std::vector<uint32_t> next;     // the step the next task runs
  std::vector<uint32_t> steps;    // its steps in all
  std::vector<uint64_t> deadline; // CellGraph::deadline()
  std::vector<uint32_t> stride;   // bytes from one step's data to the next
  std::vector<uint8_t> flags;
  /// When its first step was bound (kStarted), for its queue time.
  std::vector<std::chrono::steady_clock::time_point> startedAt;
  /// The round its last step was bound in (it moves only once that round
  /// has completed).
  std::vector<uint64_t> boundRound;
  /// Per generation, per row slot: the pool row (-1 until taken), as the
  /// graph's chainRows.
  std::vector<std::vector<int32_t>> rows[2];
  /// Per state input: the row step 0 reads (a zero row or a session's).
  std::vector<std::vector<int32_t>> initial;
  /// Per data input: step 0's row of request data.
  std::vector<std::vector<const uint8_t *>> data;
  /// Per data input: the pool rows holding its projected products, one a
  /// step (Entry::productRows), or null where the data rows are written.
  std::vector<std::vector<const int32_t *>> products;
  /// Per emitted output: where step 0's row goes in the result (null: the
  /// request did not ask for the rows), and where its last step's row goes
  /// when only the final state was asked for (else null).
  std::vector<std::vector<uint8_t *>> emittedAt;
  std::vector<std::vector<uint8_t *>> emittedFinalAt;
  /// Per state output that is not emitted: where the last step's row goes
  /// (the request's final state; null: not asked for).
  std::vector<std::vector<uint8_t *>> finalAt;
};

} // namespace cellrun

#endif // CELLRUN_ENGINE_CHAINSLOTS_H
