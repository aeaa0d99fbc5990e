//===- CellGraph.cpp - A request unfolded into cell nodes -----------------===//
#include "CellGraph.h"

#include "../backend/cpu/ElementIO.h"

using namespace cellrun;

CellGraph::CellGraph(const ModelStructure &structure, Request request)
    : structure_(structure), request_(std::move(request)) {
  result_.id = request_.id;
}

uint32_t CellGraph::addNode(uint32_t part) {
  const cellpack::CellType &cell = *structure_.cells[part].cell;
  GraphNode node;
  node.part = part;
  node.inputs.resize(cell.inputs() ? cell.inputs()->size() : 0);
  node.outputRows.assign(cell.outputs() ? cell.outputs()->size() : 0, -1);
  nodes_.push_back(std::move(node));
  return static_cast<uint32_t>(nodes_.size() - 1);
}

void CellGraph::linkState(uint32_t node, uint32_t previous) {
  const CellRoles &roles = structure_.cells[nodes_[node].part];
  for (size_t i = 0; i < roles.updatedBy.size(); ++i)
    if (roles.updatedBy[i] >= 0) {
      NodeSource &source = nodes_[node].inputs[i];
      source.kind = NodeSource::Kind::Output;
      source.node = previous;
      source.output = static_cast<uint32_t>(roles.updatedBy[i]);
      ++nodes_[previous].consumers;
    }
}

Result<std::vector<ReadyChain>> CellGraph::start() {
  std::vector<ReadyChain> ready;
  if (structure_.kind == cellpack::Structure::Custom) {
    unfolder_ = structure_.makeUnfolder();
    if (Status status = unfolder_->start(*request_.json, *this); !status.isOk())
      return Status(status.code(),
                    "request " + request_.id + ": " + status.message());
    return std::move(handedOver_);
  }
  if (structure_.kind == cellpack::Structure::Tree) {
    const CellRoles &leaf = structure_.cells[0];
    const CellRoles &internal = structure_.cells[1];
    for (const TreeNode &treeNode : request_.tree)
      addNode(treeNode.children.empty() ? 0 : 1);
    for (uint32_t n = 0; n < request_.tree.size(); ++n) {
      const TreeNode &treeNode = request_.tree[n];
      GraphNode &node = nodes_[n];
      if (treeNode.children.empty()) {
        for (size_t d = 0; d < leaf.dataInputs.size(); ++d) {
          node.inputs[leaf.dataInputs[d]].kind = NodeSource::Kind::Data;
          node.inputs[leaf.dataInputs[d]].data = &treeNode.data[d];
        }
        ready.push_back({0, {n}});
        continue;
      }
      node.pendingChildren = static_cast<uint32_t>(treeNode.children.size());
      for (size_t i = 0; i < internal.childIndex.size(); ++i) {
        if (internal.childIndex[i] < 0)
          continue;
        uint32_t child = treeNode.children[internal.childIndex[i]];
        node.inputs[i] = {NodeSource::Kind::Output, child,
                          static_cast<uint32_t>(internal.childOutput[i]),
                          nullptr};
        ++nodes_[child].consumers;
        nodes_[child].parent = static_cast<int32_t>(n);
      }
    }
    if (request_.root < 0)
      for (uint32_t n = 0; n < nodes_.size(); ++n)
        if (nodes_[n].parent < 0)
          request_.root = static_cast<int32_t>(n);
    return ready;
  }
  // chain, seq2seq encoder: one node a step.
  const CellRoles &roles = structure_.cells[0];
  ReadyChain chain;
  for (uint32_t s = 0; s < request_.steps.size(); ++s) {
    uint32_t node = addNode(0);
    for (size_t d = 0; d < roles.dataInputs.size(); ++d) {
      nodes_[node].inputs[roles.dataInputs[d]].kind = NodeSource::Kind::Data;
      nodes_[node].inputs[roles.dataInputs[d]].data = &request_.steps[s][d];
    }
    if (s > 0)
      linkState(node, node - 1);
    chain.nodes.push_back(node);
  }
  lastEncoder_ = chain.nodes.back();
  ready.push_back(std::move(chain));
  return ready;
}

