//===- HttpRoutesTest.cpp - Where the HTTP front end writes its answers ---===//
//
// An inference answer is encoded on the connection's thread, not on the
// engine's thread that produced it: KServeRoutes hands the reply to the
// request's onConnection hook, and only the work run there responds; the
// HTTP server's connections give every request that hook. The answer's
// values are the engine's own (the same request through the Engine API),
// bit for bit.
//
//===----------------------------------------------------------------------===//
#include "HttpRoutes.h"
#include "HttpServer.h"
#include "InferenceService.h"

#include "ExampleArtifacts.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <random>
#include <thread>

using namespace cellrun;
using namespace cellrun::serve;

namespace {

class HttpRoutesTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto artifact = cellc::testing::loadExampleArtifact("lstm");
    ASSERT_TRUE(artifact);
    EngineOptions options;
    options.executor.device = DeviceKind::Cpu;
    options.executor.threads = 1;
    auto created = InferenceService::create(artifact, options);
    ASSERT_TRUE(created.ok()) << created.status().toString();
    service_ = std::move(created).value();
    std::mt19937 random(29);
    std::uniform_int_distribution<int64_t> token(1, 50);
    for (int k = 0; k < 12; ++k)
      tokens_.push_back(token(random));
  }

  HttpRequest inferRequest() const {
    HttpRequest request;
    request.method = "POST";
    request.path = "/v2/models/" + service_->modelName() + "/infer";
    const std::string &input = service_->signature().inputs.at(0).name;
    request.body = nlohmann::json{{"inputs",
                                   {{{"name", input},
                                     {"datatype", "INT64"},
                                     {"shape", {tokens_.size()}},
                                     {"data", tokens_}}}}}
                       .dump();
    request.received = std::chrono::steady_clock::now();
    request.cancel = std::make_shared<CancelToken>();
    return request;
  }

  /// The same tokens through the Engine API: the values the answer holds.
  RequestResult direct() {
    NamedTensor tensor{service_->signature().inputs.at(0).name,
                       TensorType::Int64,
                       {static_cast<int64_t>(tokens_.size())},
                       {}};
    tensor.data.resize(tokens_.size() * sizeof(int64_t));
    std::memcpy(tensor.data.data(), tokens_.data(), tensor.data.size());
    TensorRequestOptions options;
    options.id = "direct";
    auto request = service_->engine().parser().fromTensors({tensor}, options);
    EXPECT_TRUE(request.ok()) << request.status().toString();
    std::promise<RequestResult> promise;
    auto future = promise.get_future();
    Status submitted = service_->engine().submit(
        std::move(request).value(), [&promise](RequestResult result) {
          promise.set_value(std::move(result));
        });
    EXPECT_TRUE(submitted.isOk()) << submitted.toString();
    return future.get();
  }

  /// Every output of `body` (the KServe JSON answer) equals the engine's.
  void expectAnswerHolds(const std::string &body,
                         const RequestResult &expected) {
    nlohmann::json answer = nlohmann::json::parse(body);
    ASSERT_TRUE(answer.contains("outputs")) << body.substr(0, 300);
    ASSERT_TRUE(expected.status.isOk()) << expected.status.toString();
    size_t compared = 0;
    for (const auto &output : answer["outputs"]) {
      const OutputTensor *tensor = expected.find(output["name"]);
      ASSERT_NE(tensor, nullptr) << output["name"];
      std::vector<float> values = output["data"].get<std::vector<float>>();
      ASSERT_EQ(values.size(), tensor->floats.size()) << output["name"];
      for (size_t k = 0; k < values.size(); ++k)
        ASSERT_EQ(values[k], tensor->floats[k])
            << output["name"] << " value " << k;
      compared += values.size();
    }
    EXPECT_EQ(answer["outputs"].size(), service_->signature().outputs.size());
    EXPECT_GT(compared, tokens_.size()); // every step's outputs, at least
  }

  std::unique_ptr<InferenceService> service_;
  std::vector<int64_t> tokens_;
};

