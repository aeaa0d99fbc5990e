//===- ServerLoad.h - The same open-loop load against a server --*- C++ -*-===//
//
// `cellrun bench --server http://HOST:PORT | grpc://HOST:PORT`: the trace
// our in-process runs use, sent to a running `cellrun serve` (or any KServe
// v2 server) over HTTP/REST with JSON tensors or over gRPC (ModelInfer with
// typed contents), so the front end's cost shows in the same table. Each
// request goes out at its arrival time from a pool of keep-alive connections (a
// request waits in the client only when every connection is busy, and that wait
// counts in its latency); 429 and 503 answers count as drops, other errors as
// failures. The server's `compute_us` reply parameter, when present, splits
// queueing from compute.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_BENCH_SERVERLOAD_H
#define CELLRUN_TOOLS_BENCH_SERVERLOAD_H

#include "LoadRunner.h"

#include "cellrun/Tensors.h"

#include <nlohmann/json.hpp>

namespace cellrun::loadgen {

/// Request `line` (a `cellrun run` request line) as a KServe v2 infer body
/// for a model with `signature`: tokens or steps as [L] / [L, ...] tensors,
/// a tree as INT64 children [N, arity] (-1 for leaves), its leaves' inputs
/// and its internal nodes' ("internal_<name>"), max_decode_length as a
/// parameter.
Result<nlohmann::json> kserveBody(const nlohmann::json &line,
                                  const ModelSignature &signature);

struct ServerOptions {
  std::string url;   // http://host:port or grpc://host:port
  std::string model; // the name the server serves
  uint32_t connections = 64;
  double deadlineMs = 0; // sent as the deadline_ms parameter when > 0
};

Result<RunRecord> runServer(const ServerOptions &options,
                            const std::vector<std::string> &lines,
                            const ModelSignature &signature,
                            const std::vector<TraceEntry> &trace,
                            const std::string &label, bool quiet);

} // namespace cellrun::loadgen

#endif // CELLRUN_TOOLS_BENCH_SERVERLOAD_H
