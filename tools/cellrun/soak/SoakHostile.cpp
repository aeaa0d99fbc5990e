//===- SoakHostile.cpp - Hostile traffic beside a soak's load ------------===//
//
// Raw sockets, so that the bytes on the wire are exactly the hostile ones:
// partial headers, trickled bodies, several requests in one write, and
// compressed bodies (zlib's gzip).
//
//===----------------------------------------------------------------------===//
#include "SoakHostile.h"
#include "SoakClient.h"

#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

using namespace cellrun::soak;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Reply {
  int status = 0;
  std::string body;
};

/// Reads one reply from `fd` (bytes past it stay in `pending` for the
/// next); false when the connection closed or timed out first.
bool readReply(int fd, std::string &pending, Reply &reply) {
  auto fill = [&]() {
    char chunk[16384];
    ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
    if (got <= 0)
      return false;
    pending.append(chunk, static_cast<size_t>(got));
    return true;
  };
  size_t headEnd;
  while ((headEnd = pending.find("\r\n\r\n")) == std::string::npos)
    if (!fill())
      return false;
  std::string head = pending.substr(0, headEnd);
  if (head.rfind("HTTP/1.1 ", 0) != 0)
    return false;
  reply.status = std::atoi(head.c_str() + 9);
  size_t length = 0;
  for (char &c : head)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (size_t at = head.find("\r\ncontent-length:"); at != std::string::npos)
    length = std::strtoull(head.c_str() + at + 17, nullptr, 10);
  size_t end = headEnd + 4 + length;
  while (pending.size() < end)
    if (!fill())
      return false;
  reply.body = pending.substr(headEnd + 4, length);
  pending.erase(0, end);
  return true;
}

/// `text` as one gzip member.
std::string gzip(const std::string &text) {
  z_stream stream{};
  deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 9,
               Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, text.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef *>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

/// Records the outcome of a request that must be answered with `expected`
/// (or, where that is null, refused with 413).
void recordAnswer(Outcomes &outcomes, double timeoutSeconds,
                  const std::string &kind, bool answered, const Reply &reply,
                  Clock::time_point start, const nlohmann::json *expected,
                  const std::string &where) {
  std::string detail = where + ": " + std::to_string(reply.status) + " " +
                       reply.body.substr(0, 200);
  if (!answered) {
    bool late = secondsSince(start) >= timeoutSeconds - 0.5;
    outcomes.record(kind, late ? Outcome::Lost : Outcome::Failed, -1,
                    where + ": no reply");
  } else if (reply.status == 429) {
    outcomes.record(kind, Outcome::Overloaded, secondsSince(start) * 1e3);
  } else if (!expected) {
    outcomes.record(kind,
                    reply.status == 413 ? Outcome::RefusedAsExpected
                                        : Outcome::RefusedOtherwise,
                    -1, detail + " (expected 413)");
  } else if (reply.status != 200) {
    outcomes.record(kind, Outcome::Failed, -1, detail);
  } else {
    outcomes.record(kind,
                    outputsOf(reply.body) == *expected ? Outcome::Correct
                                                       : Outcome::Wrong,
                    -1, detail);
  }
}

/// A slow client: a request's headers a line a second, or its body a byte
/// a second after complete headers.
struct SlowClient {
  int fd = -1;
  bool body = false;
  size_t model = 0, sent = 0;
  std::string payload; // what is trickled
  Clock::time_point opened, nextByte;
};

} // namespace

const std::vector<std::string> &cellrun::soak::hostileKinds() {
  static const std::vector<std::string> kinds = {
      "hostile:slow-headers", "hostile:slow-body", "hostile:pipelined",
      "hostile:gzip-bomb", "hostile:gzip"};
  return kinds;
}

HostileStage::HostileStage(const std::vector<SoakModel> &models,
                           Outcomes &outcomes, HostileOptions options)
    : models_(models), outcomes_(outcomes), options_(options) {
  // Whitespace after the JSON value keeps the body valid JSON: only its
  // inflated size is wrong.
  for (const SoakModel &model : models_)
    bombs_.push_back(
        gzip(model.bodies[0] + std::string(8 * options_.maxBodyBytes, ' ')));
}

HostileStage::~HostileStage() { stop(); }

void HostileStage::start() {
  running_ = true;
  threads_.emplace_back([this] { slowClients(); });
  threads_.emplace_back([this] { pipelines(); });
  threads_.emplace_back([this] { compressed(); });
}

void HostileStage::stop() {
  running_ = false;
  for (std::thread &thread : threads_)
    thread.join();
  threads_.clear();
}

