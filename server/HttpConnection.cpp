//===- HttpConnection.cpp - One HTTP/1.1 connection, event-driven ---------===//
#include "HttpConnection.h"
#include "BodyDecoding.h"
#include "SessionRouting.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <array>
#include <cerrno>

#include <sys/socket.h>

using namespace cellrun;
using namespace cellrun::serve;
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

HttpConnection::HttpConnection(tcp::socket socket, HttpRoutes &routes,
                               const HttpLimits &limits, ConnectionCount &count)
    : stream_(std::move(socket)), routes_(routes), limits_(limits),
      count_(count) {
  ++count_.open;
}

HttpConnection::~HttpConnection() { --count_.open; }

void HttpConnection::start() {
  net::dispatch(stream_.get_executor(),
                [self = shared_from_this()] { self->readHeader(); });
}

void HttpConnection::closeSoon() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    self->keepAlive_ = false;
    if (self->waitingForRequest_)
      self->stream_.cancel(); // the read ends, and the connection with it
  });
}

void HttpConnection::readHeader() {
  if (!keepAlive_ || count_.stopping)
    return close();
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(limits_.maxHeaderBytes));
  parser_->body_limit(limits_.maxBodyBytes);
  waitingForRequest_ = true;
  stream_.expires_after(limits_.timeout);
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code error, size_t) {
        self->onHeader(error);
      });
}

/// The client went away, or took too long: nothing to answer.
static bool gone(const beast::error_code &error) {
  return error == http::error::end_of_stream || error == net::error::eof ||
         error == net::error::operation_aborted ||
         error == net::error::connection_reset ||
         error == net::error::broken_pipe || error == beast::error::timeout;
}

void HttpConnection::onHeader(beast::error_code error) {
  waitingForRequest_ = false;
  if (error) {
    if (gone(error))
      return close();
    if (error == http::error::header_limit)
      return refuse(431, "the request's header is larger than the server's "
                         "limit of " +
                             std::to_string(limits_.maxHeaderBytes) + " bytes");
    if (error == http::error::body_limit)
      return refuse(413, "the request body is larger than the server's "
                         "limit (--max-body-bytes)");
    return refuse(400, "malformed HTTP request: " + error.message());
  }
  const auto &request = parser_->get();
  auto lengths = request.equal_range(http::field::content_length);
  if (std::distance(lengths.first, lengths.second) > 1)
    return refuse(400, "malformed HTTP request: Content-Length is given "
                       "more than once");
  if (beast::iequals(request[http::field::expect], "100-continue")) {
    // The client waits for this before it sends the body (curl does).
    auto interim = std::make_shared<http::response<http::empty_body>>(
        http::status::continue_, request.version());
    outgoing_ = interim;
    stream_.expires_after(limits_.timeout);
    return http::async_write(
        stream_, *interim,
        [self = shared_from_this()](beast::error_code error, size_t) {
          self->outgoing_.reset();
          if (error)
            return self->close();
          self->readBody();
        });
  }
  readBody();
}

void HttpConnection::readBody() {
  stream_.expires_after(limits_.timeout);
  http::async_read(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code error, size_t) {
        self->onBody(error);
      });
}

void HttpConnection::onBody(beast::error_code error) {
  if (error == http::error::body_limit)
    return refuse(413, "the request body is larger than the server's limit "
                       "(--max-body-bytes)");
  if (error) {
    if (gone(error))
      return close();
    return refuse(400, "malformed HTTP request: " + error.message());
  }
  // Read whole: a refusal is timed from here, not from when the header came
  // (waiting for a client's body is not the server's refusing).
  received_ = std::chrono::steady_clock::now();
  dispatch();
}

