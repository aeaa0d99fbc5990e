//===- Request.h - Requests and their results ------------------*- C++ -*-===//
//
// What a client asks for and gets back, independent of the wire format.
// A request is the data of one cell graph as the artifact's unfolding spec
// describes it:
//  - chain: one step per element of `steps` (each step: the rows of the
//    cell's `input`-role tensors);
//  - seq2seq: `steps` are the encoder's steps; the decoder runs from the
//    BOS token until it returns EOS or `maxDecodeLength` tokens;
//  - tree: `tree` nodes, leaves with the leaf cell's input rows, internal
//    nodes with exactly `arity` children (indices into `tree`) and the
//    internal cell's input rows (if it takes any), one root;
//  - custom: the request's JSON, for the registered unfolder (Unfolder.h).
// Parsing (RequestParser.h) checks a request against the artifact, so the
// engine only ever sees well-formed requests.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_REQUEST_H
#define CELLRUN_REQUEST_H

#include "cellrun/Status.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cellrun {

/// The rows of a cell's input-role tensors for one node, in the order of the
/// cell's inputs (one entry per input-role tensor).
using NodeData = std::vector<std::vector<uint8_t>>;

struct TreeNode {
  NodeData data;                 // the inputs of the node's cell
  std::vector<int32_t> children; // internal nodes
};

/// A chunk of a streaming session (chain models): the state the chunk ends
/// with stays in the engine's pools and is where the next chunk of the same
/// session starts. Chunks of one session run in the order submitted.
struct SessionChunk {
  uint64_t id = 0;    // 0: not part of a session
  bool start = false; // opens the session (from zero state)
  bool end = false;   // closes it when this chunk is done
};

struct Request {
  std::string id;
  std::vector<NodeData> steps; // chain, seq2seq encoder
  std::vector<TreeNode> tree;  // tree
  int32_t root = -1;
  int64_t maxDecodeLength = 0; // seq2seq; 0: the artifact's limit
  std::shared_ptr<const nlohmann::json> json; // custom: the whole request
  double deadlineMicros = 0;                  // latency goal; 0: none
  SessionChunk session;
};

/// One named output: float values or integer values, with its shape.
struct OutputTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> floats;
  std::vector<int64_t> integers;
};

struct RequestResult {
  std::string id;
  Status status;
  std::vector<OutputTensor> outputs;
  /// seq2seq: "eos" or "limit".
  std::string stopReason;
  /// Arrival to the start of its first cell, and from then to completion.
  double queueMicros = 0;
  double computeMicros = 0;
  bool missedDeadline = false;

  const OutputTensor *find(const std::string &name) const {
    for (const OutputTensor &tensor : outputs)
      if (tensor.name == name)
        return &tensor;
    return nullptr;
  }
};

} // namespace cellrun

#endif // CELLRUN_REQUEST_H
