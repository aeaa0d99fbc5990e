//===- Workload.h - Request shapes and requests drawn from them -*- C++ -*-===//
//
// A workload (bench/workloads/*.csv) lists request shapes, one a line under
// a header: `length` (steps of a sequence), `leaves` (of a binary tree) or
// `source,decode` (a seq2seq source and its decode limit). The synthesizer
// turns shape k into request k of a trace, as a `cellrun run` request line:
// tokens uniform over the input's vocabulary, features from a standard
// normal, a tree's leaves bracketed at random; all drawn from (seed, k), so
// request k is the same whatever else runs. A shape of one kind serves a
// model of another: a length is a seq2seq source decoded as long, or a
// tree's leaf count.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_BENCH_WORKLOAD_H
#define CELLRUN_TOOLS_BENCH_WORKLOAD_H

#include "cellrun/Model.h"
#include "cellrun/Tensors.h"

#include <string>
#include <vector>

namespace cellrun::loadgen {

struct RequestShape {
  uint32_t size = 0;   // steps, leaves, or source length
  uint32_t decode = 0; // seq2seq decode limit; 0: as long as the source
};

struct Workload {
  std::string path, columns;
  std::vector<RequestShape> shapes;
};

/// InvalidArgument naming the line and column at fault.
Result<Workload> loadWorkload(const std::string &path);

class RequestSynthesizer {
public:
  /// Unsupported for custom models (their requests are the unfolder's).
  static Result<RequestSynthesizer> create(const LoadedArtifact &artifact,
                                           const ModelSignature &signature);
  /// Request `k` of the trace (id "r<k>") as one JSON line.
  std::string requestLine(uint32_t k, const RequestShape &shape,
                          uint64_t seed) const;
  /// The request's length as the padded policies and peers see it.
  static uint32_t lengthOf(const RequestShape &shape) { return shape.size; }

private:
  UnfoldingKind structure_ = UnfoldingKind::Chain;
  std::vector<TensorDescription> inputs_; // per step, or per leaf
  int64_t maxDecode_ = 0;
  bool tokens_ = false; // one integer a step: "tokens"
};

} // namespace cellrun::loadgen

#endif // CELLRUN_TOOLS_BENCH_WORKLOAD_H
