//===- CellGraph.h - A request unfolded into cell nodes --------*- C++ -*-===//
//
// The request processor's view of one request: its cell-graph nodes (one
// cell invocation each), where every node input comes from (zeros, the
// request's data, or an output of an earlier node), and how the graph grows.
// Nodes are handed out as ready subgraphs (paper section 4.3): nodes of one
// cell whose dependencies outside the subgraph are met.
//  - chain: one subgraph of one node a step;
//  - seq2seq: the encoder chain, then, once it has run, a decoder chain that
//    grows one node per finished step, `decodeWindow` nodes ahead of the
//    last step the host has seen. Each decoder step reads the token the step
//    before it wrote, on the device, so the steps of a window run back to
//    back; the host reads each token when its step finishes and stops the
//    chain at EOS or the decode limit (the steps already issued past EOS are
//    dropped). When the token output and input differ in type, the host
//    feeds each token back itself and the window is one step;
//  - tree: one subgraph holding every leaf; once they have run, one subgraph
//    of every internal node, each read by its parent (the scheduler issues
//    successive levels in successive tasks);
//  - custom: the chains a registered Unfolder hands over.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHED_CELLGRAPH_H
#define CELLRUN_SCHED_CELLGRAPH_H

#include "base/FunctionRef.h"
#include "base/PrefetchLines.h"
#include "base/Span.h"
#include "request/ModelStructure.h"

#include "cellrun/Request.h"

#include <atomic>
#include <chrono>
#include <forward_list>
#include <memory>
#include <utility>

namespace cellrun {

struct NodeSource {
  /// Pinned: a pool row the request did not produce (a session's state).
  /// Held: a row read by nodes until the request ends: request data
  /// written once with the first node that reads it (a decoder's memory
  /// mask), or, with no bytes, a row the encoder's steps fill on the device
  /// (a decoder's memory: EngineWorker::placeInMemories).
  enum class Kind : uint8_t { Zero, Data, Output, Pinned, Held };
  Kind kind = Kind::Zero;
  uint32_t node = 0;   // Output: the producing node
  uint32_t output = 0; // Output: its output index; Held: the held row's slot
  const uint8_t *bytes = nullptr; // Data, Held: the row's bytes
  int32_t row = -1;               // Pinned: the pool row
};

/// A node's inputs and output rows live in flat arrays of its graph
/// (CellGraph::inputs and CellGraph::outputRows), one allocation per
/// request rather than two per node.
struct GraphNode {
  uint32_t part = 0;        // index into ModelStructure::cells
  uint32_t firstInput = 0;  // its inputs in the graph's sources
  uint32_t firstOutput = 0; // its pool rows in the graph's output rows
  uint32_t consumers = 0;   // nodes not yet run that read its outputs
  /// Of those, the ones not yet bound to rows (plus one for a session's
  /// final state, which the engine parks): once the last reader is bound,
  /// the rows may go to a later task, since tasks run in order.
  uint32_t unbound = 0;
  int32_t parent = -1; // tree
  bool done = false;
};

/// Nodes of one part whose dependencies outside them are met.
struct ReadySubgraph {
  uint32_t part = 0;
  /// The nodes: `nodes` when not empty, else `count` consecutive nodes from
  /// `first` (a chain added in one go: no list to allocate).
  std::vector<uint32_t> nodes;
  uint32_t first = 0, count = 0;
  /// Empty: a chain (node k reads node k - 1). Otherwise a tree:
  /// successor[k] is the position of the node that reads node k (greater
  /// than k), or -1.
  std::vector<int32_t> successor;
  /// These nodes continue the request's open chain of this part (a decoder
  /// growing): the first reads the chain's last node.
  bool continuesChain = false;

