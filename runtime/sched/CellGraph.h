//===- CellGraph.h - A request unfolded into cell nodes --------*- C++ -*-===//
//
// The request processor's view of one request: its cell-graph nodes (one
// cell invocation each), where every node input comes from (zeros, the
// request's data, or an output of an earlier node), and how the graph
// grows: a chain is known at once; a seq2seq decoder gets its next node only
// after the host has read the previous node's token (dynamic unfolding,
// stopping at EOS or the decode limit); a tree's internal node becomes
// ready when its last child finishes. Nodes are handed out as "ready
// chains" (runs of nodes of one cell where each depends on the previous
// one), the unit the scheduler batches.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_SCHED_CELLGRAPH_H
#define CELLRUN_SCHED_CELLGRAPH_H

#include "ModelStructure.h"

#include "cellrun/Request.h"

#include <chrono>
#include <deque>
#include <functional>

namespace cellrun {

struct NodeSource {
  enum class Kind : uint8_t { Zero, Data, Output };
  Kind kind = Kind::Zero;
  uint32_t node = 0;                          // Output: the producing node
  uint32_t output = 0;                        // Output: its output index
  const std::vector<uint8_t> *data = nullptr; // Data: the row
};

struct GraphNode {
  uint32_t part = 0; // index into ModelStructure::cells
  std::vector<NodeSource> inputs;
  std::vector<int32_t> outputRows; // pool rows, -1 until the node runs
  uint32_t consumers = 0;          // nodes not yet run that read its outputs
  bool done = false;
  int32_t parent = -1;          // tree
  uint32_t pendingChildren = 0; // tree
};

/// A run of nodes of one part, each depending on the one before.
struct ReadyChain {
  uint32_t part = 0;
  std::vector<uint32_t> nodes;
};

using Clock = std::chrono::steady_clock;

class CellGraph final : public GraphBuilder {
public:
  CellGraph(const ModelStructure &structure, Request request);

  const Request &request() const { return request_; }
  std::vector<GraphNode> &nodes() { return nodes_; }
  RequestResult &result() override { return result_; }
  bool finished() const { return finished_; }

  /// The ready chains at the start (a custom unfolder may refuse).
  Result<std::vector<ReadyChain>> start();

  /// Reads the outputs of `node` the result needs (`read(pool output o of
  /// node, bytes)`), then grows the graph: returns the chains that became
  /// ready. Sets finished() when the request is complete.
  using RowReader =
      std::function<Status(uint32_t node, uint32_t output, void *bytes)>;
  Result<std::vector<ReadyChain>> nodeDone(uint32_t node,
                                           const RowReader &read);

  /// Pool rows of each row type the request may hold at once, as
  /// (part, output or input index, isOutput) tallies: an upper bound the
  /// engine reserves before admitting the request. `nodesInFlight` is how
  /// many consecutive nodes of one chain may be bound to rows before the
  /// first of them completes (the tasks of one round of the loop).
  struct RowNeed {
    uint32_t part;
    uint32_t index;
    bool isOutput;
    uint32_t rows;
  };
  std::vector<RowNeed> peakRows(uint32_t nodesInFlight) const;

  // GraphBuilder, for custom unfolders.
  Result<uint32_t> addNode(std::string_view cell) override;
  Status setData(uint32_t node, std::string_view input,
                 std::vector<uint8_t> row) override;
  Status setOutput(uint32_t node, std::string_view input, uint32_t producer,
                   std::string_view output) override;
  Status ready(std::vector<uint32_t> chain) override;
  Status read(uint32_t node, std::string_view output,
              std::vector<uint8_t> &row) override;
  void finish() override { finished_ = true; }

  Clock::time_point arrival;
  Clock::time_point firstStart;
  bool started = false;
  bool failed = false;

private:
  uint32_t addNode(uint32_t part);
  void linkState(uint32_t node, uint32_t previous);
  Status appendOutput(const std::string &name, uint32_t part, uint32_t output,
                      uint32_t node, const RowReader &read, bool perStep);
  Result<std::vector<ReadyChain>> decoderDone(uint32_t node,
                                              const RowReader &read);

  const ModelStructure &structure_;
  Request request_;
  std::vector<GraphNode> nodes_;
  RequestResult result_;
  bool finished_ = false;
  uint32_t lastEncoder_ = 0;
  int64_t decoded_ = 0;
  /// Rows of data the graph itself made: decoder tokens fed back by the
  /// host, custom unfolders' data (stable addresses).
  std::deque<std::vector<uint8_t>> fedTokens_;
  // custom
  std::unique_ptr<Unfolder> unfolder_;
  std::vector<ReadyChain> handedOver_;
  std::vector<uint8_t> inChain_; // per node: handed to the scheduler
  const RowReader *reader_ = nullptr;
};

} // namespace cellrun

#endif // CELLRUN_SCHED_CELLGRAPH_H
