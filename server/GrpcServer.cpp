//===- GrpcServer.cpp - The KServe v2 gRPC front end ----------------------===//
#include "GrpcServer.h"
#include "GrpcCodec.h"
#include "ServerInfo.h"
#include "SessionRouting.h"

#include "grpc_service.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <set>
#include <thread>

using namespace cellrun;
using namespace cellrun::serve;
using grpc::ServerContext;

namespace {

grpc::StatusCode grpcCodeOf(Outcome outcome) {
  switch (outcome) {
  case Outcome::Success:
    return grpc::StatusCode::OK;
  case Outcome::Invalid:
    return grpc::StatusCode::INVALID_ARGUMENT;
  case Outcome::NotFound:
    return grpc::StatusCode::NOT_FOUND;
  case Outcome::Overload:
    return grpc::StatusCode::RESOURCE_EXHAUSTED;
  case Outcome::Unavailable:
    return grpc::StatusCode::UNAVAILABLE;
  case Outcome::Failed:
    return grpc::StatusCode::INTERNAL;
  case Outcome::Cancelled:
    return grpc::StatusCode::CANCELLED;
  }
  return grpc::StatusCode::INTERNAL;
}

grpc::Status grpcStatusOf(const Status &status) {
  if (status.isOk())
    return grpc::Status::OK;
  return grpc::Status(grpcCodeOf(outcomeOf(status)), status.message());
}

void describe(const std::vector<TensorDescription> &tensors,
              google::protobuf::RepeatedPtrField<
                  inference::ModelMetadataResponse::TensorMetadata> &out) {
  for (const TensorDescription &tensor : tensors) {
    auto *entry = out.Add();
    entry->set_name(tensor.name);
    entry->set_datatype(tensorTypeName(tensor.type));
    for (int64_t extent : tensor.shape)
      entry->add_shape(extent);
  }
}

} // namespace

class GrpcServer::Impl final : public inference::GRPCInferenceService::Service {
public:
  explicit Impl(InferenceService &service) : service_(service) {}

  grpc::Status ServerLive(ServerContext *, const inference::ServerLiveRequest *,
                          inference::ServerLiveResponse *out) override {
    out->set_live(service_.live());
    return grpc::Status::OK;
  }
  grpc::Status ServerReady(ServerContext *,
                           const inference::ServerReadyRequest *,
                           inference::ServerReadyResponse *out) override {
    out->set_ready(service_.ready());
    return grpc::Status::OK;
  }
  grpc::Status ModelReady(ServerContext *,
                          const inference::ModelReadyRequest *in,
                          inference::ModelReadyResponse *out) override {
    if (Status status = service_.checkModel(in->name(), in->version());
        !status.isOk())
      return grpcStatusOf(status);
    out->set_ready(service_.ready());
    return grpc::Status::OK;
  }
  grpc::Status ServerMetadata(ServerContext *,
                              const inference::ServerMetadataRequest *,
                              inference::ServerMetadataResponse *out) override {
    out->set_name(kServerName);
    out->set_version(kServerVersion);
    for (const std::string &extension : serverExtensions())
      out->add_extensions(extension);
    return grpc::Status::OK;
  }
  grpc::Status ModelMetadata(ServerContext *,
                             const inference::ModelMetadataRequest *in,
                             inference::ModelMetadataResponse *out) override {
    if (Status status = service_.checkModel(in->name(), in->version());
        !status.isOk())
      return grpcStatusOf(status);
    out->set_name(service_.modelName());
    out->add_versions(service_.modelVersion());
    out->set_platform(kPlatform);
    describe(service_.signature().inputs, *out->mutable_inputs());
    describe(service_.signature().outputs, *out->mutable_outputs());
    return grpc::Status::OK;
  }

  /// The call's x-sequence-id metadata (SessionRouting.h), if it has one.
  static std::optional<std::string> sequenceIdOf(const ServerContext &context) {
    const auto &metadata = context.client_metadata();
    auto found = metadata.find(kSequenceIdHeader);
    if (found == metadata.end())
      return std::nullopt;
    return std::string(found->second.data(), found->second.size());
  }

