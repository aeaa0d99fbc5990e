//===- ChainSlots.h - A worker's running chains in flat arrays --*- C++ -*-===//
//
// The persistent batch of a worker's chain requests (cellular batching,
// EngineChainBatch.cpp): one slot per request, every
// field an array indexed by slot, so that binding a task walks dense arrays
// instead of a request's records (scheduler subgraph, policy record, entry,
// cell graph) row by row. A request joins with add() and leaves with
// remove(), which moves the last slot into the hole: both O(1).
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
  }

  uint32_t size() const { return static_cast<uint32_t>(keys.size()); }

  /// A new slot at the end (its fields set by the caller); its index.
  uint32_t add() {
    auto grow = [](auto &columns) {
      for (auto &column : columns)
        column.emplace_back();
    };
    keys.emplace_back();
    next.emplace_back();
    steps.emplace_back();
    deadline.emplace_back();
    stride.emplace_back();
    flags.emplace_back();
    startedAt.emplace_back();
    boundRound.emplace_back();
    grow(rows[0]);
    grow(rows[1]);
    grow(initial);
    grow(data);
    grow(products);
    grow(emittedAt);
    grow(emittedFinalAt);
    grow(finalAt);
    return size() - 1;
  }

  /// Removes slot `slot`: the last slot takes its place (returns the key
  /// that moved, or `keys[slot]` itself when it was the last).
  uint64_t remove(uint32_t slot) {
    uint32_t last = size() - 1;
    auto move = [&](auto &column) {
      column[slot] = column[last];
      column.pop_back();
    };
    auto moveAll = [&](auto &columns) {
      for (auto &column : columns)
        move(column);
    };
    uint64_t moved = keys[last];
    move(keys);
    move(next);
    move(steps);
    move(deadline);
    move(stride);
    move(flags);
    move(startedAt);
    move(boundRound);
    moveAll(rows[0]);
    moveAll(rows[1]);
    moveAll(initial);
    moveAll(data);
    moveAll(products);
    moveAll(emittedAt);
    moveAll(emittedFinalAt);
    moveAll(finalAt);
    return moved;
  }

  enum Flag : uint8_t {
    /// Its data rows are not evenly spaced: the graph finds each step's.
    kUnevenSteps = 1,
    /// Step 0 reads a session's state: the engine gives it back after.
    kPinned = 2,
    /// Bound at least once (startedAt is set).
    kStarted = 4,
  };

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