  size_t size() const { return nodes.empty() ? count : nodes.size(); }
  uint32_t node(size_t k) const {
    return nodes.empty() ? first + static_cast<uint32_t>(k) : nodes[k];
  }
  /// `nodes` filled in from first and count (for policies keeping a list).
  void materialize() {
    if (!nodes.empty())
      return;
    for (uint32_t k = 0; k < count; ++k)
      nodes.push_back(first + k);
    count = 0;
  }
};

using Clock = std::chrono::steady_clock;

/// An empty result tensor for output `output` of a part, its storage
/// reserved for `rows` rows (per step: shape [0, row shape...]).
OutputTensor newOutputTensor(const CellRoles &roles, uint32_t output,
                             const std::string &name, bool perStep,
                             size_t rows);

class CellGraph final : public GraphBuilder {
public:
  /// `decodeWindow`: seq2seq decoder steps issued ahead of the last step
  /// whose token the host has read (at least 1). `directReads`: the engine
  /// copies rows to readTarget (a synchronous executor, where a task's
  /// copies are done when it returns; or the engine's chain batch, which
  /// copies them there when the task completes).
  CellGraph(const ModelStructure &structure, Request request,
            uint32_t decodeWindow = 1, bool directReads = false);
  ~CellGraph();

  /// What the results made before their requests start (queued requests')
  /// hold, shared by an engine's graphs, and the most they may hold.
  struct ResultBudget {
    std::atomic<int64_t> held{0};
    int64_t limit = int64_t(16) << 20;
  };
  /// A chain's result of at most this many bytes may be made early.
  static constexpr size_t kPreparedResultBytes = 64 * 1024;
  /// Makes a chain's result tensors now, on the calling thread (the engine
  /// calls it on the thread that submits the request), when they take at
  /// most kPreparedResultBytes and `budget` has room for them: the engine's
  /// thread then only takes them over when the request starts, and the
  /// room is given back (or when the graph goes without starting). Other
  /// results are made when the request starts, so queued requests hold
  /// little memory.
  void prepareChainResult(const std::shared_ptr<ResultBudget> &budget);
  /// Whether prepareChainResult made the tensors (until the start).
  bool hasPreparedResult() const { return !preparedOutputs_.empty(); }
  /// After the start: the room the prepared result took in its budget,
  /// handed over to the caller to give back (0 when none is held). The
  /// engine gives back all that its requests started in a round took in one
  /// subtraction: a locked instruction per request waited for the store
  /// buffer to drain (3 ns a row-step, perf). Room not taken is given back
  /// when the graph goes.
  int64_t takePreparedRoom() { return std::exchange(preparedBytes_, 0); }
  /// Stays where it is made (chainRows_ may point into it).
  CellGraph(const CellGraph &) = delete;
  CellGraph &operator=(const CellGraph &) = delete;

  const Request &request() const { return request_; }
  /// Before start: the rows of a chain's steps as its cell reads them (the
  /// request's rows with its projected inputs computed, EngineProjections).
  void replaceSteps(StepRows steps) { request_.steps = std::move(steps); }
  std::vector<GraphNode> &nodes() { return nodes_; }
  const std::vector<GraphNode> &nodes() const { return nodes_; }
  /// Where each input of `node` comes from, and the pool rows of its
  /// outputs (-1 until it is bound): views valid until the graph grows.
  Span<NodeSource> inputs(uint32_t node) {
    const GraphNode &at = nodes_[node];
    return {sources_.data() + at.firstInput,
            structure_.cells[at.part].inputCount};
  }
  Span<int32_t> outputRows(uint32_t node) {
    const GraphNode &at = nodes_[node];
    return {outputRows_.data() + at.firstOutput,
            structure_.cells[at.part].outputCount};
  }
  const CellRoles &roles(uint32_t node) const {
    return structure_.cells[chain_ ? 0 : nodes_[node].part];
  }