TEST_F(HttpRoutesTest, AnInferenceAnswerIsEncodedOnTheConnectionsThread) {
  KServeRoutes routes(*service_);
  std::mutex mutex;
  std::condition_variable handed;
  std::function<void()> work;
  std::thread::id handedFrom;
  bool responded = false;
  HttpResponse response;
  std::thread::id respondedOn;

  HttpRequest request = inferRequest();
  request.onConnection = [&](std::function<void()> encode) {
    std::lock_guard<std::mutex> lock(mutex);
    work = std::move(encode);
    handedFrom = std::this_thread::get_id();
    handed.notify_all();
  };
  routes.handle(std::move(request), [&](HttpResponse answer) {
    std::lock_guard<std::mutex> lock(mutex);
    response = std::move(answer);
    respondedOn = std::this_thread::get_id();
    responded = true;
  });
  std::function<void()> encode;
  {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(handed.wait_for(lock, std::chrono::seconds(30),
                                [&] { return bool(work); }));
    // The engine's thread handed the reply over and wrote nothing itself.
    EXPECT_NE(handedFrom, std::this_thread::get_id());
    EXPECT_FALSE(responded);
    encode = std::move(work);
  }
  encode(); // here, as the connection's loop would
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_TRUE(responded);
  EXPECT_EQ(respondedOn, std::this_thread::get_id());
  EXPECT_EQ(response.status, 200) << response.body.substr(0, 300);
  expectAnswerHolds(response.body, direct());
}

TEST_F(HttpRoutesTest, WithoutAConnectionHookTheAnswerComesAtOnce) {
  KServeRoutes routes(*service_);
  std::promise<HttpResponse> promise;
  auto future = promise.get_future();
  routes.handle(inferRequest(), [&](HttpResponse answer) {
    promise.set_value(std::move(answer));
  });
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  HttpResponse response = future.get();
  EXPECT_EQ(response.status, 200) << response.body.substr(0, 300);
  expectAnswerHolds(response.body, direct());
}

/// A loopback port nothing listens on now.
int freePort() {
  int socket = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (socket < 0 ||
      bind(socket, reinterpret_cast<sockaddr *>(&address), length) != 0 ||
      getsockname(socket, reinterpret_cast<sockaddr *>(&address), &length) !=
          0) {
    if (socket >= 0)
      close(socket);
    return 0;
  }
  close(socket);
  return ntohs(address.sin_port);
}

/// The KServe routes, counting the requests a connection hands them with
/// and without the hook.
class HookCountingRoutes final : public HttpRoutes {
public:
  explicit HookCountingRoutes(InferenceService &service) : inner_(service) {}
  void handle(HttpRequest request, Respond respond) override {
    ++(request.onConnection ? withHook : withoutHook);
    inner_.handle(std::move(request), std::move(respond));
  }
  void cancel(const std::shared_ptr<CancelToken> &token) override {
    inner_.cancel(token);
  }
  std::atomic<int> withHook{0}, withoutHook{0};

private:
  KServeRoutes inner_;
};

TEST_F(HttpRoutesTest, TheServersConnectionsGiveEveryRequestTheHook) {
  HookCountingRoutes routes(*service_);
  HttpServer http(*service_, &routes);
  HttpOptions options;
  options.host = "127.0.0.1";
  options.port = freePort();
  options.metricsPort = 0;
  options.threads = 2;
  ASSERT_GT(options.port, 0);
  Status started = http.start(options);
  ASSERT_TRUE(started.isOk()) << started.toString();
  HttpRequest request = inferRequest();
  httplib::Client client("127.0.0.1", options.port);
  client.set_read_timeout(30, 0);
  auto answer = client.Post(request.path, request.body, "application/json");
  ASSERT_TRUE(answer) << httplib::to_string(answer.error());
  EXPECT_EQ(answer->status, 200) << answer->body.substr(0, 300);
  expectAnswerHolds(answer->body, direct());
  EXPECT_EQ(routes.withHook.load(), 1);
  EXPECT_EQ(routes.withoutHook.load(), 0);
  http.stop();
}

} // namespace
