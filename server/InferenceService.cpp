//===- InferenceService.cpp - One model behind the inference protocol -----===//
#include "InferenceService.h"

#include "cellrun/RequestParser.h"

using namespace cellrun;
using namespace cellrun::serve;

Outcome serve::outcomeOf(const Status &status) {
  switch (status.code()) {
  case StatusCode::Ok:
    return Outcome::Success;
  case StatusCode::InvalidArgument:
  case StatusCode::OutOfRange:
  case StatusCode::Unsupported:
    return Outcome::Invalid;
  case StatusCode::NotFound:
    return Outcome::NotFound;
  case StatusCode::ResourceExhausted:
    return Outcome::Overload;
  case StatusCode::Unavailable:
    return Outcome::Unavailable;
  case StatusCode::Cancelled:
    return Outcome::Cancelled;
  default:
    return Outcome::Failed;
  }
}

int serve::httpStatusOf(Outcome outcome) {
  switch (outcome) {
  case Outcome::Success:
    return 200;
  case Outcome::Invalid:
    return 400;
  case Outcome::NotFound:
    return 404;
  case Outcome::Overload:
    return 429;
  case Outcome::Unavailable:
  case Outcome::Cancelled:
    return 503;
  case Outcome::Failed:
    return 500;
  }
  return 500;
}

Result<std::unique_ptr<InferenceService>>
InferenceService::create(std::shared_ptr<const LoadedArtifact> artifact,
                         EngineOptions options) {
  std::unique_ptr<InferenceService> service(new InferenceService());
  InferenceService *self = service.get();
  options.onTask = [self](const TaskRecord &task) {
    self->metrics_->observeTask(task.cellType, task.nodes);
  };
  auto engine = Engine::create(artifact, options);
  if (!engine.ok())
    return engine.status();
  service->engine_ = std::move(engine).value();
  service->artifact_ = std::move(artifact);
  ModelInfo model = describeModel(*service->artifact_);
  service->modelName_ = model.name.empty() ? "model" : model.name;
  service->structureName_ = unfoldingName(model.unfolding);
  service->signature_ = service->engine_->parser().signature();
  std::vector<std::string> cells;
  for (const CellTypeStats &cell : service->engine_->stats().cells)
    cells.push_back(cell.name);
  service->metrics_ = std::make_unique<ServerMetrics>(std::move(cells));
  // Every plan is prepared when the engine is created (kernels, weights,
  // the GEMM algorithm choice on a GPU): ready from here on.
  service->ready_ = true;
  return service;
}

InferenceService::~InferenceService() {
  stopAccepting();
  waitIdle();
  // The engine's threads end before the members its callbacks touch go.
  engine_.reset();
}

Status InferenceService::checkModel(const std::string &name,
                                    const std::string &version) const {
  if (name != modelName_)
    return Status(StatusCode::NotFound, "unknown model '" + name +
                                            "' (this server serves '" +
                                            modelName_ + "')");
  if (!version.empty() && version != modelVersion_)
    return Status(StatusCode::NotFound,
                  "unknown version '" + version + "' of model '" + name +
                      "' (it has version " + modelVersion_ + ")");
  return Status::ok();
}

/// Why a request is refused once stopAccepting() was called.
static Status shuttingDown() {
  return Status(StatusCode::Unavailable,
                "the server is shutting down and takes no new requests");
}

void InferenceService::finish(InferReply &reply, const ReplyCallback &done) {
  reply.outcome = outcomeOf(reply.status);
  metrics_->countRequest(reply.outcome);
  if (reply.outcome == Outcome::Success)
    metrics_->observeRequest(reply.queueMicros * 1e-6,
                             reply.computeMicros * 1e-6);
  done(std::move(reply));
}

void InferenceService::infer(InferCall call, ReplyCallback done) {
  InferReply reply;
  reply.id = call.id;
  ++inFlight_;
  // Under the mutex: once waitIdle() has seen zero, no leave() is still
  // about to touch the service.
  auto leave = [this] {
    std::lock_guard<std::mutex> lock(idleMutex_);
    if (--inFlight_ == 0)
      idle_.notify_all();
  };
  if (stopping_) {
    reply.status = shuttingDown();
    reply.refusedAtOnce = true;
    finish(reply, done);
    leave();
    return;
  }
  reply.status = checkModel(call.modelName, call.modelVersion);
  // Every requested output must exist, once.
  std::vector<std::string> wanted = call.outputs;
  if (reply.status.isOk())
    reply.status =
        engine_->parser().checkOutputNames(wanted, "request " + call.id);
  if (wanted.empty())
    for (const TensorDescription &output : signature_.outputs)
      wanted.push_back(output.name);
  Result<Request> request = Status(StatusCode::Internal, "not parsed");
  if (reply.status.isOk()) {
    // Messages name the request by its id, or by its arrival number.
    call.options.id =
        call.id.empty() ? "#" + std::to_string(++unnamed_) : call.id;
    request = engine_->parser().fromTensors(call.inputs, call.options);
    reply.status = request.status();
    if (request.ok()) {
      request.value().cancel = std::move(call.cancel);
      // A chain then never reads back the rows of outputs not asked for.
      request.value().outputs = call.outputs;
    }
  }
  if (!reply.status.isOk()) {
    finish(reply, done);
    leave();
    return;
  }
  auto callback = std::make_shared<ReplyCallback>(std::move(done));
  Status submitted = engine_->submit(
      std::move(request).value(),
      [this, callback, wanted, leave, id = call.id](RequestResult result) {
        InferReply answer;
        answer.id = id;
        answer.status = result.status;
        answer.stopReason = result.stopReason;
        answer.queueMicros = result.queueMicros;
        answer.computeMicros = result.computeMicros;
        // Moved, not copied: this runs on the engine's thread. Each name is
        // wanted once (checkOutputNames).
        if (result.status.isOk())
          for (const std::string &name : wanted)
            for (OutputTensor &tensor : result.outputs)
              if (tensor.name == name) {
                answer.outputs.push_back(std::move(tensor));
                break;
              }
        finish(answer, *callback);
        leave();
      });
  if (!submitted.isOk()) {
    reply.status = submitted;
    reply.refusedAtOnce = true;
    finish(reply, *callback);
    leave();
  }
}

bool InferenceService::refuseEarly(const std::string &name,
                                   const std::string &version,
                                   const std::string &id,
                                   const ReplyCallback &done) {
  if (!checkModel(name, version).isOk())
    return false;
  InferReply reply;
  reply.id = id;
  reply.status = stopping_ ? shuttingDown() : engine_->refuseForLoad();
  if (reply.status.isOk())
    return false;
  reply.refusedAtOnce = true;
  finish(reply, done);
  return true;
}

void InferenceService::stopAccepting() { stopping_ = true; }

void InferenceService::waitIdle() {
  std::unique_lock<std::mutex> lock(idleMutex_);
  idle_.wait(lock, [this] { return inFlight_ == 0; });
}

bool InferenceService::waitIdleFor(double seconds) {
  std::unique_lock<std::mutex> lock(idleMutex_);
  return idle_.wait_for(lock, std::chrono::duration<double>(seconds),
                        [this] { return inFlight_ == 0; });
}

std::string InferenceService::renderMetrics() const {
  return metrics_->render(engine_->stats(), inFlight_);
}