  // Chains (structure chain): node k is step k; nothing is kept per node.
  // Its state inputs read the outputs of step k - 1 (zeros, or a session's
  // parked state, at step 0), its data inputs the request's rows of step k.
  // Steps k and k + 2 use the same pool rows, a generation: tasks run in
  // order on a worker, so step k + 1 has read step k's outputs, and the
  // host has had them, before step k + 2 writes them. So a chain holds two
  // generations of rows for all its steps, taken at its first steps.
  bool isChain() const { return chain_; }
  uint32_t steps() const { return steps_; }
  /// The rows of generation `generation` (0 or 1): every output's, then
  /// every data input's (-1 until taken).
  /// Whether its chain rows are laid out (startChain ran): before that it
  /// holds none.
  bool chainRowsLaidOut() const { return chainRowsPerGeneration_ > 0; }
  int32_t *chainRows(uint32_t generation) {
    return chainRows_ + generation * chainRowsPerGeneration_;
  }
  /// Row `input` (of the cell's data inputs) of step `step`.
  const uint8_t *stepRow(uint32_t step, uint32_t input) const {
    if (uniformSteps_)
      return stepBytes_ + size_t(step) * stepStride_ + stepOffsets_[input];
    return request_.steps.row(step, input);
  }
  /// A session chunk's state rows for step 0 (input, pool row).
  const std::vector<std::pair<uint32_t, int32_t>> &initialState() const {
    return initialState_;
  }
  /// The pinned rows have been given back (after step 0 ran).
  bool pinnedReleased = false;
  /// A chain step whose completion needs nothing of the graph but the
  /// count (every row it read went straight into the result, it is not the
  /// last, and no session state waits to be given back after it): the
  /// engine's fast path for it instead of nodeDone.
  bool stepNeedsNothing(uint32_t node) const {
    return allDirect_ && node + 1 < steps_ &&
           (node > 0 || initialState_.empty());
  }
  void countStepDone() { --outstanding_; }
  /// A chain whose every read goes straight into the result (readTarget),
  /// and whose steps' data rows are evenly spaced (stepStride bytes apart):
  /// what the engine's persistent chain batch needs to bind it from flat
  /// arrays (EngineChainBatch.cpp).
  bool chainReadsAllDirect() const { return chain_ && allDirect_; }
  bool stepsEvenlySpaced() const { return uniformSteps_; }
  uint32_t stepStride() const { return stepStride_; }
  /// The chain batch counts steps itself: the steps from `node` on are the
  /// ones not done (before a node's nodeDone, or when it leaves the batch).
  void resumeChainAt(uint32_t node) { outstanding_ = steps_ - node; }
  /// Prefetches what binding `node` reads, in two stages a few nodes
  /// apart: its record first, then (once that has arrived) its inputs and
  /// output rows, its producers' output rows and its data. A task binds
  /// hundreds of nodes of different requests, each of them cold.
  void prefetchNode(uint32_t node) const { __builtin_prefetch(&nodes_[node]); }
  void prefetchInputs(uint32_t node) const {
    const GraphNode &at = nodes_[node];
    const NodeSource *sources = sources_.data() + at.firstInput;
    __builtin_prefetch(sources);
    __builtin_prefetch(reinterpret_cast<const char *>(sources) + 64);
    __builtin_prefetch(outputRows_.data() + at.firstOutput, 1);
    if (at.firstOutput > 0) // a chain's producer comes just before it
      __builtin_prefetch(outputRows_.data() + at.firstOutput - 1);
  }
  RequestResult &result() override { return result_; }
  bool finished() const { return finished_; }
  /// Handed-over nodes that have not run (custom: a request with none left
  /// that has not finished is stuck).
  uint32_t outstanding() const { return outstanding_; }

  /// The ready subgraphs at the start, appended to `ready` (a custom
  /// unfolder may refuse); the second form returns them.
  Status start(std::vector<ReadySubgraph> &ready);
  Result<std::vector<ReadySubgraph>> start();
  /// Chain sessions, before start(): the first node's state input `input`
  /// reads pool row `row` (the state the session's last chunk ended with).
  void continueFrom(std::vector<std::pair<uint32_t, int32_t>> stateRows) {
    initialState_ = std::move(stateRows);
  }
  /// A session chunk that does not end it keeps its last node's outputs
  /// (the engine parks the state rows for the next chunk).
  bool keepsFinalState() const {
    return request_.session.id != 0 && !request_.session.end;
  }
  /// Some node reads a pool row the request did not produce (a session's
  /// state): NodeSource::Kind::Pinned.
  bool hasPinned() const { return !initialState_.empty(); }

