//===- JsonReader.h - Reads request JSON fast, as strictly ----*- C++ -*-===//
//
// The runtime reads requests with nlohmann-json (parseRequestJson): about
// 200 ns a number, most of it the library's lexer and the C library's
// strtod, so a request of 24 steps of 1024 features takes 5 ms to read.
// readRequestJsonFast parses with simdjson (Debian's libsimdjson) and builds
// the same nlohmann::json: the same values, the same number kinds (a
// non-negative integer unsigned, a negative one signed, anything with a
// fraction or exponent a double). Whatever simdjson refuses, and whatever
// the runtime's reading refuses beyond the grammar (a duplicate member,
// nesting deeper than kMaxJsonDepth), is read again by parseRequestJson, so
// every error is the runtime's, with its message and byte offset. So is
// a text that may hold the integer -0 (signed in nlohmann, not told apart
// from 0 by simdjson). While a document is converted, simdjson's reading of
// it and the tree are both held; a thread keeps its parser's buffers for
// documents up to 64 KB.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SERVE_JSONREADER_H
#define CELLRUN_TOOLS_SERVE_JSONREADER_H

#include "cellrun/RequestJson.h"

#include <string_view>

namespace cellrun::serve {

/// parseRequestJson(text), faster (see above). Thread-safe.
Result<nlohmann::json> readRequestJsonFast(std::string_view text);

} // namespace cellrun::serve

#endif // CELLRUN_TOOLS_SERVE_JSONREADER_H
