//===- PeerRunner.h - The PyTorch peer on the same trace --------*- C++ -*-===//
//
// Runs a peer script of bench/peers/ (PyTorch, ONNX Runtime) on the
// trace a run of ours used: the requests as `cellrun run` lines with their
// arrival times, written to a file the peer reads; the peer first compares
// its outputs for the first requests with ours (a `cellrun run --output`
// file written here) and fails on a mismatch, then serves the trace and
// writes each request's arrival, start and end, read back into the same
// RunRecord our runs give.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_BENCH_PEERRUNNER_H
#define CELLRUN_TOOLS_BENCH_PEERRUNNER_H

#include "LoadRunner.h"

#include "cellrun/Model.h"

namespace cellrun::loadgen {

struct PeerOptions {
  std::string python = "/usr/bin/python3";
  std::string script;          // bench/peers/<peer>_<structure>.py
  std::string weights;         // the generator's <cell>.pt, or their directory
  std::string mode = "online"; // or "sorted" (offline, PyTorch at its best)
  uint32_t threads = 1, bucketWidth = 0, maxBatch = 512; // 0: no buckets
  std::string reference;      // our outputs, checked by the peer ("": none)
  std::string extra;          // more options for the script (already quoted)
  std::string device = "cpu"; // or "cuda": where the peer's model runs
};

/// `lines[k]` is request k as a JSON line. Files go to `directory` (named
/// after `label`); the peer's one-line JSON summary goes to `summary`.
Result<RunRecord> runPeer(const PeerOptions &options,
                          const std::vector<std::string> &lines,
                          const std::vector<TraceEntry> &trace,
                          const std::string &directory,
                          const std::string &label, std::string &summary);

/// The peers `cellrun bench --peers` knows.
const std::vector<std::string> &peerNames();

/// Sets `peer.script` (and its model options) to peer `name`'s script in
/// `peersDir` for the model's unfolding; Unsupported where that peer has
/// none (a custom unfolder's model; ONNX Runtime for trees).
Status choosePeerScript(const ModelInfo &model, const std::string &peersDir,
                        const std::string &name, PeerOptions &peer);

/// Our outputs for `requests` (run alone, cellular) in the format of
/// `cellrun run --output`, for the peer to check against.
Status writeReference(std::shared_ptr<const LoadedArtifact> artifact,
                      EngineOptions options,
                      const std::vector<Request> &requests,
                      const std::string &path);

} // namespace cellrun::loadgen

#endif // CELLRUN_TOOLS_BENCH_PEERRUNNER_H