  /// The outputs of `node` the host reads when it has run (so a backend
  /// can copy them back with the task); a custom unfolder may read others.
  Span<const uint32_t> hostReads(uint32_t node) const;
  /// A chain's result storage for output `output` (direct reads): its
  /// emitted rows, step 0's first (null: not asked for), and its final
  /// state's row (null: not asked for).
  uint8_t *emittedRowsOf(uint32_t output) const {
    return directTargets_ ? chainOutputs_[output].emittedRows : nullptr;
  }
  uint8_t *finalRowOf(uint32_t output) const {
    return directTargets_ ? chainOutputs_[output].finalRow : nullptr;
  }
  /// A chain's final state that is emitted too is read from the last
  /// step's pool row (nodeDone's reader) instead of copied from its
  /// emitted row: for pools in host memory, where that row is in cache,
  /// while an emitted row may have gone past the cache (streamed stores)
  /// and would be read back from memory. The reader given to the last
  /// node's nodeDone must then read that output's pool row too, though the
  /// task placed it in the result itself.
  void readFinalStatesFromPools(bool fromPools) {
    finalStatesFromPools_ = fromPools;
  }
  /// True when a chain's result has no place for output `output` of
  /// `node` (its request's `outputs` leave it out): nothing is read.
  bool skipsRead(uint32_t node, uint32_t output) const {
    if (!directTargets_) // not a chain, or no direct reads
      return false;
    const ChainOutput &chain = chainOutputs_[output];
    return chain.emittedTensor < 0 &&
           (node + 1 != steps_ || chain.finalTensor < 0);
  }
  /// Where output `output` of `node` goes in the result, when the task may
  /// copy it there itself (a chain's fp32 and int64 outputs: the result's
  /// storage is sized for every step when the graph starts), else null. A
  /// row copied there is not read again by nodeDone; the caller must copy
  /// it before nodeDone(node) and never after the request has ended.
  void *readTarget(uint32_t node, uint32_t output) {
    if (!directTargets_) // not a chain, or no direct reads
      return nullptr;
    const ChainOutput &chain = chainOutputs_[output];
    if (chain.emittedRows)
      return chain.emittedRows + node * chain.rowBytes;
    return node + 1 == steps_ ? chain.finalRow : nullptr;
  }

  /// Reads the outputs of `node` the result needs (`read(pool output o of
  /// node, bytes)`) that readTarget did not place, then grows the graph:
  /// returns the subgraphs that became ready. Sets finished() when the
  /// request is complete.
  using RowReader =
      FunctionRef<Status(uint32_t node, uint32_t output, void *bytes)>;
  Status nodeDone(uint32_t node, const RowReader &read,
                  std::vector<ReadySubgraph> &ready);
  Result<std::vector<ReadySubgraph>> nodeDone(uint32_t node,
                                              const RowReader &read);

  /// Pool rows of each row type the request may hold at once, as
  /// (part, output or input index, isOutput) tallies: an upper bound the
  /// engine reserves before admitting the request. `nodesInFlight` is how
  /// many consecutive nodes of one chain may be bound to rows before the
  /// first of them completes.
  struct RowNeed {
    uint32_t part;
    uint32_t index;
    bool isOutput;
    uint32_t rows;
  };
  Result<std::vector<RowNeed>> peakRows(uint32_t nodesInFlight) const;