Status CellGraph::appendOutput(const std::string &name, uint32_t part,
                               uint32_t output, uint32_t node,
                               const RowReader &read, bool perStep) {
  const cellpack::TensorSpec &spec =
      *structure_.cells[part].cell->outputs()->Get(output);
  std::vector<uint8_t> row(tensorRowBytes(spec));
  if (Status status = read(node, output, row.data()); !status.isOk())
    return status;
  OutputTensor *tensor = nullptr;
  for (OutputTensor &existing : result_.outputs)
    if (existing.name == name)
      tensor = &existing;
  if (!tensor) {
    result_.outputs.push_back({name, {}, {}, {}});
    tensor = &result_.outputs.back();
    if (perStep)
      tensor->shape.push_back(0);
    if (spec.row_shape())
      tensor->shape.insert(tensor->shape.end(), spec.row_shape()->begin(),
                           spec.row_shape()->end());
  }
  if (perStep)
    ++tensor->shape[0];
  size_t elements = row.size() / cpu::elementSize(spec.dtype());
  for (size_t e = 0; e < elements; ++e) {
    if (cpu::isFloatType(spec.dtype()))
      tensor->floats.push_back(cpu::loadFloat(row.data(), spec.dtype(), e));
    else
      tensor->integers.push_back(cpu::loadInt(row.data(), spec.dtype(), e));
  }
  return Status::ok();
}

Result<std::vector<ReadyChain>> CellGraph::decoderDone(uint32_t node,
                                                       const RowReader &read) {
  const CellRoles &decoder = structure_.cells[1];
  uint32_t tokenOutput = structure_.decoderTokenOutput;
  if (Status status = appendOutput("tokens", 1, tokenOutput, node, read, true);
      !status.isOk())
    return status;
  OutputTensor *tokens = nullptr;
  for (OutputTensor &tensor : result_.outputs)
    if (tensor.name == "tokens")
      tokens = &tensor;
  if (!tokens || tokens->integers.empty())
    return Status(StatusCode::Internal, "the decoder's token output is not "
                                        "an integer");
  int64_t token = tokens->integers.back();
  ++decoded_;
  int64_t limit = request_.maxDecodeLength > 0 ? request_.maxDecodeLength
                                               : structure_.maxDecodeLength;
  if (token == structure_.eosToken || decoded_ >= limit) {
    result_.stopReason = token == structure_.eosToken ? "eos" : "limit";
    finished_ = true;
    return std::vector<ReadyChain>();
  }
  // The next step reads the token the host has just seen.
  uint32_t next = addNode(1);
  const cellpack::TensorSpec &tokenSpec =
      *decoder.cell->inputs()->Get(structure_.decoderTokenInput);
  fedTokens_.emplace_back(tensorRowBytes(tokenSpec));
  cpu::storeInt(fedTokens_.back().data(), tokenSpec.dtype(), 0, token);
  NodeSource &source = nodes_[next].inputs[structure_.decoderTokenInput];
  source.kind = NodeSource::Kind::Data;
  source.data = &fedTokens_.back();
  linkState(next, node);
  return std::vector<ReadyChain>{{1, {next}}};
}

Result<std::vector<ReadyChain>> CellGraph::nodeDone(uint32_t node,
                                                    const RowReader &read) {
  GraphNode &graphNode = nodes_[node];
  graphNode.done = true;
  uint32_t part = graphNode.part;
  const CellRoles &roles = structure_.cells[part];
  auto outputName = [&](uint32_t output) {
    return roles.cell->outputs()->Get(output)->name()->str();
  };
  switch (structure_.kind) {
  case cellpack::Structure::Chain:
    for (uint32_t output : roles.emitted)
      if (Status status =
              appendOutput(outputName(output), 0, output, node, read, true);
          !status.isOk())
        return status;
    if (node + 1 == nodes_.size()) {
      for (uint32_t output : roles.stateOutputs)
        if (Status status = appendOutput("final_" + outputName(output), 0,
                                         output, node, read, false);
            !status.isOk())
          return status;
      finished_ = true;
    }
    return std::vector<ReadyChain>();
  case cellpack::Structure::Seq2Seq: {
    if (part == 1)
      return decoderDone(node, read);
    if (node != lastEncoder_)
      return std::vector<ReadyChain>();
    const CellRoles &decoder = structure_.cells[1];
    uint32_t first = addNode(1);
    const cellpack::TensorSpec &tokenSpec =
        *decoder.cell->inputs()->Get(structure_.decoderTokenInput);
    fedTokens_.emplace_back(tensorRowBytes(tokenSpec));
    cpu::storeInt(fedTokens_.back().data(), tokenSpec.dtype(), 0,
                  structure_.bosToken);
    NodeSource &token = nodes_[first].inputs[structure_.decoderTokenInput];
    token.kind = NodeSource::Kind::Data;
    token.data = &fedTokens_.back();
    for (size_t i = 0; i < structure_.initialFromEncoder.size(); ++i)
      if (structure_.initialFromEncoder[i] >= 0) {
        nodes_[first].inputs[i] = {
            NodeSource::Kind::Output, node,
            static_cast<uint32_t>(structure_.initialFromEncoder[i]), nullptr};
        ++nodes_[node].consumers;
      }
    return std::vector<ReadyChain>{{1, {first}}};
  }
  case cellpack::Structure::Tree: {
    if (static_cast<int32_t>(node) == request_.root) {
      for (uint32_t output = 0; output < roles.cell->outputs()->size();
           ++output)
        if (Status status = appendOutput(outputName(output), part, output, node,
                                         read, false);
            !status.isOk())
          return status;
      finished_ = true;
      return std::vector<ReadyChain>();
    }
    GraphNode &parent = nodes_[graphNode.parent];
    if (--parent.pendingChildren == 0)
      return std::vector<ReadyChain>{
          {1, {static_cast<uint32_t>(graphNode.parent)}}};
    return std::vector<ReadyChain>();
  }
  case cellpack::Structure::Custom: {
    handedOver_.clear();
    reader_ = &read;
    Status status = unfolder_->nodeDone(node, *this);
    reader_ = nullptr;
    if (!status.isOk())
      return Status(status.code(),
                    "request " + request_.id + ": " + status.message());
    return std::move(handedOver_);
  }
  }
  return Status(StatusCode::Internal, "unknown structure");
}

