//===- SoakClient.cpp - Sending each kind of soak request -----------------===//
#include "SoakClient.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

using namespace cellrun::soak;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

double millisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

/// The outcome of a request whose answer must be 200 with `expected`.
Outcome judgeValid(const httplib::Result &reply, const json &expected,
                   double ms, double timeoutMs, std::string &detail) {
  if (!reply) {
    detail = httplib::to_string(reply.error()) + " after " +
             std::to_string(ms) + " ms";
    return ms >= timeoutMs - 500 ? Outcome::Lost : Outcome::Failed;
  }
  // 429 is load; a 503 means a worker or the server stopped, which
  // nothing in a soak should cause.
  if (reply->status == 429)
    return Outcome::Overloaded;
  if (reply->status != 200) {
    detail = std::to_string(reply->status) + " " + reply->body.substr(0, 300);
    return Outcome::Failed;
  }
  if (outputsOf(reply->body) != expected) {
    detail = "outputs differ from the request's answer alone: " +
             reply->body.substr(0, 300);
    return Outcome::Wrong;
  }
  return Outcome::Correct;
}

} // namespace

Sender::Sender(const SoakModel &model, int timeoutSeconds)
    : client("127.0.0.1", model.httpPort), timeoutMs(timeoutSeconds * 1e3) {
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true); // headers and body are two writes
  client.set_connection_timeout(timeoutSeconds, 0);
  client.set_read_timeout(timeoutSeconds, 0);
  client.set_write_timeout(timeoutSeconds, 0);
}

bool cellrun::soak::sendValid(Sender &sender, const SoakModel &model,
                              size_t index, const std::string &kind,
                              Outcomes &outcomes) {
  Clock::time_point start = Clock::now();
  auto reply = sender.client.Post(model.inferPath(), model.bodies[index],
                                  "application/json");
  double ms = millisSince(start);
  std::string detail;
  Outcome outcome =
      judgeValid(reply, model.expected[index], ms, sender.timeoutMs, detail);
  outcomes.record(kind, outcome, outcome == Outcome::Overloaded ? ms : -1,
                  model.label + " request " + std::to_string(index) + ": " +
                      detail);
  return outcome == Outcome::Correct;
}

void cellrun::soak::sendSession(Sender &sender, const SoakModel &model,
                                size_t index, uint64_t sequence, bool abandoned,
                                Outcomes &outcomes) {
  const SessionTemplate &session = model.sessions[index];
  size_t count = abandoned ? 1 : session.chunks.size();
  for (size_t c = 0; c < count; ++c) {
    std::string body = sessionChunkBody(session.chunks[c], sequence, c,
                                        session.chunks.size(), abandoned);
    Clock::time_point start = Clock::now();
    // The session's id where a proxy sees it too (docs/deploy.md).
    auto reply = sender.client.Post(model.inferPath(), sessionHeaders(sequence),
                                    body, "application/json");
    double ms = millisSince(start);
    std::string detail;
    Outcome outcome =
        judgeValid(reply, session.expected[c], ms, sender.timeoutMs, detail);
    outcomes.record(abandoned ? "session-abandoned" : "session", outcome,
                    outcome == Outcome::Overloaded ? ms : -1,
                    model.label + " session " + std::to_string(index) +
                        " chunk " + std::to_string(c) + ": " + detail);
    // A chunk refused for load leaves the session where it was: the rest
    // is not sent, and the session times out like an abandoned one.
    if (outcome != Outcome::Correct)
      return;
  }
  if (abandoned)
    outcomes.countAbandonedSession();
}

void cellrun::soak::sendInvalid(Sender &sender, const SoakModel &model,
                                size_t index, Outcomes &outcomes) {
  const InvalidRequest &request = model.invalid[index];
  Clock::time_point start = Clock::now();
  auto reply =
      sender.client.Post(request.path, request.body, "application/json");
  double ms = millisSince(start);
  std::string kind = "invalid:" + request.kind;
  if (!reply) {
    outcomes.record(
        kind, ms >= sender.timeoutMs - 500 ? Outcome::Lost : Outcome::Failed,
        -1, model.label + ": " + httplib::to_string(reply.error()));
    return;
  }
  if (reply->status == 429) {
    outcomes.record(kind, Outcome::Overloaded, ms);
    return;
  }
  json answer = json::parse(reply->body, nullptr, false);
  bool explained = answer.is_object() && answer.contains("error") &&
                   answer["error"].is_string() &&
                   !answer["error"].get<std::string>().empty();
  bool expected = reply->status == request.status && explained;
  outcomes.record(
      kind, expected ? Outcome::RefusedAsExpected : Outcome::RefusedOtherwise,
      -1,
      model.label + ": expected " + std::to_string(request.status) +
          " with an error, got " + std::to_string(reply->status) + " " +
          reply->body.substr(0, 200));
}

int cellrun::soak::connectTo(int port, double timeoutSeconds) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  timeval timeout{};
  timeout.tv_sec = static_cast<time_t>(timeoutSeconds);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool cellrun::soak::sendAll(int fd, const std::string &bytes) {
  size_t at = 0;
  while (at < bytes.size()) {
    ssize_t wrote =
        ::send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (wrote <= 0)
      return false;
    at += static_cast<size_t>(wrote);
  }
  return true;
}

std::string cellrun::soak::requestHead(const std::string &path, size_t length,
                                       const std::string &extra) {
  return "POST " + path +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         extra + "Content-Length: " + std::to_string(length) + "\r\n\r\n";
}

void cellrun::soak::sendDisconnect(const SoakModel &model, size_t index,
                                   int variant, Outcomes &outcomes) {
  int fd = connectTo(model.httpPort, 5);
  if (fd >= 0) {
    const std::string &body = model.bodies[index];
    std::string head = requestHead(model.inferPath(), body.size());
    sendAll(fd, variant == 0   ? head + body.substr(0, body.size() / 2)
                : variant == 1 ? head + body
                               : std::string());
    ::close(fd);
  }
  outcomes.countDisconnect();
}