  /// Runs one request; `done` gets the reply (on the engine's thread);
  /// `token` cancels it; `sequenceId` is its call's x-sequence-id metadata.
  void run(const inference::ModelInferRequest &in,
           std::shared_ptr<CancelToken> token,
           InferenceService::ReplyCallback done,
           const std::optional<std::string> &sequenceId) {
    auto received = std::chrono::steady_clock::now();
    done = [this, received, done = std::move(done)](InferReply reply) {
      if (reply.refusedAtOnce && (reply.outcome == Outcome::Overload ||
                                  reply.outcome == Outcome::Unavailable))
        service_.metrics().observeRefusal(
            std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                          received)
                .count());
      done(std::move(reply));
    };
    // Overloaded or stopping: refuse before the tensors are copied out.
    if (service_.refuseEarly(in.model_name(), in.model_version(), in.id(),
                             done))
      return;
    auto call = decodeInferRequest(in, sequenceId);
    if (!call.ok()) {
      service_.metrics().countRequest(Outcome::Invalid);
      InferReply reply;
      reply.id = in.id();
      reply.status = call.status();
      reply.outcome = Outcome::Invalid;
      return done(std::move(reply));
    }
    call.value().cancel = std::move(token);
    service_.infer(std::move(call).value(), std::move(done));
  }

  /// Why a call's requests are cancelled.
  static constexpr const char *kCallEnded =
      "its client cancelled the call, or the call's deadline passed";
  /// How often a waiting call looks for its client's cancellation.
  static constexpr std::chrono::milliseconds kCancelPoll{20};

  grpc::Status ModelInfer(ServerContext *context,
                          const inference::ModelInferRequest *in,
                          inference::ModelInferResponse *out) override {
    std::promise<InferReply> promise;
    std::future<InferReply> future = promise.get_future();
    auto token = std::make_shared<CancelToken>();
    std::optional<std::string> sequenceId = sequenceIdOf(*context);
    run(
        *in, token,
        [&promise](InferReply reply) { promise.set_value(std::move(reply)); },
        sequenceId);
    // A client that cancels or lets its deadline pass stops the work.
    while (future.wait_for(kCancelPoll) != std::future_status::ready)
      if (context->IsCancelled()) {
        service_.cancel(token, kCallEnded);
        break;
      }
    InferReply reply = future.get();
    // The metadata's session id back, where a proxy sees it.
    if (sequenceId)
      context->AddInitialMetadata(kSequenceIdHeader, *sequenceId);
    if (!reply.status.isOk())
      return grpc::Status(grpcCodeOf(reply.outcome), reply.status.message());
    encodeInferReply(reply, service_.signature(), service_.modelName(),
                     service_.modelVersion(), *out);
    return grpc::Status::OK;
  }

  grpc::Status ModelStreamInfer(
      ServerContext *context,
      grpc::ServerReaderWriter<inference::ModelStreamInferResponse,
                               inference::ModelInferRequest> *stream) override {
    // Replies arrive on the engine's thread; this thread alone writes, so
    // a slow client never holds up the engine.
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<InferReply> replies;
    size_t outstanding = 0;
    bool reading = true;
    // The requests not answered yet, cancelled if the client goes away.
    std::set<std::shared_ptr<CancelToken>> unanswered;
    bool cancelled = false;
    // One stream's metadata names the session of all its requests.
    std::optional<std::string> sequenceId = sequenceIdOf(*context);
    std::thread reader([&] {
      inference::ModelInferRequest in;
      while (stream->Read(&in)) {
        auto token = std::make_shared<CancelToken>();
        bool cancelNow = false;
        {
          std::lock_guard<std::mutex> lock(mutex);
          ++outstanding;
          unanswered.insert(token);
          cancelNow = cancelled;
        }
        if (cancelNow)
          service_.cancel(token, kCallEnded);
        run(
            in, token,
            [&, token](InferReply reply) {
              std::lock_guard<std::mutex> lock(mutex);
              unanswered.erase(token);
              replies.push_back(std::move(reply));
              changed.notify_all();
            },
            sequenceId);
      }
      std::lock_guard<std::mutex> lock(mutex);
      reading = false;
      changed.notify_all();
    });
    bool writable = true;
    while (true) {
      std::unique_lock<std::mutex> lock(mutex);
      bool woken = changed.wait_for(lock, kCancelPoll, [&] {
        return !replies.empty() || (!reading && outstanding == 0);
      });
      if (!woken) {
        if (!cancelled && context->IsCancelled()) {
          cancelled = true;
          std::vector<std::shared_ptr<CancelToken>> tokens(unanswered.begin(),
                                                           unanswered.end());
          lock.unlock();
          for (const auto &token : tokens)
            service_.cancel(token, kCallEnded);
        }
        continue;
      }
      if (replies.empty())
        break;
      InferReply reply = std::move(replies.front());
      replies.pop_front();
      --outstanding;
      lock.unlock();
      inference::ModelStreamInferResponse out;
      if (reply.status.isOk())
        encodeInferReply(reply, service_.signature(), service_.modelName(),
                         service_.modelVersion(),
                         *out.mutable_infer_response());
      else {
        out.set_error_message(reply.status.message());
        out.mutable_infer_response()->set_id(reply.id);
      }
      // A client that went away: keep draining its replies, write no more.
      if (writable)
        writable = stream->Write(out);
    }
    reader.join();
    return grpc::Status::OK;
  }

  InferenceService &service_;
  std::unique_ptr<grpc::Server> server_;
};

GrpcServer::GrpcServer(InferenceService &service)
    : impl_(std::make_unique<Impl>(service)) {}

GrpcServer::~GrpcServer() { stop(); }

Status GrpcServer::start(const std::string &host, int port) {
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(host + ":" + std::to_string(port),
                           grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(impl_.get());
  builder.SetMaxReceiveMessageSize(256 << 20);
  builder.SetMaxSendMessageSize(256 << 20);
  impl_->server_ = builder.BuildAndStart();
  if (!impl_->server_ || bound == 0) {
    impl_->server_.reset();
    return Status(StatusCode::Unavailable,
                  "cannot listen on " + host + ":" + std::to_string(port) +
                      " for gRPC (in use, or not allowed)");
  }
  return Status::ok();
}

void GrpcServer::stop() {
  if (impl_->server_) {
    // Streams a client keeps open are cancelled after two seconds (their
    // replies are written by then: the service is idle when this runs).
    impl_->server_->Shutdown(std::chrono::system_clock::now() +
                             std::chrono::seconds(2));
    impl_->server_->Wait();
    impl_->server_.reset();
  }
}
