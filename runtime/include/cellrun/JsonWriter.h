//===- JsonWriter.h - A small streaming JSON writer -------------*- C++ -*-===//
//
// Writes JSON with a fixed layout: objects and arrays of objects one member
// a line, indented by two spaces a level; arrays opened with
// beginInlineArray (shapes, names) on one line. Keys appear in the order
// they are written, so the output is stable. Strings are escaped per RFC
// 8259 (", \, control characters; other bytes pass through unchanged).
// Misuse (a value where a key is due) is a bug and is not diagnosed.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_JSONWRITER_H
#define CELLRUN_JSONWRITER_H

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace cellrun {

/// `text` as a JSON string literal, quotes included.
std::string jsonQuote(std::string_view text);

class JsonWriter {
public:
  explicit JsonWriter(std::ostream &out) : out_(out) {}

  void beginObject();
  void endObject();
  void beginArray();
  /// An array written on one line: `[1, 2, 3]`. Only scalars inside.
  void beginInlineArray();
  void endArray();

  /// The key of the next member of the current object.
  void key(std::string_view name);

  void value(std::string_view text);
  void value(const char *text) { value(std::string_view(text)); }
  void value(const std::string &text) { value(std::string_view(text)); }
  void value(bool flag);
  /// Shortest text that reads back as the same double; null when not finite
  /// (JSON has no NaN or infinity).
  void value(double number);
  /// The shortest text that reads back as the same float.
  void value(float number);
  template <typename T>
  std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>
  value(T number) {
    if constexpr (std::is_signed_v<T>)
      writeInteger(std::to_string(static_cast<long long>(number)));
    else
      writeInteger(std::to_string(static_cast<unsigned long long>(number)));
  }
  void null();

  /// key(name) followed by value(v).
  template <typename T> void member(std::string_view name, const T &v) {
    key(name);
    value(v);
  }

  /// Ends the document with a newline.
  void finish();

private:
  struct Frame {
    bool inlineArray;
    int members;
  };

  void writeInteger(const std::string &digits);
  /// The separator and indentation before a value or key.
  void beforeItem();
  void writeRaw(std::string_view text);

  std::ostream &out_;
  std::vector<Frame> frames_;
  bool afterKey_ = false;
};

} // namespace cellrun

#endif // CELLRUN_JSONWRITER_H