std::vector<CellGraph::RowNeed>
CellGraph::peakRows(uint32_t nodesInFlight) const {
  // A chain holds the outputs of the node before the round and of every
  // node bound in it, and one data row per bound node.
  uint32_t generations = nodesInFlight + 1;
  std::vector<RowNeed> needs;
  auto addPart = [&](uint32_t part, uint32_t outputCopies,
                     uint32_t dataCopies = 1) {
    const CellRoles &roles = structure_.cells[part];
    for (uint32_t o = 0; o < roles.cell->outputs()->size(); ++o)
      needs.push_back({part, o, true, outputCopies});
    for (uint32_t input : roles.dataInputs)
      needs.push_back({part, input, false, dataCopies});
  };
  switch (structure_.kind) {
  case cellpack::Structure::Chain:
    addPart(0, generations, nodesInFlight);
    break;
  case cellpack::Structure::Seq2Seq:
    // The encoder's last states live on into the first decoder step; the
    // decoder grows one node a round.
    addPart(0, generations, nodesInFlight);
    addPart(1, 2, 1);
    break;
  case cellpack::Structure::Tree: {
    uint32_t leaves = 0;
    for (const TreeNode &node : request_.tree)
      leaves += node.children.empty();
    addPart(0, leaves, leaves); // all leaves may run in one task
    addPart(1, static_cast<uint32_t>(request_.tree.size()) - leaves, 0);
    break;
  }
  case cellpack::Structure::Custom: {
    uint32_t peak = std::max<uint32_t>(1, structure_.makeUnfolder()->peakNodes(
                                              *request_.json)) +
                    nodesInFlight;
    for (uint32_t part = 0; part < structure_.cells.size(); ++part)
      addPart(part, peak, peak);
    break;
  }
  }
  return needs;
}

// GraphBuilder for custom unfolders: every call checks its arguments, so a
// faulty unfolder fails its own request with a message, nothing else.

static int32_t tensorIndex(
    const flatbuffers::Vector<flatbuffers::Offset<cellpack::TensorSpec>> *specs,
    std::string_view name) {
  if (specs)
    for (uint32_t i = 0; i < specs->size(); ++i)
      if (specs->Get(i)->name()->string_view() == name)
        return static_cast<int32_t>(i);
  return -1;
}

Result<uint32_t> CellGraph::addNode(std::string_view cell) {
  for (uint32_t part = 0; part < structure_.cells.size(); ++part)
    if (structure_.cells[part].cell->name()->string_view() == cell) {
      inChain_.push_back(0);
      return addNode(part);
    }
  return Status(StatusCode::InvalidArgument,
                "unfolder: the model has no cell '" + std::string(cell) + "'");
}

Status CellGraph::setData(uint32_t node, std::string_view input,
                          std::vector<uint8_t> row) {
  if (node >= nodes_.size())
    return Status(StatusCode::InvalidArgument,
                  "unfolder: no node " + std::to_string(node));
  const cellpack::CellType &cell = *structure_.cells[nodes_[node].part].cell;
  int32_t index = tensorIndex(cell.inputs(), input);
  if (index < 0)
    return Status(StatusCode::InvalidArgument,
                  "unfolder: cell '" + cell.name()->str() + "' has no input '" +
                      std::string(input) + "'");
  size_t bytes = tensorRowBytes(*cell.inputs()->Get(index));
  if (row.size() != bytes)
    return Status(StatusCode::InvalidArgument,
                  "unfolder: input '" + std::string(input) + "' takes " +
                      std::to_string(bytes) + " bytes, given " +
                      std::to_string(row.size()));
  fedTokens_.push_back(std::move(row));
  nodes_[node].inputs[index] = {NodeSource::Kind::Data, 0, 0,
                                &fedTokens_.back()};
  return Status::ok();
}