void HostileStage::slowClients() {
  std::vector<SlowClient> open;
  size_t next = 0;
  double limit = options_.httpTimeout + 15;
  auto finish = [&](SlowClient &client, Outcome outcome,
                    const std::string &detail) {
    double seconds = secondsSince(client.opened);
    if (outcome == Outcome::RefusedAsExpected && seconds > slowestClose_)
      slowestClose_ = seconds;
    outcomes_.record(client.body ? "hostile:slow-body" : "hostile:slow-headers",
                     outcome, -1,
                     models_[client.model].label + ": " + detail + " after " +
                         std::to_string(seconds) + " s");
    ::close(client.fd);
    client.fd = -1;
  };
  while (running_) {
    while (open.size() < options_.slowClients) {
      SlowClient client;
      client.model = next % models_.size();
      client.body = next++ % 2 == 1;
      client.fd = connectTo(models_[client.model].httpPort, 5);
      if (client.fd < 0)
        break;
      const SoakModel &model = models_[client.model];
      std::string first;
      if (client.body) {
        client.payload = model.bodies[0];
        first = requestHead(model.inferPath(), client.payload.size());
      } else {
        first = "POST " + model.inferPath() + " HTTP/1.1\r\n";
        for (int line = 0; line < 600; ++line)
          client.payload += "X-Slow-" + std::to_string(line) + ": 1\r\n";
      }
      client.opened = client.nextByte = Clock::now();
      sendAll(client.fd, first);
      open.push_back(std::move(client));
    }
    for (SlowClient &client : open) {
      char byte;
      ssize_t got = ::recv(client.fd, &byte, 1, MSG_DONTWAIT);
      bool closed =
          got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
      if (got > 0 || closed) {
        // Closed, or answered (408/400) and then closed: what it must do.
        finish(client, Outcome::RefusedAsExpected, "closed by the server");
        continue;
      }
      if (secondsSince(client.opened) > limit) {
        finish(client, Outcome::Failed, "still open");
        continue;
      }
      if (Clock::now() >= client.nextByte &&
          client.sent < client.payload.size()) {
        size_t take = client.body ? 1
                                  : client.payload.find('\n', client.sent) + 1 -
                                        client.sent;
        if (!sendAll(client.fd, client.payload.substr(client.sent, take))) {
          finish(client, Outcome::RefusedAsExpected, "closed by the server");
          continue;
        }
        client.sent += take;
        client.nextByte += std::chrono::seconds(1);
      }
    }
    open.erase(std::remove_if(open.begin(), open.end(),
                              [](const SlowClient &c) { return c.fd < 0; }),
               open.end());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (SlowClient &client : open)
    ::close(client.fd);
}

void HostileStage::pipelines() {
  std::mt19937_64 random(91);
  for (size_t round = 0; running_; ++round) {
    const SoakModel &model = models_[round % models_.size()];
    size_t indices[3];
    std::string wire;
    for (size_t &index : indices) {
      index = random() % model.bodies.size();
      wire += requestHead(model.inferPath(), model.bodies[index].size()) +
              model.bodies[index];
    }
    Clock::time_point start = Clock::now();
    int fd = connectTo(model.httpPort, options_.requestTimeout);
    bool written = fd >= 0 && sendAll(fd, wire);
    std::string pending;
    for (size_t r = 0; r < 3; ++r) {
      Reply reply;
      std::string where = model.label + " pipelined request " +
                          std::to_string(r) + " (body " +
                          std::to_string(indices[r]) + ")";
      bool answered = written && readReply(fd, pending, reply);
      recordAnswer(outcomes_, options_.requestTimeout, "hostile:pipelined",
                   answered, reply, start, &model.expected[indices[r]], where);
    }
    if (fd >= 0)
      ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void HostileStage::compressed() {
  std::mt19937_64 random(93);
  for (size_t round = 0; running_; ++round) {
    size_t m = round % models_.size();
    const SoakModel &model = models_[m];
    bool bomb = round % 2 == 0;
    size_t index = random() % model.bodies.size();
    std::string body = bomb ? bombs_[m] : gzip(model.bodies[index]);
    std::string kind = bomb ? "hostile:gzip-bomb" : "hostile:gzip";
    std::string where = model.label + (bomb ? " gzip bomb" : " gzip body ") +
                        (bomb ? "" : std::to_string(index));
    Clock::time_point start = Clock::now();
    int fd = connectTo(model.httpPort, options_.requestTimeout);
    std::string pending;
    Reply reply;
    bool answered = fd >= 0 &&
                    sendAll(fd, requestHead(model.inferPath(), body.size(),
                                            "Content-Encoding: gzip\r\n") +
                                    body) &&
                    readReply(fd, pending, reply);
    if (fd >= 0)
      ::close(fd);
    recordAnswer(outcomes_, options_.requestTimeout, kind, answered, reply,
                 start, bomb ? nullptr : &model.expected[index], where);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}
