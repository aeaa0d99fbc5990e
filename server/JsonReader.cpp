//===- JsonReader.cpp - Reads request JSON fast, as strictly --------------===//
#include "JsonReader.h"

#include <simdjson.h>

#include <cstdint>
#include <exception>
#include <string>

using namespace cellrun;
using Json = nlohmann::json;
using simdjson::dom::element_type;

namespace {

/// Documents larger than this do not keep their parser's buffers (about 15
/// bytes a byte of text).
constexpr size_t kKeptParserBytes = size_t(64) << 10;

/// Whether `text` may hold the integer -0 (in a string or not): nlohmann
/// keeps it signed, while simdjson gives the same 0 as for "0".
bool mayHoldMinusZero(std::string_view text) {
  for (size_t at = text.find("-0"); at != text.npos;
       at = text.find("-0", at + 2)) {
    char next = at + 2 < text.size() ? text[at + 2] : ' ';
    if (next != '.' && next != 'e' && next != 'E')
      return true;
  }
  return false;
}

/// `element` as nlohmann::json into `out`; false where the runtime's reading
/// must decide: a duplicate member, or nesting near its limit (the runtime
/// counts depth its own way; requests never come near it). `sawZero` is set
/// at an integer 0.
bool convert(simdjson::dom::element element, int depth, Json &out,
             bool &sawZero) {
  if (depth >= kMaxJsonDepth - 2)
    return false;
  switch (element.type()) {
  case element_type::ARRAY: {
    simdjson::dom::array array = element.get_array().value_unsafe();
    out = Json::array();
    auto &values = out.get_ref<Json::array_t &>();
    values.reserve(array.size()); // saturates at 2^24 - 1: a hint only
    for (simdjson::dom::element child : array)
      if (!convert(child, depth + 1, values.emplace_back(), sawZero))
        return false;
    return true;
  }
  case element_type::OBJECT: {
    out = Json::object();
    auto &members = out.get_ref<Json::object_t &>();
    simdjson::dom::object object = element.get_object().value_unsafe();
    for (simdjson::dom::key_value_pair field : object) {
      auto [at, inserted] = members.try_emplace(std::string(field.key));
      if (!inserted || !convert(field.value, depth + 1, at->second, sawZero))
        return false;
    }
    return true;
  }
  case element_type::INT64: {
    // nlohmann keeps a non-negative integer unsigned (but -0 signed).
    int64_t value = element.get_int64().value_unsafe();
    sawZero |= value == 0;
    if (value >= 0)
      out = static_cast<uint64_t>(value);
    else
      out = value;
    return true;
  }
  case element_type::UINT64:
    out = element.get_uint64().value_unsafe();
    return true;
  case element_type::DOUBLE:
    out = element.get_double().value_unsafe();
    return true;
  case element_type::STRING:
    out = std::string(element.get_string().value_unsafe());
    return true;
  case element_type::BOOL:
    out = element.get_bool().value_unsafe();
    return true;
  case element_type::NULL_VALUE:
    out = nullptr;
    return true;
  }
  return false;
}

} // namespace

Result<Json> serve::readRequestJsonFast(std::string_view text) {
  // An empty view may have no data at all: simdjson would memcpy from null.
  if (text.empty())
    return parseRequestJson(text);
  thread_local simdjson::dom::parser parser;
  Json json;
  bool converted = false;
  try {
    simdjson::dom::element root;
    bool sawZero = false;
    // Copied into the parser's padded buffer (realloc_if_needed).
    converted = parser.parse(text.data(), text.size(), true).get(root) ==
                    simdjson::SUCCESS &&
                convert(root, 0, json, sawZero) &&
                !(sawZero && mayHoldMinusZero(text));
  } catch (const std::exception &) {
    converted = false; // out of memory, say: the runtime's reader reports it
  }
  if (text.size() > kKeptParserBytes)
    parser = simdjson::dom::parser();
  if (converted)
    return json;
  // Refused, or for the runtime to decide: its reading, and its message.
  return parseRequestJson(text);
}
