//===- JsonReaderFuzzer.cpp - simdjson's reading against the runtime's ----===//
//
// The bytes as request text, read by the server's fast reader
// (serve::readRequestJsonFast) and by the runtime's (parseRequestJson): both
// must accept or refuse it alike, with the same message when refused and
// the same tree when accepted (its dump, and the kind of every value:
// signed, unsigned or float). scripts/fuzz.sh runs it under libFuzzer; the test
// suite replays its corpus.
//
//===----------------------------------------------------------------------===//
#include "JsonReader.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

/// The kind of every value, in document order (a dump prints 5u and 5 alike).
static void appendKinds(const nlohmann::json &value, std::string &kinds) {
  kinds += static_cast<char>('a' + static_cast<int>(value.type()));
  if (value.is_structured())
    for (const nlohmann::json &child : value)
      appendKinds(child, kinds);
}

static std::string kindsOf(const nlohmann::json &value) {
  std::string kinds;
  appendKinds(value, kinds);
  return kinds;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto fast = cellrun::serve::readRequestJsonFast(text);
  auto slow = cellrun::parseRequestJson(text);
  bool same = fast.ok() == slow.ok();
  if (same && !slow.ok())
    same = fast.status().message() == slow.status().message();
  if (same && slow.ok())
    same = fast.value().dump() == slow.value().dump() &&
           kindsOf(fast.value()) == kindsOf(slow.value());
  if (!same) {
    std::fprintf(stderr, "json_reader: the readings differ: %s / %s\n",
                 fast.ok() ? fast.value().dump().c_str()
                           : fast.status().message().c_str(),
                 slow.ok() ? slow.value().dump().c_str()
                           : slow.status().message().c_str());
    std::abort();
  }
  return 0;
}
