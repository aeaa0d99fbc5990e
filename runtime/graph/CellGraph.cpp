//===- CellGraph.cpp - A request unfolded into cell nodes -----------------===//
//
// Unfolding of the built-in structures (chain, seq2seq, tree), the outputs
// the host reads, and the rows a request may hold. The seq2seq decoder is in
// CellGraphDecoder.cpp, the GraphBuilder side used by custom unfolders in
// CellGraphBuilder.cpp, the result's outputs in CellGraphOutputs.cpp.
//
//===----------------------------------------------------------------------===//
#include "graph/CellGraph.h"
#include "request/UnfolderGuard.h"

#include <algorithm>

using namespace cellrun;

CellGraph::CellGraph(const ModelStructure &structure, Request request,
                     uint32_t decodeWindow, bool directReads)
    : structure_(structure), request_(std::move(request)),
      decodeWindow_(structure.tokenFeedbackOnDevice ? std::max(1u, decodeWindow)
                                                    : 1u),
      directReads_(directReads) {
  chain_ = structure.kind == cellpack::Structure::Chain;
  chainRows_ = inlineRows_;
  std::fill_n(inlineRows_, kInlineRows, -1); // none taken
  chainOutputs_ = inlineOutputs_;
  result_.id = request_.id;
}

CellGraph::~CellGraph() { releasePreparedBytes(); }

uint64_t CellGraph::deadline() const {
  if (request_.deadlineMicros <= 0)
    return UINT64_MAX;
  auto due = arrival + std::chrono::microseconds(
                           static_cast<int64_t>(request_.deadlineMicros));
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(
          due.time_since_epoch())
          .count());
}

uint32_t CellGraph::addNode(uint32_t part) {
  const CellRoles &roles = structure_.cells[part];
  GraphNode node;
  node.part = part;
  node.firstInput = static_cast<uint32_t>(sources_.size());
  node.firstOutput = static_cast<uint32_t>(outputRows_.size());
  sources_.resize(sources_.size() + roles.inputCount);
  outputRows_.resize(outputRows_.size() + roles.outputCount, -1);
  nodes_.push_back(node);
  return static_cast<uint32_t>(nodes_.size() - 1);
}

void CellGraph::readFrom(uint32_t node, uint32_t input, uint32_t producer,
                         uint32_t output) {
  inputs(node)[input] = {NodeSource::Kind::Output, producer, output, nullptr};
  ++nodes_[producer].consumers;
  ++nodes_[producer].unbound;
}

void CellGraph::linkState(uint32_t node, uint32_t previous) {
  const CellRoles &roles = structure_.cells[nodes_[node].part];
  for (size_t i = 0; i < roles.updatedBy.size(); ++i)
    if (roles.updatedBy[i] >= 0)
      readFrom(node, static_cast<uint32_t>(i), previous,
               static_cast<uint32_t>(roles.updatedBy[i]));
}

ReadySubgraph CellGraph::startTree() {
  const CellRoles &leaf = structure_.cells[0];
  const CellRoles &internal = structure_.cells[1];
  ReadySubgraph leaves;
  leaves.part = 0;
  for (const TreeNode &treeNode : request_.tree)
    addNode(treeNode.children.empty() ? 0 : 1);
  for (uint32_t n = 0; n < request_.tree.size(); ++n) {
    const TreeNode &treeNode = request_.tree[n];
    Span<NodeSource> in = inputs(n);
    if (treeNode.children.empty()) {
      for (size_t d = 0; d < leaf.dataInputs.size(); ++d) {
        in[leaf.dataInputs[d]].kind = NodeSource::Kind::Data;
        in[leaf.dataInputs[d]].bytes = treeNode.data[d].data();
      }
      leaves.nodes.push_back(n);
      leaves.successor.push_back(-1); // leaves do not read each other
      continue;
    }
    for (size_t d = 0; d < internal.dataInputs.size(); ++d) {
      in[internal.dataInputs[d]].kind = NodeSource::Kind::Data;
      in[internal.dataInputs[d]].bytes = treeNode.data[d].data();
    }
    for (size_t i = 0; i < internal.childIndex.size(); ++i) {
      if (internal.childIndex[i] < 0)
        continue;
      uint32_t child = treeNode.children[internal.childIndex[i]];
      readFrom(n, static_cast<uint32_t>(i), child,
               static_cast<uint32_t>(internal.childOutput[i]));
      nodes_[child].parent = static_cast<int32_t>(n);
    }
  }
  if (request_.root < 0)
    for (uint32_t n = 0; n < nodes_.size(); ++n)
      if (nodes_[n].parent < 0)
        request_.root = static_cast<int32_t>(n);
  pendingLeaves_ = static_cast<uint32_t>(leaves.nodes.size());
  return leaves;
}

