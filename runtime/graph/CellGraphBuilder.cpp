//===- CellGraphBuilder.cpp - The cell graph as custom unfolders see it ---===//
//
// GraphBuilder for custom unfolders: every call checks its arguments, so a
// faulty unfolder fails its own request with a message, nothing else.
//
//===----------------------------------------------------------------------===//
#include "graph/CellGraph.h"

using namespace cellrun;

static int32_t tensorIndex(
    const flatbuffers::Vector<flatbuffers::Offset<cellpack::TensorSpec>> *specs,
    std::string_view name) {
  if (specs)
    for (uint32_t i = 0; i < specs->size(); ++i)
      if (specs->Get(i)->name()->string_view() == name)
        return static_cast<int32_t>(i);
  return -1;
}

void CellGraph::dropSource(uint32_t node, uint32_t input) {
  NodeSource &source = inputs(node)[input];
  if (source.kind == NodeSource::Kind::Output) {
    --nodes_[source.node].consumers;
    --nodes_[source.node].unbound;
  }
  source = NodeSource();
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

/// A node whose inputs an unfolder may still set: one not yet handed over.
static Status checkUnsent(uint32_t node, size_t nodes,
                          const std::vector<uint8_t> &inChain) {
  if (node >= nodes)
    return Status(StatusCode::InvalidArgument,
                  "unfolder: no node " + std::to_string(node));
  if (inChain[node])
    return Status(StatusCode::InvalidArgument,
                  "unfolder: node " + std::to_string(node) +
                      " was handed over already; its inputs are fixed");
  return Status::ok();
}

Status CellGraph::setData(uint32_t node, std::string_view input,
                          std::vector<uint8_t> row) {
  if (Status status = checkUnsent(node, nodes_.size(), inChain_);
      !status.isOk())
    return status;
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
  madeRows_.push_front(std::move(row));
  dropSource(node, static_cast<uint32_t>(index));
  inputs(node)[index] = {NodeSource::Kind::Data, 0, 0,
                         madeRows_.front().data()};
  return Status::ok();
}

Status CellGraph::setOutput(uint32_t node, std::string_view input,
                            uint32_t producer, std::string_view output) {
  if (Status status = checkUnsent(node, nodes_.size(), inChain_);
      !status.isOk())
    return status;
  if (producer >= node)
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
      outputRows(producer)[out] < 0)
    return Status(StatusCode::InvalidArgument,
                  "unfolder: node " + std::to_string(producer) +
                      " has run and its rows are gone; read it from the "
                      "node added after it in the same call");
  dropSource(node, static_cast<uint32_t>(in));
  readFrom(node, static_cast<uint32_t>(in), producer,
           static_cast<uint32_t>(out));
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
    for (const NodeSource &source : inputs(node))
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
  outstanding_ += static_cast<uint32_t>(chain.size());
  ReadySubgraph &subgraph = handedOver_.emplace_back();
  subgraph.part = part;
  subgraph.nodes = std::move(chain);
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
  if (outputRows(node)[index] < 0)
    return Status(StatusCode::InvalidArgument,
                  "unfolder: the rows of node " + std::to_string(node) +
                      " are gone (read a node from its own nodeDone, or "
                      "while a node not yet run reads it)");
  row.resize(tensorRowBytes(*cell.outputs()->Get(index)));
  return (*reader_)(node, static_cast<uint32_t>(index), row.data());
}
