//===- BodyDecoding.cpp - Compressed request bodies, bounded --------------===//
#include "BodyDecoding.h"

#include <brotli/decode.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <vector>

using namespace cellrun;

namespace {

constexpr size_t kChunk = 64 * 1024;

Status tooLarge(size_t limit) {
  return Status(StatusCode::ResourceExhausted,
                "the decoded request body is larger than the server's limit "
                "of " +
                    std::to_string(limit) + " bytes (--max-body-bytes)");
}

/// Appends up to `limit` bytes in all to `out` as `produce(buffer, room)`
/// writes them, `room` at most kChunk.
template <typename Produce>
Status grow(std::string &out, size_t limit, Produce produce) {
  size_t at = out.size();
  out.resize(at + kChunk);
  size_t written = 0;
  Status status =
      produce(reinterpret_cast<uint8_t *>(&out[at]), kChunk, written);
  out.resize(at + written);
  if (status.isOk() && out.size() > limit)
    return tooLarge(limit);
  return status;
}

/// zlib's inflate over `body`: gzip (members one after another) or zlib
/// streams; raw deflate when a "deflate" body has no zlib header.
Result<std::string> inflateBody(const std::string &body, bool gzip,
                                size_t limit) {
  for (int windowBits : gzip ? std::vector<int>{16 + MAX_WBITS}
                             : std::vector<int>{MAX_WBITS, -MAX_WBITS}) {
    z_stream stream{};
    if (inflateInit2(&stream, windowBits) != Z_OK)
      return Status(StatusCode::Internal, "zlib: cannot start inflating");
    stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(body.data()));
    stream.avail_in = static_cast<uInt>(body.size());
    // Room for the limit at once: growing by doubling would take twice
    // the limit (pages not written are not taken).
    std::string out;
    out.reserve(limit + kChunk);
    int result = Z_OK;
    Status status;
    while (status.isOk() && result != Z_STREAM_END) {
      status = grow(out, limit, [&](uint8_t *to, size_t room, size_t &n) {
        stream.next_out = to;
        stream.avail_out = static_cast<uInt>(room);
        result = inflate(&stream, Z_NO_FLUSH);
        n = room - stream.avail_out;
        if (result == Z_STREAM_END && gzip && stream.avail_in > 0) {
          // Another gzip member follows.
          inflateReset(&stream);
          result = Z_OK;
        }
        if (result != Z_OK && result != Z_STREAM_END &&
            !(result == Z_BUF_ERROR && stream.avail_in > 0))
          return Status(StatusCode::InvalidArgument,
                        std::string("the ") + (gzip ? "gzip" : "deflate") +
                            " body is corrupt or cut short (zlib: " +
                            (stream.msg ? stream.msg : "no message") + ")");
        return Status::ok();
      });
    }
    inflateEnd(&stream);
    if (status.isOk())
      return out;
    bool retryRaw = !gzip && windowBits > 0 &&
                    status.code() == StatusCode::InvalidArgument && out.empty();
    if (!retryRaw)
      return status;
  }
  return Status(StatusCode::InvalidArgument, "the deflate body is corrupt");
}

Result<std::string> brotliBody(const std::string &body, size_t limit) {
  BrotliDecoderState *state =
      BrotliDecoderCreateInstance(nullptr, nullptr, nullptr);
  if (!state)
    return Status(StatusCode::Internal, "brotli: cannot start decoding");
  const uint8_t *next = reinterpret_cast<const uint8_t *>(body.data());
  size_t available = body.size();
  std::string out;
  out.reserve(limit + kChunk);
  BrotliDecoderResult result = BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT;
  Status status;
  while (status.isOk() && result == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT)
    status = grow(out, limit, [&](uint8_t *to, size_t room, size_t &n) {
      size_t left = room;
      result = BrotliDecoderDecompressStream(state, &available, &next, &left,
                                             &to, nullptr);
      n = room - left;
      if (result == BROTLI_DECODER_RESULT_ERROR ||
          result == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT)
        return Status(StatusCode::InvalidArgument,
                      "the br body is corrupt or cut short");
      return Status::ok();
    });
  BrotliDecoderDestroyInstance(state);
  if (!status.isOk())
    return status;
  return out;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

} // namespace

Result<std::string> cellrun::serve::decodeBody(std::string body,
                                               std::string_view encoding,
                                               size_t limit) {
  // The codings in the order they were applied; undone last first.
  std::vector<std::string> codings;
  size_t at = 0;
  while (at <= encoding.size()) {
    size_t comma = std::min(encoding.find(',', at), encoding.size());
    std::string_view coding = encoding.substr(at, comma - at);
    while (!coding.empty() &&
           std::isspace(static_cast<unsigned char>(coding.front())))
      coding.remove_prefix(1);
    while (!coding.empty() &&
           std::isspace(static_cast<unsigned char>(coding.back())))
      coding.remove_suffix(1);
    if (!coding.empty())
      codings.push_back(lower(coding));
    at = comma + 1;
  }
  for (auto coding = codings.rbegin(); coding != codings.rend(); ++coding) {
    Result<std::string> decoded = std::string();
    if (*coding == "identity")
      continue;
    if (*coding == "gzip" || *coding == "x-gzip")
      decoded = inflateBody(body, true, limit);
    else if (*coding == "deflate")
      decoded = inflateBody(body, false, limit);
    else if (*coding == "br")
      decoded = brotliBody(body, limit);
    else
      return Status(StatusCode::Unsupported,
                    "Content-Encoding '" + *coding +
                        "' is not supported (gzip, deflate, br, identity)");
    if (!decoded.ok())
      return decoded.status();
    body = std::move(decoded).value();
  }
  if (body.size() > limit)
    return tooLarge(limit);
  return body;
}