ReadySubgraph CellGraph::internalSubgraph() {
  // Every internal node, lower levels first (a node's height is one more
  // than its highest child's), each read by its parent.
  std::vector<uint32_t> height(nodes_.size(), 0);
  std::vector<uint32_t> postOrder;
  std::vector<std::pair<uint32_t, size_t>> stack = {
      {static_cast<uint32_t>(request_.root), 0}};
  while (!stack.empty()) {
    auto &[node, next] = stack.back();
    const std::vector<int32_t> &children = request_.tree[node].children;
    if (next < children.size()) {
      uint32_t child = static_cast<uint32_t>(children[next++]);
      stack.push_back({child, 0});
      continue;
    }
    for (int32_t child : children)
      height[node] = std::max(height[node], height[child] + 1);
    postOrder.push_back(node);
    stack.pop_back();
  }
  ReadySubgraph internal;
  internal.part = 1;
  for (uint32_t node : postOrder)
    if (!request_.tree[node].children.empty())
      internal.nodes.push_back(node);
  std::stable_sort(
      internal.nodes.begin(), internal.nodes.end(),
      [&](uint32_t a, uint32_t b) { return height[a] < height[b]; });
  std::vector<int32_t> position(nodes_.size(), -1);
  for (uint32_t k = 0; k < internal.nodes.size(); ++k)
    position[internal.nodes[k]] = static_cast<int32_t>(k);
  for (uint32_t node : internal.nodes) {
    int32_t parent = nodes_[node].parent;
    internal.successor.push_back(parent < 0 ? -1 : position[parent]);
  }
  return internal;
}

Result<std::vector<ReadySubgraph>> CellGraph::start() {
  std::vector<ReadySubgraph> ready;
  if (Status status = start(ready); !status.isOk())
    return status;
  return ready;
}

Status CellGraph::handOver(ReadySubgraph subgraph,
                           std::vector<ReadySubgraph> &ready) {
  outstanding_ += static_cast<uint32_t>(subgraph.size());
  ready.push_back(std::move(subgraph));
  return Status::ok();
}

Status CellGraph::startCustom(std::vector<ReadySubgraph> &ready) {
  unfolder_ = structure_.makeUnfolder();
  if (Status status =
          callUnfolder([&] { return unfolder_->start(*request_.json, *this); });
      !status.isOk())
    return Status(status.code(),
                  "request " + request_.id + ": " + status.message());
  for (ReadySubgraph &subgraph : handedOver_)
    ready.push_back(std::move(subgraph));
  handedOver_.clear();
  return Status::ok();
}

ReadySubgraph CellGraph::startChain() {
  const CellRoles &roles = structure_.cells[0];
  ReadySubgraph chain;
  uint32_t steps = static_cast<uint32_t>(request_.steps.size());
  // Nothing per node (see isChain): two generations of rows, the result.
  steps_ = steps;
  chainRowsPerGeneration_ =
      roles.outputCount + static_cast<uint32_t>(roles.dataInputs.size());
  uint32_t rows = 2 * chainRowsPerGeneration_;
  if (rows > kInlineRows) {
    moreRows_.assign(rows, -1);
    chainRows_ = moreRows_.data();
  }
  std::fill_n(chainRows_, rows, -1);
  // Where each step's data rows are, when every step is alike.
  const StepRows &rowsOfSteps = request_.steps;
  uniformSteps_ = rowsOfSteps.uniform() && steps > 0 &&
                  roles.dataInputs.size() <= kInlineData &&
                  rowsOfSteps.rows(0) == roles.dataInputs.size();
  if (uniformSteps_) {
    stepBytes_ = rowsOfSteps.row(0, 0);
    stepStride_ = steps > 1 ? static_cast<uint32_t>(rowsOfSteps.row(1, 0) -
                                                    rowsOfSteps.row(0, 0))
                            : 0;
    for (uint32_t d = 0; d < roles.dataInputs.size(); ++d)
      stepOffsets_[d] =
          static_cast<uint32_t>(rowsOfSteps.row(0, d) - stepBytes_);
  }
  createChainOutputs();
  chain.first = 0;
  chain.count = steps;
  return chain;
}

