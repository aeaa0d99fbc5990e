//===- Unfolder.h - User-defined unfolding of requests ----------*- C++ -*-===//
//
// Models compiled with `structure: custom` (manifest `custom: {unfolder:
// NAME}`) unfold their requests with C++ code the user registers under NAME
// before creating an engine. The unfolder checks a request's JSON, builds
// its first cell nodes, and after every node it asked for has run, reads
// what it needs, adds nodes and finally finishes the request. The engine
// does everything else (batching with other requests, rows, admission).
//
// The JSON is an nlohmann::json (nlohmann-json 3, header-only), read with
// duplicate member names and nesting deeper than 256 refused. Integers that
// are not negative are number_unsigned, negative ones number_integer (both
// is_number_integer()), numbers with a fraction or exponent number_float.
// An exception thrown from an unfolder (such as json::at on a missing
// member) fails its request only.
//
// Nodes are handed over in ready chains: nodes of one cell, each depending
// at most on the node before it in the chain; every other input must come
// from a node that has already run (or from data or zeros).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_UNFOLDER_H
#define CELLRUN_UNFOLDER_H

#include "cellrun/Request.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string_view>

namespace cellrun {

/// The request's cell graph as an unfolder sees it.
class GraphBuilder {
public:
  virtual ~GraphBuilder() = default;
  /// A new node of the cell called `cell`; its inputs start as zeros.
  virtual Result<uint32_t> addNode(std::string_view cell) = 0;
  /// Input `input` of `node` reads `row` (exactly one row of its type).
  virtual Status setData(uint32_t node, std::string_view input,
                         std::vector<uint8_t> row) = 0;
  /// Input `input` of `node` reads output `output` of `producer`.
  virtual Status setOutput(uint32_t node, std::string_view input,
                           uint32_t producer, std::string_view output) = 0;
  /// Hands `chain` to the scheduler (see the file comment).
  virtual Status ready(std::vector<uint32_t> chain) = 0;
  /// The row output `output` of a node that has run wrote.
  virtual Status read(uint32_t node, std::string_view output,
                      std::vector<uint8_t> &row) = 0;
  /// The result returned when the request finishes (add outputs to it).
  virtual RequestResult &result() = 0;
  /// The request is complete once the current call returns.
  virtual void finish() = 0;
};

class Unfolder {
public:
  virtual ~Unfolder() = default;
  /// InvalidArgument with a precise message when `request` is malformed.
  /// May be called from several threads at once (a server's threads each
  /// parsing a request): it must not change the unfolder.
  virtual Status check(const nlohmann::json &request) const = 0;
  /// At most how many nodes' outputs the request holds at once when its
  /// nodes run one at a time (the engine reserves rows for that many, and
  /// for the nodes of their chains in flight, before admitting it). A
  /// request that would hold more fails alone.
  virtual uint32_t peakNodes(const nlohmann::json &request) const = 0;
  /// Builds the first nodes of a checked request (or finishes it).
  virtual Status start(const nlohmann::json &request, GraphBuilder &graph) = 0;
  /// `node` has run. A request that has nothing left to run and is not
  /// finished fails.
  virtual Status nodeDone(uint32_t node, GraphBuilder &graph) = 0;
};

/// Makes one Unfolder per request.
using UnfolderFactory = std::function<std::unique_ptr<Unfolder>()>;

/// Registers `factory` under `name` (replacing an earlier one); thread-safe.
void registerUnfolder(const std::string &name, UnfolderFactory factory);
/// The factory registered under `name`, or null.
UnfolderFactory findUnfolder(const std::string &name);

} // namespace cellrun

#endif // CELLRUN_UNFOLDER_H
