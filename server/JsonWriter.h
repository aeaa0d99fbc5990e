//===- JsonWriter.h - Appends JSON text to a string, fast -------*- C++ -*-===//
//
// Writes an inference reply's JSON straight into its body: a reply of
// thousands of floats spends most of its encoding time in building and
// dumping a JSON tree otherwise. Floats are written with std::to_chars,
// the shortest text that reads back as the same float (never a double's
// 17 digits); a number that is not finite is written as null, as
// nlohmann::json does; strings are escaped as JSON requires, and invalid
// UTF-8 is replaced with U+FFFD.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TOOLS_SERVE_JSONWRITER_H
#define CELLRUN_TOOLS_SERVE_JSONWRITER_H

#include <cstdint>
#include <string>
#include <string_view>

namespace cellrun::serve {

class JsonWriter {
public:
  explicit JsonWriter(std::string &out) : out_(out) {}

  void beginObject() { open('{'); }
  void endObject() { close('}'); }
  void beginArray() { open('['); }
  void endArray() { close(']'); }
  /// An object's key; its value comes next.
  void key(std::string_view name);
  void string(std::string_view text);
  void number(float value);
  void number(int64_t value);
  void number(uint64_t value);
  /// Arrays of numbers, written in one go.
  void numbers(const float *values, size_t count);
  void numbers(const int64_t *values, size_t count);

private:
  void open(char bracket);
  void close(char bracket);
  /// A comma before every value but an object's or array's first.
  void separate();
  /// A value's text, with no separator.
  void appendNumber(float value);
  void appendNumber(int64_t value);
  void appendNumber(uint64_t value);
  /// `count` values as an array; `widest` characters each at most.
  template <typename T>
  void appendArray(const T *values, size_t count, size_t widest);

  std::string &out_;
  bool first_ = true;     // nothing yet in the open object or array
  bool afterKey_ = false; // the value of a key comes next
};

} // namespace cellrun::serve

#endif // CELLRUN_TOOLS_SERVE_JSONWRITER_H
