//===- HttpServer.cpp - The KServe v2 REST front end ----------------------===//
#include "HttpServer.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <chrono>

using namespace cellrun;
using namespace cellrun::serve;
namespace net = boost::asio;
using tcp = net::ip::tcp;

/// Accepts the connections of one port, each onto the server's loops in
/// turn.
class HttpServer::Listener : public std::enable_shared_from_this<Listener> {
public:
  Listener(HttpServer &server, tcp::acceptor acceptor, HttpRoutes &routes,
           ConnectionCount &count, uint32_t maxConnections)
      : server_(server), acceptor_(std::move(acceptor)), routes_(routes),
        count_(count), maxConnections_(maxConnections) {}

  void accept() {
    // One thread runs each loop: a connection needs no strand.
    acceptor_.async_accept(
        server_.nextLoop(),
        [self = shared_from_this()](boost::system::error_code error,
                                    tcp::socket socket) {
          if (error == net::error::operation_aborted ||
              !self->acceptor_.is_open())
            return; // stopped
          if (!error)
            self->take(std::move(socket));
          self->accept();
        });
  }

  void stop() {
    net::post(acceptor_.get_executor(), [self = shared_from_this()] {
      boost::system::error_code ignored;
      self->acceptor_.close(ignored);
    });
  }

private:
  void take(tcp::socket socket) {
    boost::system::error_code ignored;
    // Replies go out as header and body writes: without TCP_NODELAY,
    // Nagle's algorithm and the client's delayed ACK add ~40 ms to each.
    socket.set_option(tcp::no_delay(true), ignored);
    if (count_.stopping || count_.open >= maxConnections_) {
      // Answered at once, without reading: the request, if any, is not
      // taken (a tiny write to a fresh socket does not block).
      static const std::string kBody =
          "{\"error\":\"the server has too many connections open now\"}";
      static const std::string kBusy =
          "HTTP/1.1 503 Service Unavailable\r\n"
          "Content-Type: application/json\r\nConnection: close\r\n"
          "Content-Length: " +
          std::to_string(kBody.size()) + "\r\n\r\n" + kBody;
      net::write(socket, net::buffer(kBusy), ignored);
      socket.shutdown(tcp::socket::shutdown_both, ignored);
      socket.close(ignored);
      if (&count_ == &server_.apiCount_)
        server_.service_.metrics().countRefusedConnection();
      return;
    }
    auto connection = std::make_shared<HttpConnection>(
        std::move(socket), routes_, server_.limits_, count_);
    {
      std::lock_guard<std::mutex> lock(server_.connectionsMutex_);
      auto &all = server_.connections_;
      if (all.size() > 64 && all.size() > 2 * size_t(count_.open + 1))
        all.erase(std::remove_if(all.begin(), all.end(),
                                 [](auto &weak) { return weak.expired(); }),
                  all.end());
      all.push_back(connection);
    }
    connection->start();
  }

  HttpServer &server_;
  tcp::acceptor acceptor_;
  HttpRoutes &routes_;
  ConnectionCount &count_;
  uint32_t maxConnections_;
};

HttpServer::HttpServer(InferenceService &service, HttpRoutes *api)
    : service_(service), api_(service), apiRoutes_(api ? api : &api_),
      metrics_(service) {}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::listen(const std::string &host, int port, HttpRoutes &routes,
                          ConnectionCount &count, uint32_t maxConnections,
                          const char *what) {
  auto failed = [&](const boost::system::error_code &error) {
    return Status(StatusCode::Unavailable,
                  "cannot listen on " + host + ":" + std::to_string(port) +
                      " for " + what + " (" + error.message() + ")");
  };
  boost::system::error_code error;
  net::ip::address address = net::ip::make_address(host, error);
  if (error)
    return failed(error);
  tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  tcp::acceptor acceptor(*loops_.front());
  if (acceptor.open(endpoint.protocol(), error) ||
      acceptor.set_option(net::socket_base::reuse_address(true), error) ||
      acceptor.bind(endpoint, error) ||
      acceptor.listen(net::socket_base::max_listen_connections, error))
    return failed(error);
  auto listener = std::make_shared<Listener>(*this, std::move(acceptor), routes,
                                             count, maxConnections);
  listener->accept();
  listeners_.push_back(std::move(listener));
  return Status::ok();
}

Status HttpServer::start(const HttpOptions &options) {
  limits_.maxBodyBytes = options.maxBodyBytes;
  limits_.timeout = std::chrono::milliseconds(
      static_cast<int64_t>(options.timeoutSeconds * 1000));
  // Loop 0 accepts (and answers 503 past the limit) on every port; the
  // connections run on the --http-threads loops after it, so a heavy
  // request never delays accepting new connections.
  for (unsigned t = 0; t <= std::max(1u, options.threads); ++t)
    loops_.push_back(std::make_unique<net::io_context>(1));
  started_ = true;
  if (options.port > 0) {
    if (Status status = listen(options.host, options.port, *apiRoutes_,
                               apiCount_, options.maxConnections, "HTTP");
        !status.isOk())
      return status;
    boundPort_ = options.port;
  }
  if (options.metricsPort > 0) {
    // A scraper needs one connection or two.
    if (Status status = listen(options.host, options.metricsPort, metrics_,
                               metricsCount_, 64, "metrics");
        !status.isOk())
      return status;
    boundMetricsPort_ = options.metricsPort;
  }
  for (auto &loop : loops_)
    threads_.emplace_back([context = loop.get()] {
      auto work = net::make_work_guard(*context);
      context->run();
    });
  return Status::ok();
}

void HttpServer::stop() {
  if (!started_)
    return;
  started_ = false;
  apiCount_.stopping = metricsCount_.stopping = true;
  for (auto &listener : listeners_)
    listener->stop();
  {
    std::lock_guard<std::mutex> lock(connectionsMutex_);
    for (auto &weak : connections_)
      if (auto connection = weak.lock())
        connection->closeSoon();
    connections_.clear();
  }
  // Answers being written go out; a connection still open after a few
  // seconds (a client not reading) is dropped with the context.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((apiCount_.open > 0 || metricsCount_.open > 0) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (auto &loop : loops_)
    loop->stop();
  for (std::thread &thread : threads_)
    if (thread.joinable())
      thread.join();
  threads_.clear();
  listeners_.clear();
  // The accepting loop first: an accept still pending there holds a socket
  // of a connection loop, which must outlive it.
  for (auto &loop : loops_)
    loop.reset();
  loops_.clear();
}

net::io_context &HttpServer::nextLoop() {
  size_t connectionLoops = loops_.size() - 1;
  return *loops_[1 + nextLoop_.fetch_add(1, std::memory_order_relaxed) %
                         connectionLoops];
}
