//===- RequestParser.h - Requests from JSON, checked ------------*- C++ -*-===//
//
// The request format of `cellrun run` (one JSON object a line) and of the
// HTTP front end:
//   chain, seq2seq:  {"id": "r1", "tokens": [5, 17, 3]}
//                    or {"id": "r1", "steps": [{"x": [0.1, 0.2]}, ...]}
//                    seq2seq also "max_decode_length": N (<= the model's and
//                    the step limit)
//   tree:            {"id": "t1", "nodes": [{"token": 4}, {"token": 9},
//                                            {"children": [0, 1]}],
//                     "root": 2}   (root optional: the node no one points to)
//   any:             "deadline_ms": D (a latency goal, counted when missed)
//   custom:          whatever the registered unfolder checks (Unfolder.h)
// "tokens" fits cells with one request input of one integer each. Every
// check happens here: empty sequences, values outside an input's table
// (token ids beyond the vocabulary), wrong row sizes, trees with cycles,
// missing, extra or duplicate children, unreachable nodes, and the limits.
// Messages name the request and the offending element.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_REQUESTPARSER_H
#define CELLRUN_REQUESTPARSER_H

#include "cellrun/Request.h"
#include "cellrun/Tensors.h"
#include "cellrun/Unfolder.h"

#include <nlohmann/json.hpp>

#include <memory>

namespace cellrun {

class LoadedArtifact;
struct ModelStructure;

struct RequestLimits {
  /// Steps of one cell a request may run: a longer chain or encoder input
  /// is refused, a decode stops after this many tokens (stop reason
  /// "limit") when the model's max_decode_length is longer.
  uint32_t maxSteps = 4096;
  uint32_t maxTreeNodes = 4096; // nodes of a tree
  /// Floating-point inputs may be NaN or infinite (by default such a
  /// request is refused, naming the input and step).
  bool allowNonFinite = false;
};

class RequestParser {
public:
  /// InvalidArgument/Unsupported when the artifact's unfolding is unusable.
  static Result<std::unique_ptr<RequestParser>>
  create(std::shared_ptr<const LoadedArtifact> artifact,
         RequestLimits limits = {});
  ~RequestParser();

  /// The request in JSON text; `fallbackId` names it when it has no "id".
  /// Text that is not JSON (a syntax error, invalid UTF-8, a duplicate
  /// member, nesting deeper than 256) is InvalidArgument "not valid JSON:
  /// ...".
  Result<Request> parse(std::string_view text,
                        const std::string &fallbackId) const;
  /// How JSON text is read: parseRequestJson, or a reader that gives the
  /// same trees and errors (the server's simdjson one).
  using JsonReader = Result<nlohmann::json> (*)(std::string_view text);
  /// parse, with the text read by `read`.
  Result<Request> parse(std::string_view text, const std::string &fallbackId,
                        JsonReader read) const;
  /// The same from JSON already read (named apart from parse, since a
  /// string converts to either).
  Result<Request> fromJson(const nlohmann::json &json,
                           const std::string &fallbackId) const;
  /// The id parse gives the request in `text` (its "id" when that is a
  /// string or an integer), or `fallbackId` when the text has none or is
  /// not a JSON object: what names a refused request.
  static std::string requestId(std::string_view text,
                               const std::string &fallbackId);
  /// The checks of parse for a request built in C++ (its `outputs` too).
  Status check(const Request &request) const;
  /// InvalidArgument, naming `where` and the model's outputs, when a name
  /// in `names` is not an output of the model or comes twice.
  Status checkOutputNames(const std::vector<std::string> &names,
                          const std::string &where) const;

  /// The model's inputs and outputs as named tensors (Tensors.h); empty
  /// for custom models, whose requests are JSON only.
  const ModelSignature &signature() const { return signature_; }
  /// A request from named tensors (Tensors.h), with every check of parse;
  /// messages name the tensor, step or node at fault.
  Result<Request> fromTensors(const std::vector<NamedTensor> &tensors,
                              const TensorRequestOptions &options) const;

  const ModelStructure &structure() const { return *structure_; }
  const RequestLimits &limits() const { return limits_; }

private:
  RequestParser() = default;
  /// The decode limit, and where it comes from, for messages.
  std::string decodeLimitText() const;
  Result<NodeData> parseNode(const nlohmann::json &json, uint32_t cell,
                             const std::string &where) const;
  /// A chain's or seq2seq's "tokens" or "steps", and "max_decode_length",
  /// into `request`.
  Status parseSequence(const nlohmann::json &json, const std::string &where,
                       Request &request) const;
  /// A tree's "nodes" and "root" into `request`.
  Status parseTree(const nlohmann::json &json, const std::string &where,
                   Request &request) const;
  /// A tree node's inputs for `cell`: its input values, or {"token": N}.
  Result<NodeData> parseTreeNode(const nlohmann::json &values, uint32_t cell,
                                 const std::string &where) const;
  Status checkNode(const NodeData &data, uint32_t cell,
                   const std::string &where) const;
  /// A row of request data to check.
  struct RowView {
    const uint8_t *bytes;
    size_t size;
  };
  /// Checks one node's rows against the input-role tensors of part
  /// `cell`; an error names `where` and, when not -1, the step.
  Status checkRows(const std::vector<RowView> &rows, uint32_t cell,
                   const std::string &where, int64_t step) const;
  /// The steps of a sequence whose steps all have the first one's rows.
  Status checkUniformSteps(const StepRows &steps,
                           const std::string &where) const;
  Status checkTree(const Request &request) const;
  ModelSignature makeSignature() const;
  Result<Request> treeFromTensors(const std::vector<const NamedTensor *> &found,
                                  Request request) const;

  std::shared_ptr<const LoadedArtifact> artifact_;
  std::unique_ptr<ModelStructure> structure_;
  RequestLimits limits_;
  std::unique_ptr<Unfolder> checker_; // custom models
  ModelSignature signature_;
};

} // namespace cellrun

#endif // CELLRUN_REQUESTPARSER_H
