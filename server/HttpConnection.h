//===- HttpConnection.h - One HTTP/1.1 connection, event-driven -*- C++ -*-===//
//
// A client's connection to the REST or metrics port (Boost.Beast on Asio):
// reads a request's header within the timeout, then its body within the
// timeout and the body limit, decodes a compressed body within the limit,
// hands the request to its routes and writes their answer when it comes;
// then reads the next request, which a pipelining client may already have
// sent (answers go out in order, one request at a time). A connection
// waiting for its client or for the engine holds no thread. Malformed
// requests get 400 (a Content-Length that is negative, not a number, or
// given twice), 413 past the body limit, 431 past the header limit, 415 for
// an unknown Content-Encoding, then the connection closes. A client that
// closes its connection while its request is computed has the request
// cancelled (the engine stops its work at the next step).
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SERVE_HTTPCONNECTION_H
#define CELLRUN_TOOLS_SERVE_HTTPCONNECTION_H

#include "HttpRoutes.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>

namespace cellrun::serve {

struct HttpLimits {
  size_t maxBodyBytes = 64u << 20;   // raw and decoded
  size_t maxHeaderBytes = 64u << 10; // the request line and header fields
  /// The longest a client may take to send a request's header, then its
  /// body, or to start its next request.
  std::chrono::milliseconds timeout{30000};
};

/// What every connection of a server shares: its count (the connection
/// limit) and whether the server is stopping.
struct ConnectionCount {
  std::atomic<uint32_t> open{0};
  std::atomic<bool> stopping{false};
};

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
public:
  HttpConnection(boost::asio::ip::tcp::socket socket, HttpRoutes &routes,
                 const HttpLimits &limits, ConnectionCount &count);
  ~HttpConnection();
  /// Starts reading requests (on the thread of the connection's loop).
  void start();
  /// From any thread: closes the connection once the request it is
  /// answering (if any) has been answered.
  void closeSoon();

private:
  using Parser =
      boost::beast::http::request_parser<boost::beast::http::string_body>;
  void readHeader();
  void onHeader(boost::beast::error_code error);
  void readBody();
  void onBody(boost::beast::error_code error);
  /// The request read: decoded and handed to the routes.
  void dispatch();
  /// While the routes work on a request: notices a client that closes its
  /// connection (a read of end of stream or an error; data, a pipelined
  /// request, ends the watch) and cancels the request's work.
  void watchClient();
  void onClientReadable(boost::beast::error_code error);
  /// Writes `response`; closes after it unless the connection stays open.
  void write(HttpResponse response);
  void onWrite(boost::beast::error_code error);
  /// An error answer, after which the connection closes.
  void refuse(int status, const std::string &message);
  void lingeringClose();
  void close();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  std::shared_ptr<void> outgoing_; // the message being written
  HttpRoutes &routes_;
  const HttpLimits &limits_;
  ConnectionCount &count_;
  std::chrono::steady_clock::time_point received_;
  bool keepAlive_ = true;
  bool waitingForRequest_ = false; // idle between requests (closeSoon)
  bool refused_ = false;           // an error answer: close after it
  bool lingering_ = false;
  bool closed_ = false;
  bool watching_ = false;               // watchClient's wait is pending
  bool clientGone_ = false;             // the answer has no one to go to
  std::shared_ptr<CancelToken> cancel_; // the request being answered
};

} // namespace cellrun::serve

#endif // CELLRUN_TOOLS_SERVE_HTTPCONNECTION_H