Status CellGraph::setOutput(uint32_t node, std::string_view input,
                            uint32_t producer, std::string_view output) {
  if (node >= nodes_.size() || producer >= node)
    return Status(StatusCode::InvalidArgument,
                  "unfolder: node " + std::to_string(node) +
                      " may read only nodes added before it");
  const cellpack::CellType &cell = *structure_.cells[nodes_[node].part].cell;
  const cellpack::CellType &from =
      *structure_.cells[nodes_[producer].part].cell;
  int32_t in = tensorIndex(cell.inputs(), input);
  int32_t out = tensorIndex(from.outputs(), output);
  if (in < 0 || out < 0)
    return Status(StatusCode::InvalidArgument,
                  "unfolder: no input '" + std::string(input) + "' of '" +
                      cell.name()->str() + "' or no output '" +
                      std::string(output) + "' of '" + from.name()->str() +
                      "'");
  const cellpack::TensorSpec &inSpec = *cell.inputs()->Get(in);
  const cellpack::TensorSpec &outSpec = *from.outputs()->Get(out);
  if (inSpec.dtype() != outSpec.dtype() ||
      tensorRowBytes(inSpec) != tensorRowBytes(outSpec))
    return Status(StatusCode::InvalidArgument,
                  "unfolder: output '" + std::string(output) + "' and input '" +
                      std::string(input) + "' have different row types");
  if (nodes_[producer].done && nodes_[producer].consumers == 0 &&
      nodes_[producer].outputRows[out] < 0)
    return Status(StatusCode::InvalidArgument,
                  "unfolder: node " + std::to_string(producer) +
                      " has run and its rows are gone; read it from the "
                      "node added after it in the same call");
  nodes_[node].inputs[in] = {NodeSource::Kind::Output, producer,
                             static_cast<uint32_t>(out), nullptr};
  ++nodes_[producer].consumers;
  return Status::ok();
}

Status CellGraph::ready(std::vector<uint32_t> chain) {
  if (chain.empty())
    return Status(StatusCode::InvalidArgument, "unfolder: an empty chain");
  uint32_t part = 0;
  for (size_t k = 0; k < chain.size(); ++k) {
    uint32_t node = chain[k];
    if (node >= nodes_.size() || inChain_[node])
      return Status(StatusCode::InvalidArgument, "unfolder: node " +
                                                     std::to_string(node) +
                                                     " is not a new node");
    if (k == 0)
      part = nodes_[node].part;
    if (nodes_[node].part != part)
      return Status(StatusCode::InvalidArgument,
                    "unfolder: a chain mixes cells");
    for (const NodeSource &source : nodes_[node].inputs)
      if (source.kind == NodeSource::Kind::Output &&
          !nodes_[source.node].done && !(k > 0 && source.node == chain[k - 1]))
        return Status(StatusCode::InvalidArgument,
                      "unfolder: node " + std::to_string(node) +
                          " reads node " + std::to_string(source.node) +
                          ", which has not run and is not the node before it "
                          "in the chain");
  }
  for (uint32_t node : chain)
    inChain_[node] = 1;
  handedOver_.push_back({part, std::move(chain)});
  return Status::ok();
}

Status CellGraph::read(uint32_t node, std::string_view output,
                       std::vector<uint8_t> &row) {
  if (!reader_ || node >= nodes_.size() || !nodes_[node].done)
    return Status(StatusCode::InvalidArgument,
                  "unfolder: node " + std::to_string(node) +
                      " can be read only after it has run, from nodeDone");
  const cellpack::CellType &cell = *structure_.cells[nodes_[node].part].cell;
  int32_t index = tensorIndex(cell.outputs(), output);
  if (index < 0)
    return Status(StatusCode::InvalidArgument,
                  "unfolder: cell '" + cell.name()->str() +
                      "' has no output '" + std::string(output) + "'");
  if (nodes_[node].outputRows[index] < 0)
    return Status(StatusCode::InvalidArgument,
                  "unfolder: the rows of node " + std::to_string(node) +
                      " are gone (read a node from its own nodeDone, or "
                      "while a node not yet run reads it)");
  row.resize(tensorRowBytes(*cell.outputs()->Get(index)));
  return (*reader_)(node, static_cast<uint32_t>(index), row.data());
}
