//===- SoakClient.h - Sending each kind of soak request ---------*- C++ -*-===//
//
// One request of each kind, sent on a keep-alive HTTP client (or a raw
// socket for the clients that disconnect), its answer checked and recorded
// in Outcomes: valid requests against their reference outputs, session
// chunks against the chunks' references, invalid ones against the status
// their class must get.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SOAK_SOAKCLIENT_H
#define CELLRUN_TOOLS_SOAK_SOAKCLIENT_H

#include "SoakOutcomes.h"
#include "SoakTraffic.h"

#include <httplib.h>

namespace cellrun::soak {

/// A session chunk's x-sequence-id header, sent beside the sequence_id
/// parameter as a client behind a proxy would (docs/deploy.md).
inline httplib::Headers sessionHeaders(uint64_t sequence) {
  return {{"x-sequence-id", std::to_string(sequence)}};
}

/// A keep-alive client for one model's server; `timeoutMs` without an
/// answer makes a request lost.
struct Sender {
  Sender(const SoakModel &model, int timeoutSeconds);
  httplib::Client client;
  double timeoutMs;
};

/// Sends valid body `index` as `kind`; true when it was answered correctly.
bool sendValid(Sender &sender, const SoakModel &model, size_t index,
               const std::string &kind, Outcomes &outcomes);
/// Sends session template `index` chunk by chunk under `sequence`
/// (abandoned: only its first chunk, never ended); stops at the first chunk
/// not answered correctly.
void sendSession(Sender &sender, const SoakModel &model, size_t index,
                 uint64_t sequence, bool abandoned, Outcomes &outcomes);
void sendInvalid(Sender &sender, const SoakModel &model, size_t index,
                 Outcomes &outcomes);
/// A loopback connection to `port` with send and receive timeouts (and
/// TCP_NODELAY); -1 when it could not connect.
int connectTo(int port, double timeoutSeconds);
/// Writes all of `bytes`; false when the connection broke.
bool sendAll(int fd, const std::string &bytes);

/// The header of a JSON POST to `path` with a body of `length` bytes;
/// `extra` is more header lines ("Name: value\r\n").
std::string requestHead(const std::string &path, size_t length,
                        const std::string &extra = "");

/// A client that goes away: `variant` 0 sends headers and half a body, 1 a
/// whole request without reading the answer, 2 nothing at all.
void sendDisconnect(const SoakModel &model, size_t index, int variant,
                    Outcomes &outcomes);

} // namespace cellrun::soak

#endif // CELLRUN_TOOLS_SOAK_SOAKCLIENT_H