  // GraphBuilder, for custom unfolders (CellGraphBuilder.cpp).
  Result<uint32_t> addNode(std::string_view cell) override;
  Status setData(uint32_t node, std::string_view input,
                 std::vector<uint8_t> row) override;
  Status setOutput(uint32_t node, std::string_view input, uint32_t producer,
                   std::string_view output) override;
  Status ready(std::vector<uint32_t> chain) override;
  Status read(uint32_t node, std::string_view output,
              std::vector<uint8_t> &row) override;
  void finish() override { finished_ = true; }

  /// Rows held from their first use to the request's end
  /// (NodeSource::Kind::Held; the slot is the index): a seq2seq decoder's
  /// memories first (slot m: memory m, filled on the device by the encoder's
  /// steps, no host bytes), then its memory mask (request data).
  size_t heldRowCount() const { return heldRows_.size(); }
  /// True when `node` is a seq2seq encoder step whose outputs fill the
  /// decoder's memories (the engine places them there as it binds the
  /// step: EngineWorker::placeInMemories).
  bool fillsMemories(uint32_t node) const {
    return !structure_.memories.empty() && !chain_ &&
           structure_.kind == cellpack::Structure::Seq2Seq &&
           nodes_[node].part == 0;
  }

  /// The request's deadline in steady-clock microseconds, or UINT64_MAX.
  uint64_t deadline() const;

  /// Asks for the records of the result tensors made for it before it
  /// started (made on the submitting thread; its start reads them).
  void prefetchPreparedOutputs() const {
    prefetchLines(preparedOutputs_.data(),
                  preparedOutputs_.size() * sizeof(OutputTensor));
  }

  Clock::time_point arrival;
  Clock::time_point firstStart;
  bool started = false;

private:
  uint32_t addNode(uint32_t part);
  /// Chains: the result's tensors, created for every step at the start
  /// (taken from preparedOutputs_ when the graph was made with them).
  void createChainOutputs();
  /// Calls visit(output, name, perStep) for each tensor of a chain's
  /// result, in the order of result_.outputs: each emitted output asked
  /// for (per step), then each final state asked for (CellGraphOutputs.cpp).
  template <typename Visit> void forEachChainTensor(Visit visit) const;
  /// Those tensors, made.
  std::vector<OutputTensor> makeChainTensors() const;
  /// Whether the request asked for output `name` (all when it named none).
  bool wants(const std::string &name) const;
  /// Gives the prepared result's bytes back to its budget.
  void releasePreparedBytes();

  /// A chain's outputs the task copies straight into the result.
  bool direct(uint32_t output) const;
  Status chainDone(uint32_t node, const RowReader &read);
  void linkState(uint32_t node, uint32_t previous);
  /// Input `input` of `node` stops reading whatever it read before.
  void dropSource(uint32_t node, uint32_t input);
  void readFrom(uint32_t node, uint32_t input, uint32_t producer,
                uint32_t output);
  const uint8_t *tokenRow(int64_t token);
  /// Appends output `output` of `node` (of part `part`) to the result
  /// tensor `name` (created at its first row; `perStep`: one row a step).
  Status appendOutput(const std::string &name, uint32_t part, uint32_t output,
                      uint32_t node, const RowReader &read, bool perStep);
  /// Reads output `output` of `node` into existing tensor `tensor`.
  Status appendTo(OutputTensor &tensor, uint32_t part, uint32_t output,
                  uint32_t node, const RowReader &read, bool perStep);
  /// Starts a custom unfolder on the request: the chains it hands over go
  /// to `ready`.
  Status startCustom(std::vector<ReadySubgraph> &ready);
  /// A chain's one subgraph of every step, its generations of rows and its
  /// result tensors.
  ReadySubgraph startChain();
  /// A seq2seq encoder's nodes, one a step, all added at once, and the rows
  /// held for the decoder.
  ReadySubgraph startEncoder();
  /// A decoder's held rows (CellGraphDecoder.cpp): zeroed memories and the
  /// memory mask, 1 for each source step.
  void createHeldRows();
  ReadySubgraph startTree();
  ReadySubgraph internalSubgraph();
  ReadySubgraph startDecoder(uint32_t lastEncoder);
  uint32_t addDecoderStep(uint32_t previous);
  /// Points the decoder node's memory and memory_mask inputs at the held
  /// rows.
  void attachMemories(uint32_t node);
  Status decoderDone(uint32_t node, const RowReader &read,
                     std::vector<ReadySubgraph> &ready);
  /// Counts `subgraph`'s nodes as outstanding and appends it to `ready`.
  Status handOver(ReadySubgraph subgraph, std::vector<ReadySubgraph> &ready);

