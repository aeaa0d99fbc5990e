//===- RequestJson.h - Strict JSON reading for requests ---------*- C++ -*-===//
//
// Requests are read with nlohmann-json, made stricter where a request must
// not be ambiguous or hostile: a duplicate member name is an error (the
// library would keep the last one), nesting is limited so that deep input
// cannot exhaust memory or the stack. Nothing here throws. Integers follow one
// rule everywhere (jsonInteger), so the token 3 and the token 3.0 are the same.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_REQUESTJSON_H
#define CELLRUN_REQUESTJSON_H

#include "cellrun/Status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace cellrun {

/// Values nested deeper than this (the whole text is at depth 0) are
/// refused.
constexpr int kMaxJsonDepth = 256;

/// Parses `text`. InvalidArgument on error: "at byte N: ..." for a syntax
/// error (N the offset of the byte at fault, invalid UTF-8 included),
/// "duplicate member \"K\"", "nesting deeper than 256", or the library's
/// message ("number overflow parsing '1e400'").
Result<nlohmann::json> parseRequestJson(std::string_view text);

/// The integer `value` holds: an integer that fits int64, or a number with
/// no fraction below 9e15 in magnitude (exactly representable); none for
/// anything else.
std::optional<int64_t> jsonInteger(const nlohmann::json &value);

/// "null", "a boolean", "a number", "a string", "an array", "an object".
const char *jsonKindName(const nlohmann::json &value);

} // namespace cellrun

#endif // CELLRUN_REQUESTJSON_H
