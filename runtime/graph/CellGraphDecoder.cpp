//===- CellGraphDecoder.cpp - The seq2seq decoder's steps -----------------===//
//
// A seq2seq request's decoder: the memories it attends over (pool rows the
// engine has the encoder's steps fill on the device) and its mask, held to
// the request's end, and its chain of steps, a window ahead of the host,
// grown one step per token read until EOS or the limit.
//
//===----------------------------------------------------------------------===//
#include "graph/CellGraph.h"

#include "artifact/ElementIO.h"

#include <algorithm>
#include <cstring>

using namespace cellrun;

void CellGraph::createHeldRows() {
  // The memories live in pool rows the encoder's steps fill on the device
  // (no host bytes); the mask is 1 for each source step.
  heldRows_.resize(structure_.memories.size());
  if (structure_.memoryMaskInput >= 0) {
    std::vector<float> mask(structure_.memoryPositions, 0.0f);
    std::fill_n(mask.begin(),
                std::min<size_t>(mask.size(), request_.steps.size()), 1.0f);
    heldRows_.emplace_back(mask.size() * sizeof(float));
    std::memcpy(heldRows_.back().data(), mask.data(), heldRows_.back().size());
  }
}

const uint8_t *CellGraph::tokenRow(int64_t token) {
  const cellpack::TensorSpec &spec =
      *structure_.cells[1].cell->inputs()->Get(structure_.decoderTokenInput);
  madeRows_.emplace_front(tensorRowBytes(spec));
  cpu::storeInt(madeRows_.front().data(), spec.dtype(), 0, token);
  return madeRows_.front().data();
}

void CellGraph::attachMemories(uint32_t node) {
  Span<NodeSource> in = inputs(node);
  for (size_t m = 0; m < structure_.memories.size(); ++m)
    in[structure_.memories[m].input] = {NodeSource::Kind::Held, 0,
                                        static_cast<uint32_t>(m), nullptr};
  if (structure_.memoryMaskInput >= 0)
    in[structure_.memoryMaskInput] = {
        NodeSource::Kind::Held, 0,
        static_cast<uint32_t>(structure_.memories.size()),
        heldRows_.back().data()};
}

uint32_t CellGraph::addDecoderStep(uint32_t previous) {
  uint32_t node = addNode(1);
  attachMemories(node);
  ++decoderSteps_;
  readFrom(node, structure_.decoderTokenInput, previous,
           structure_.decoderTokenOutput);
  linkState(node, previous);
  return node;
}

ReadySubgraph CellGraph::startDecoder(uint32_t lastEncoder) {
  decodeLimit_ = request_.maxDecodeLength > 0 ? request_.maxDecodeLength
                                              : structure_.decodeLimit;
  ReadySubgraph decoder;
  decoder.part = 1;
  uint32_t first = addNode(1);
  attachMemories(first);
  ++decoderSteps_;
  NodeSource &token = inputs(first)[structure_.decoderTokenInput];
  token.kind = NodeSource::Kind::Data;
  token.bytes = tokenRow(structure_.bosToken);
  for (size_t i = 0; i < structure_.initialFromEncoder.size(); ++i)
    if (structure_.initialFromEncoder[i] >= 0)
      readFrom(first, static_cast<uint32_t>(i), lastEncoder,
               static_cast<uint32_t>(structure_.initialFromEncoder[i]));
  // A window of steps, consecutive nodes.
  decoder.first = first;
  decoder.count = 1;
  while (decoderSteps_ < std::min<int64_t>(decodeWindow_, decodeLimit_)) {
    addDecoderStep(first + decoder.count - 1);
    ++decoder.count;
  }
  return decoder;
}

Status CellGraph::decoderDone(uint32_t node, const RowReader &read,
                              std::vector<ReadySubgraph> &ready) {
  uint32_t tokenOutput = structure_.decoderTokenOutput;
  if (tokensTensor_ < 0) {
    tokensTensor_ = static_cast<int32_t>(result_.outputs.size());
    result_.outputs.push_back(
        newOutputTensor(structure_.cells[1], tokenOutput, "tokens", true, 0));
  }
  const OutputTensor *tokens = &result_.outputs[tokensTensor_];
  if (Status status = appendTo(result_.outputs[tokensTensor_], 1, tokenOutput,
                               node, read, true);
      !status.isOk())
    return status;
  if (tokens->integers.empty())
    return Status(StatusCode::Internal, "the decoder's token output is not "
                                        "an integer");
  int64_t token = tokens->integers.back();
  ++decoded_;
  if (token == structure_.eosToken || decoded_ >= decodeLimit_) {
    // Steps issued past this one are dropped with the request's chain.
    result_.stopReason = token == structure_.eosToken ? "eos" : "limit";
    finished_ = true;
    return Status::ok();
  }
  if (decoderSteps_ >= decodeLimit_)
    return Status::ok(); // the window reaches the limit
  ReadySubgraph more;
  more.part = 1;
  more.continuesChain = true;
  if (structure_.tokenFeedbackOnDevice) {
    more.first = addDecoderStep(static_cast<uint32_t>(nodes_.size() - 1));
  } else {
    // The host feeds the token it has just read to the next step.
    uint32_t next = addNode(1);
    attachMemories(next);
    ++decoderSteps_;
    NodeSource &source = inputs(next)[structure_.decoderTokenInput];
    source.kind = NodeSource::Kind::Data;
    source.bytes = tokenRow(token);
    linkState(next, node);
    more.first = next;
  }
  more.count = 1;
  return handOver(std::move(more), ready);
}
