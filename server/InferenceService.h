//===- InferenceService.h - One model behind the inference protocol -*- C++
//-*-===//
//
// What the HTTP and gRPC front ends share: the model's name, version and
// tensor signature, readiness, the engine (built only on the public Engine
// API), the mapping of runtime errors to protocol outcomes, metrics and the
// count of requests in flight for a graceful shutdown. A front end decodes
// its wire format into an InferCall, calls infer() and encodes the
// InferReply it gets back (exactly once, on any thread).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SERVE_INFERENCESERVICE_H
#define CELLRUN_TOOLS_SERVE_INFERENCESERVICE_H

#include "Metrics.h"

#include "cellrun/Engine.h"
#include "cellrun/Model.h"
#include "cellrun/Tensors.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cellrun::serve {

/// A decoded inference request.
struct InferCall {
  std::string modelName, modelVersion; // version may be empty
  std::string id;
  std::vector<NamedTensor> inputs;
  /// Outputs to return, by name; empty: every output of the signature.
  std::vector<std::string> outputs;
  TensorRequestOptions options;
  /// Lets the front end cancel the request when its client goes away.
  std::shared_ptr<CancelToken> cancel;
};

struct InferReply {
  Outcome outcome = Outcome::Success;
  Status status;
  std::string id;
  /// The requested outputs, in the order asked for (or the signature's).
  std::vector<OutputTensor> outputs;
  std::string stopReason; // seq2seq: "eos" or "limit"
  double queueMicros = 0, computeMicros = 0;
  /// Refused before it reached a worker (queue full, no worker, shutting
  /// down): what cellrun_refusal_seconds times.
  bool refusedAtOnce = false;
};

/// The outcome a failed Status maps to (InvalidArgument: Invalid, ...).
Outcome outcomeOf(const Status &status);
/// The HTTP status of an outcome (200, 400, 404, 429, 503, 500; a cancelled
/// request 503).
int httpStatusOf(Outcome outcome);

class InferenceService {
public:
  using ReplyCallback = std::function<void(InferReply)>;

  static Result<std::unique_ptr<InferenceService>>
  create(std::shared_ptr<const LoadedArtifact> artifact, EngineOptions options);
  ~InferenceService();

  const std::string &modelName() const { return modelName_; }
  const std::string &modelVersion() const { return modelVersion_; }
  const ModelSignature &signature() const { return signature_; }
  const std::string &structureName() const { return structureName_; }
  const Engine &engine() const { return *engine_; }
  Engine &engine() { return *engine_; }

  bool live() const { return true; }
  /// Ready while accepting and some engine worker serves (a worker whose
  /// device is lost stops; with none left the server is not ready).
  bool ready() const {
    return ready_ && !stopping_ && engine_->stats().workersInService > 0;
  }
  /// NotFound when `name` (and `version`, when not empty) is not ours.
  Status checkModel(const std::string &name, const std::string &version) const;

  /// Runs `call`; `done` is called exactly once (inline when the request is
  /// refused before it reaches the engine).
  void infer(InferCall call, ReplyCallback done);
  /// Refuses a request for `name` (and `version`) before a front end has
  /// decoded it, when the server is shutting down (503), no worker serves
  /// (503) or the engine's queue is full (429): calls `done` inline with
  /// the refusal and returns true. Otherwise, or when the model is not ours
  /// (infer() answers that with 404), returns false and does nothing.
  bool refuseEarly(const std::string &name, const std::string &version,
                   const std::string &id, const ReplyCallback &done);

  /// Ends the request infer() was given `token` for (its client went away):
  /// it is answered with Cancelled ("request <id> was cancelled: <reason>").
  void cancel(const std::shared_ptr<CancelToken> &token,
              const std::string &reason) {
    engine_->cancel(token, reason);
  }

  /// Refuses new requests from now on (503) and marks the server not ready.
  void stopAccepting();
  /// Waits until every accepted request has been answered.
  void waitIdle();
  /// The same for at most `seconds`; true when idle.
  bool waitIdleFor(double seconds);
  /// Cancels every request accepted and not yet answered (a shutdown past
  /// its drain deadline): they are answered with Cancelled (503, gRPC
  /// CANCELLED) and `reason`.
  void cancelAll(const std::string &reason) { engine_->cancelAll(reason); }
  uint64_t inFlight() const { return inFlight_; }

  /// The Prometheus exposition of the server and engine metrics.
  std::string renderMetrics() const;
  ServerMetrics &metrics() { return *metrics_; }

private:
  InferenceService() = default;
  void finish(InferReply &reply, const ReplyCallback &done);

  std::shared_ptr<const LoadedArtifact> artifact_;
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<Engine> engine_;
  std::string modelName_, modelVersion_ = "1", structureName_;
  ModelSignature signature_;
  std::atomic<bool> ready_{false}, stopping_{false};
  std::atomic<uint64_t> inFlight_{0};
  std::atomic<uint64_t> unnamed_{0}; // requests without an id, numbered
  std::mutex idleMutex_;
  std::condition_variable idle_;
};

} // namespace cellrun::serve

#endif // CELLRUN_TOOLS_SERVE_INFERENCESERVICE_H
