//===- BodyDecodingFuzzer.cpp - Compressed request bodies -----------------===//
//
// The bytes as a request body under a Content-Encoding picked by the first
// byte (gzip, deflate, br, a list of two, or an unknown one), decoded with a
// 1 MB limit the way the HTTP front end does: every input must decode
// within the limit or give an error, never crash or go past the limit.
// scripts/fuzz.sh runs it under libFuzzer; the test suite replays its
// corpus.
//
//===----------------------------------------------------------------------===//
#include "BodyDecoding.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  static const char *const kEncodings[] = {
      "gzip", "deflate", "br", "x-gzip, identity", "gzip, gzip", "compress"};
  const char *encoding = kEncodings[data[0] % 6];
  constexpr size_t kLimit = 1 << 20;
  std::string body(reinterpret_cast<const char *>(data) + 1, size - 1);
  auto decoded = cellrun::serve::decodeBody(std::move(body), encoding, kLimit);
  if (decoded.ok() && decoded.value().size() > kLimit)
    std::abort(); // past the limit
  return 0;
}