void HttpConnection::dispatch() {
  http::request<http::string_body> message = parser_->release();
  parser_.reset();
  keepAlive_ = keepAlive_ && message.keep_alive() && !count_.stopping;
  HttpRequest request;
  request.method = std::string(message.method_string());
  beast::string_view target = message.target();
  request.path = std::string(target.substr(0, target.find('?')));
  if (auto length = message.find("Inference-Header-Content-Length");
      length != message.end())
    request.inferenceHeaderLength = std::string(length->value());
  if (auto session = message.find(kSequenceIdHeader); session != message.end())
    request.sequenceIdHeader = std::string(session->value());
  request.received = received_;
  request.cancel = cancel_ = std::make_shared<CancelToken>();
  request.onConnection = [self =
                              shared_from_this()](std::function<void()> work) {
    net::post(self->stream_.get_executor(), std::move(work));
  };
  beast::string_view encoding = message[http::field::content_encoding];
  if (encoding.empty()) {
    request.body = std::move(message.body());
  } else {
    auto decoded =
        decodeBody(std::move(message.body()),
                   std::string_view(encoding.data(), encoding.size()),
                   limits_.maxBodyBytes);
    if (!decoded.ok()) {
      StatusCode code = decoded.status().code();
      return refuse(code == StatusCode::ResourceExhausted ? 413
                    : code == StatusCode::Unsupported     ? 415
                                                          : 400,
                    decoded.status().message());
    }
    request.body = std::move(decoded).value();
  }
  routes_.handle(std::move(request),
                 [self = shared_from_this()](HttpResponse response) {
                   // Answers may come from the engine's thread.
                   net::post(self->stream_.get_executor(),
                             [self, response = std::move(response)]() mutable {
                               self->write(std::move(response));
                             });
                 });
  watchClient();
}

void HttpConnection::watchClient() {
  // Nothing else waits on the socket until the answer is written.
  stream_.expires_never();
  watching_ = true;
  stream_.socket().async_wait(
      tcp::socket::wait_read,
      [self = shared_from_this()](beast::error_code error) {
        self->onClientReadable(error);
      });
}

void HttpConnection::onClientReadable(beast::error_code error) {
  if (error == net::error::operation_aborted || !watching_)
    return; // the answer came first
  watching_ = false;
  if (!error) {
    // A look that never blocks (a wait may end without data to read).
    char byte;
    ssize_t peeked = ::recv(stream_.socket().native_handle(), &byte, 1,
                            MSG_PEEK | MSG_DONTWAIT);
    if (peeked > 0)
      return; // a pipelined request: read once this one is answered
    if (peeked < 0 &&
        (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      return watchClient();
  }
  // End of stream or a reset: no one will read the answer.
  clientGone_ = true;
  routes_.cancel(cancel_);
}

void HttpConnection::write(HttpResponse response) {
  if (watching_) {
    watching_ = false;
    beast::error_code ignored;
    stream_.socket().cancel(ignored); // ends the watch's wait
  }
  cancel_.reset();
  if (clientGone_)
    return close();
  auto message = std::make_shared<http::response<http::string_body>>();
  message->version(11);
  message->result(static_cast<unsigned>(response.status));
  message->set(http::field::content_type, response.contentType);
  for (const auto &[name, value] : response.headers)
    message->set(name, value);
  message->body() = std::move(response.body);
  message->keep_alive(keepAlive_ && !count_.stopping);
  message->prepare_payload();
  outgoing_ = message;
  stream_.expires_after(limits_.timeout);
  http::async_write(
      stream_, *message,
      [self = shared_from_this()](beast::error_code error, size_t) {
        self->onWrite(error);
      });
}

void HttpConnection::onWrite(beast::error_code error) {
  outgoing_.reset();
  if (error)
    return close();
  if (refused_)
    return lingeringClose();
  if (!keepAlive_ || count_.stopping)
    return close();
  readHeader(); // a pipelined request may be in the buffer already
}

void HttpConnection::refuse(int status, const std::string &message) {
  keepAlive_ = false;
  refused_ = true;
  write(errorResponse(status, message));
}

void HttpConnection::lingeringClose() {
  // The client may still be sending what we did not read (a body past the
  // limit): closing now would reset the connection and could lose the
  // answer on its side. Stop sending, read and drop until it closes, for
  // a second at most.
  if (!lingering_) {
    lingering_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(1)); // for all of it
  }
  auto drain = std::make_shared<std::array<char, 16384>>();
  stream_.async_read_some(
      net::buffer(*drain),
      [self = shared_from_this(), drain](beast::error_code error, size_t) {
        if (error)
          return self->close();
        self->lingeringClose();
      });
}

void HttpConnection::close() {
  if (closed_)
    return;
  closed_ = true;
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
}