ReadySubgraph CellGraph::startEncoder() {
  const CellRoles &roles = structure_.cells[0];
  ReadySubgraph chain;
  uint32_t steps = static_cast<uint32_t>(request_.steps.size());
  // Every node at once (the decoder's, added later, go one by one).
  uint32_t in = roles.inputCount, out = roles.outputCount;
  nodes_.resize(steps);
  sources_.resize(size_t(steps) * in);
  outputRows_.assign(size_t(steps) * out, -1);
  for (uint32_t s = 0; s < steps; ++s) {
    GraphNode &node = nodes_[s];
    node.firstInput = s * in;
    node.firstOutput = s * out;
    NodeSource *sources = sources_.data() + node.firstInput;
    for (size_t d = 0; d < roles.dataInputs.size(); ++d) {
      sources[roles.dataInputs[d]].kind = NodeSource::Kind::Data;
      sources[roles.dataInputs[d]].bytes = request_.steps.row(s, d);
    }
    if (s > 0)
      linkState(s, s - 1);
  }
  chain.first = 0;
  chain.count = steps;
  for (const auto &[input, row] : initialState_) {
    NodeSource &source = inputs(0)[input];
    source.kind = NodeSource::Kind::Pinned;
    source.row = row;
  }
  if (keepsFinalState()) { // released by the engine
    ++nodes_[steps - 1].consumers;
    ++nodes_[steps - 1].unbound;
  }
  createHeldRows();
  lastEncoder_ = steps - 1;
  return chain;
}

Status CellGraph::start(std::vector<ReadySubgraph> &ready) {
  if (structure_.kind == cellpack::Structure::Custom)
    return startCustom(ready);
  if (structure_.kind == cellpack::Structure::Tree)
    return handOver(startTree(), ready);
  // chain, seq2seq encoder: one node a step.
  if (chain_)
    return handOver(startChain(), ready);
  return handOver(startEncoder(), ready);
}

Span<const uint32_t> CellGraph::hostReads(uint32_t node) const {
  const CellRoles &roles = this->roles(node);
  switch (structure_.kind) {
  case cellpack::Structure::Chain:
    return node + 1 == steps_ ? roles.emittedAndStates : roles.emitted;
  case cellpack::Structure::Seq2Seq:
    // The decoder's token; an encoder step's outputs fill the memories on
    // the device (EngineWorker::placeInMemories).
    return nodes_[node].part == 1
               ? Span<const uint32_t>(structure_.tokenOutputs)
               : Span<const uint32_t>();
  case cellpack::Structure::Tree:
    if (static_cast<int32_t>(node) == request_.root)
      return roles.allOutputs;
    return {};
  case cellpack::Structure::Custom:
    return {};
  }
  return {};
}

Result<std::vector<ReadySubgraph>> CellGraph::nodeDone(uint32_t node,
                                                       const RowReader &read) {
  std::vector<ReadySubgraph> ready;
  if (Status status = nodeDone(node, read, ready); !status.isOk())
    return status;
  return ready;
}

Status CellGraph::nodeDone(uint32_t node, const RowReader &read,
                           std::vector<ReadySubgraph> &ready) {
  if (chain_) {
    --outstanding_;
    return chainDone(node, read);
  }
  GraphNode &graphNode = nodes_[node];
  graphNode.done = true;
  --outstanding_;
  uint32_t part = graphNode.part;
  const CellRoles &roles = structure_.cells[part];
  switch (structure_.kind) {
  case cellpack::Structure::Chain:
    return chainDone(node, read);
  case cellpack::Structure::Seq2Seq:
    if (part == 1)
      return decoderDone(node, read, ready);
    // Encoder nodes are the first nodes, one a source step; their outputs
    // went into the memories on the device.
    if (node != lastEncoder_)
      return Status::ok();
    return handOver(startDecoder(node), ready);
  case cellpack::Structure::Tree:
    if (static_cast<int32_t>(node) == request_.root) {
      for (uint32_t output = 0; output < roles.outputCount; ++output)
        if (Status status = appendOutput(roles.outputNames[output], part,
                                         output, node, read, false);
            !status.isOk())
          return status;
      finished_ = true;
      return Status::ok();
    }
    if (part == 0 && --pendingLeaves_ == 0)
      return handOver(internalSubgraph(), ready);
    return Status::ok();
  case cellpack::Structure::Custom: {
    handedOver_.clear();
    reader_ = &read;
    Status status =
        callUnfolder([&] { return unfolder_->nodeDone(node, *this); });
    reader_ = nullptr;
    if (!status.isOk())
      return Status(status.code(),
                    "request " + request_.id + ": " + status.message());
    for (ReadySubgraph &subgraph : handedOver_)
      ready.push_back(std::move(subgraph));
    handedOver_.clear();
    return Status::ok();
  }
  }
  return Status(StatusCode::Internal, "unknown structure");
}

