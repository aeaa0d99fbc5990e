//===- RequestParserFuzzer.cpp - Requests (JSON lines) of every structure -===//
//
// The bytes as a `cellrun run`/HTTP request line, parsed against a chain,
// a seq2seq and a tree model: every input must give a request or an error,
// never a crash, a hang or a leak. scripts/fuzz.sh runs it under libFuzzer;
// the test suite replays the corpus (fuzz.replay.request_parser).
//
//===----------------------------------------------------------------------===//
#include "FuzzTargets.h"

#include "cellrun/RequestParser.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const auto parsers = [] {
    std::vector<std::unique_ptr<cellrun::RequestParser>> made;
    for (const auto &artifact : cellfuzz::exampleArtifacts()) {
      auto parser = cellrun::RequestParser::create(artifact);
      if (!parser.ok())
        std::abort(); // the examples always give a parser
      made.push_back(std::move(parser).value());
    }
    return made;
  }();
  std::string_view text(reinterpret_cast<const char *>(data), size);
  for (const auto &parser : parsers) {
    auto request = parser->parse(text, "fuzz");
    // A request that parsed is well formed: its id is never empty.
    if (request.ok() && request.value().id.empty())
      std::abort();
  }
  return 0;
}