  /// Chains: per output, the result tensor it is emitted into and its
  /// final-state tensor (-1: none); with direct reads, where their rows go
  /// (null: not copied straight there).
  struct ChainOutput {
    int32_t emittedTensor = -1, finalTensor = -1;
    uint8_t *emittedRows = nullptr, *finalRow = nullptr;
    size_t rowBytes = 0;
  };
  // A chain step's hot fields first, in a few adjacent cache lines after
  // the entry's own (EngineWorker::Entry): counts and flags, where the
  // request's step rows are (uniform steps), the generations' rows and
  // where each output goes, inline for the usual few.
  static constexpr uint32_t kInlineRows = 16, kInlineOutputs = 4,
                            kInlineData = 4;
  int32_t *chainRows_;
  ChainOutput *chainOutputs_;
  uint32_t chainRowsPerGeneration_ = 0;
  uint32_t steps_ = 0;
  uint32_t outstanding_ = 0;
  bool chain_;
  bool directTargets_ = false; // some chainOutputs_ rows are set
  bool allDirect_ = false;     // and every output's
  bool uniformSteps_ = false;  // stepBytes_ and stepOffsets_ are set
  bool finalStatesFromPools_ = false;
  const uint8_t *stepBytes_ = nullptr;
  uint32_t stepStride_ = 0;
  uint32_t stepOffsets_[kInlineData] = {};
  int32_t inlineRows_[kInlineRows];
  ChainOutput inlineOutputs_[kInlineOutputs];
  std::vector<int32_t> moreRows_;                // more than kInlineRows
  std::vector<ChainOutput> moreOutputs_;         // more than kInlineOutputs
  std::vector<OutputTensor> preparedOutputs_;    // makeChainTensors, early
  std::shared_ptr<ResultBudget> preparedBudget_; // where their bytes count
  int64_t preparedBytes_ = 0;

  const ModelStructure &structure_;
  Request request_;
  uint32_t decodeWindow_;
  bool directReads_;

  std::vector<GraphNode> nodes_;
  std::vector<NodeSource> sources_; // every node's inputs, node after node
  std::vector<int32_t> outputRows_; // every node's output rows
  int32_t tokensTensor_ = -1;       // seq2seq: the decoded tokens' tensor
  RequestResult result_;
  bool finished_ = false;
  uint32_t lastEncoder_ = 0;
  uint32_t pendingLeaves_ = 0;
  int64_t decodeLimit_ = 0;
  int64_t decoderSteps_ = 0; // decoder nodes added
  int64_t decoded_ = 0;      // decoder tokens the host has read
  /// Rows of data the graph itself made: BOS and tokens fed back by the
  /// host, custom unfolders' data (stable addresses).
  std::forward_list<std::vector<uint8_t>> madeRows_; // no allocation empty
  /// seq2seq with memories: per memory its row (filled as encoder steps
  /// finish), then the memory mask's row when the decoder has one.
  std::vector<std::vector<uint8_t>> heldRows_;
  // custom
  std::unique_ptr<Unfolder> unfolder_;
  std::vector<ReadySubgraph> handedOver_;
  std::vector<uint8_t> inChain_; // per node: handed to the scheduler
  std::vector<std::pair<uint32_t, int32_t>> initialState_; // sessions
  const RowReader *reader_ = nullptr;
};

} // namespace cellrun

#endif // CELLRUN_SCHED_CELLGRAPH_H
