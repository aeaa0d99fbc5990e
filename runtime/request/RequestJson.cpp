//===- RequestJson.cpp - Strict JSON reading for requests -----------------===//
#include "cellrun/RequestJson.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

using namespace cellrun;
using Json = nlohmann::json;

namespace {

/// Thrown from the parser callback to refuse a text the library accepts.
class Refused : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The library's message without its "[json.exception.NAME.ID] " prefix
/// and, for parse errors, without "parse error at line L, column C: ".
std::string libraryMessage(const Json::exception &error) {
  std::string_view text = error.what();
  if (size_t end = text.find("] "); text.rfind('[', 0) == 0 && end != text.npos)
    text.remove_prefix(end + 2);
  if (text.rfind("parse error", 0) == 0)
    if (size_t colon = text.find(": "); colon != text.npos)
      text.remove_prefix(colon + 2);
  return std::string(text);
}

} // namespace

Result<Json> cellrun::parseRequestJson(std::string_view text) {
  // The member names of every object being read, innermost last.
  std::vector<std::unordered_set<std::string>> names;
  auto check = [&names](int depth, Json::parse_event_t event, Json &parsed) {
    switch (event) {
    case Json::parse_event_t::object_start:
      names.emplace_back();
      [[fallthrough]];
    case Json::parse_event_t::array_start:
    case Json::parse_event_t::value:
      if (depth > kMaxJsonDepth)
        throw Refused("nesting deeper than " + std::to_string(kMaxJsonDepth));
      break;
    case Json::parse_event_t::key: {
      const std::string &name = parsed.get_ref<const std::string &>();
      if (!names.back().insert(name).second)
        throw Refused("duplicate member \"" + name + "\"");
      break;
    }
    case Json::parse_event_t::object_end:
      names.pop_back();
      break;
    case Json::parse_event_t::array_end:
      break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), check);
  } catch (const Refused &refused) {
    return Status(StatusCode::InvalidArgument, refused.what());
  } catch (const Json::parse_error &error) {
    // `byte` counts the bytes read up to and including the one at fault.
    size_t at = error.byte > 0 ? error.byte - 1 : 0;
    return Status(StatusCode::InvalidArgument, "at byte " + std::to_string(at) +
                                                   ": " +
                                                   libraryMessage(error));
  } catch (const Json::exception &error) {
    // Such as out_of_range 406: "number overflow parsing '1e400'".
    return Status(StatusCode::InvalidArgument, libraryMessage(error));
  } catch (const std::exception &error) {
    return Status(StatusCode::InvalidArgument,
                  std::string("cannot read the JSON: ") + error.what());
  }
}

std::optional<int64_t> cellrun::jsonInteger(const Json &value) {
  if (value.is_number_unsigned()) {
    uint64_t number = value.get<uint64_t>();
    if (number <= static_cast<uint64_t>(INT64_MAX))
      return static_cast<int64_t>(number);
    return std::nullopt;
  }
  if (value.is_number_integer())
    return value.get<int64_t>();
  if (value.is_number_float()) {
    double number = value.get<double>();
    if (number == std::floor(number) && std::fabs(number) < 9.0e15)
      return static_cast<int64_t>(number);
  }
  return std::nullopt;
}

const char *cellrun::jsonKindName(const Json &value) {
  switch (value.type()) {
  case Json::value_t::null:
    return "null";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
  case Json::value_t::number_float:
    return "a number";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::object:
    return "an object";
  default:
    return "a value";
  }
}