Result<std::vector<CellGraph::RowNeed>>
CellGraph::peakRows(uint32_t nodesInFlight) const {
  // Seq2seq: a node's output rows go back once its last reader is
  // submitted (the engine binds a round's tasks one by one, and a later
  // writer of a row runs after that reader on the same worker), so a chain
  // whose step reads the step before it holds two generations of outputs
  // however many of its nodes are in flight: the producer's and those of
  // the node being bound. A step that reads no state has no reader: its
  // rows go back when it completes, as do data rows (one per node in
  // flight). A custom unfolder's rows go back when their readers complete:
  // the outputs of the node before those in flight and of every node in
  // flight.
  uint32_t generations = nodesInFlight + 1;
  auto chainGenerations = [&](uint32_t part) {
    const std::vector<int32_t> &updatedBy = structure_.cells[part].updatedBy;
    bool readsItsPredecessor =
        std::any_of(updatedBy.begin(), updatedBy.end(),
                    [](int32_t output) { return output >= 0; });
    return readsItsPredecessor ? 2u : generations;
  };
  std::vector<RowNeed> needs;
  auto addPart = [&](uint32_t part, uint32_t outputCopies,
                     uint32_t dataCopies) {
    const CellRoles &roles = structure_.cells[part];
    for (uint32_t o = 0; o < roles.cell->outputs()->size(); ++o)
      needs.push_back({part, o, true, outputCopies});
    for (uint32_t input : roles.dataInputs)
      needs.push_back({part, input, false, dataCopies});
  };
  switch (structure_.kind) {
  case cellpack::Structure::Chain:
    // Two generations of every row (isChain), and a session's state from
    // its last chunk, held until step 0 has run.
    addPart(0, 3, 2);
    break;
  case cellpack::Structure::Seq2Seq: {
    // The encoder's last states live on into the first decoder step (the
    // two parts' rows add up where they share a pool); the decoder needs
    // one token row (BOS, or the token the host feeds back).
    addPart(0, chainGenerations(0), nodesInFlight);
    addPart(1, chainGenerations(1), 1);
    for (const ModelStructure::Memory &memory : structure_.memories)
      needs.push_back({1, memory.input, false, 1});
    if (structure_.memoryMaskInput >= 0)
      needs.push_back(
          {1, static_cast<uint32_t>(structure_.memoryMaskInput), false, 1});
    break;
  }
  case cellpack::Structure::Tree: {
    uint32_t leaves = 0;
    for (const TreeNode &node : request_.tree)
      leaves += node.children.empty();
    addPart(0, leaves, leaves); // all leaves may run in one task
    addPart(1, static_cast<uint32_t>(request_.tree.size()) - leaves, 0);
    break;
  }
  case cellpack::Structure::Custom: {
    // The unfolder bounds the nodes whose outputs are alive at once; each
    // of them may head a chain with nodesInFlight nodes bound ahead.
    uint32_t declared = 0;
    if (Status status = callUnfolder([&] {
          declared = structure_.makeUnfolder()->peakNodes(*request_.json);
          return Status::ok();
        });
        !status.isOk())
      return Status(status.code(),
                    "request " + request_.id + ": " + status.message());
    uint32_t peak = std::max<uint32_t>(1, declared);
    for (uint32_t part = 0; part < structure_.cells.size(); ++part)
      addPart(part, peak * generations, peak * nodesInFlight);
    break;
  }
  }
  return needs;
}
