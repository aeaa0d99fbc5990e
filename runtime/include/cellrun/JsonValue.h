//===- JsonValue.h - A small JSON reader for requests -----------*- C++ -*-===//
//
// Parses one JSON text (RFC 8259) into a tree of JsonValue: null, bool,
// number (kept as double and, when integral, as int64), string, array,
// object (members in file order; a duplicate key is an error). Errors give
// the byte offset and what was expected. Depth is limited so hostile input
// cannot exhaust the stack.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_JSONVALUE_H
#define CELLRUN_JSONVALUE_H

#include "cellrun/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cellrun {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }
  /// A number with no fraction that fits in int64.
  bool isInteger() const { return kind_ == Kind::Number && integral_; }

  bool boolean() const { return boolean_; }
  double number() const { return number_; }
  int64_t integer() const { return integer_; }
  const std::string &string() const { return string_; }
  const std::vector<JsonValue> &items() const { return items_; }
  const std::vector<std::pair<std::string, JsonValue>> &members() const {
    return members_;
  }
  /// The member called `key`, or null when there is none.
  const JsonValue *find(std::string_view key) const;

  /// "null", "a boolean", "a number", "a string", "an array", "an object".
  static const char *kindName(Kind kind);

private:
  friend class JsonParser;
  Kind kind_ = Kind::Null;
  bool boolean_ = false;
  bool integral_ = false;
  double number_ = 0;
  int64_t integer_ = 0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

/// Parses `text`; InvalidArgument "at byte N: expected ..." on error.
Result<JsonValue> parseJson(std::string_view text);

} // namespace cellrun

#endif // CELLRUN_JSONVALUE_H
