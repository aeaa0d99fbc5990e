//===- JsonWriter.cpp - Appends JSON text to a string, fast ---------------===//
#include "JsonWriter.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <cstring>

using namespace cellrun::serve;

void JsonWriter::separate() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (!first_)
    out_ += ',';
  first_ = false;
}

void JsonWriter::open(char bracket) {
  separate();
  out_ += bracket;
  first_ = true;
}

void JsonWriter::close(char bracket) {
  out_ += bracket;
  first_ = false;
}

void JsonWriter::key(std::string_view name) {
  string(name);
  out_ += ':';
  afterKey_ = true;
}

void JsonWriter::string(std::string_view text) {
  separate();
  // Names and ids are short: nlohmann's escaping (and its replacement of
  // invalid UTF-8) is all they need.
  out_ += nlohmann::json(std::string(text))
              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void JsonWriter::appendFloat(float value) {
  if (!std::isfinite(value)) {
    out_ += "null";
    return;
  }
  char text[32];
  auto [end, error] = std::to_chars(text, text + sizeof(text), value);
  (void)error; // 32 characters hold any float
  size_t length = static_cast<size_t>(end - text);
  // "1" reads back as an integer: keep a float a float, as "1.0".
  bool integral = std::memchr(text, '.', length) == nullptr &&
                  std::memchr(text, 'e', length) == nullptr;
  out_.append(text, length);
  if (integral)
    out_ += ".0";
}

void JsonWriter::appendInteger(int64_t value) {
  char text[24];
  auto [end, error] = std::to_chars(text, text + sizeof(text), value);
  (void)error;
  out_.append(text, static_cast<size_t>(end - text));
}

void JsonWriter::number(float value) {
  separate();
  appendFloat(value);
}

void JsonWriter::number(int64_t value) {
  separate();
  appendInteger(value);
}

void JsonWriter::number(uint64_t value) {
  separate();
  char text[24];
  auto [end, error] = std::to_chars(text, text + sizeof(text), value);
  (void)error;
  out_.append(text, static_cast<size_t>(end - text));
}

void JsonWriter::numbers(const float *values, size_t count) {
  beginArray();
  // At most 16 characters a float and a comma.
  out_.reserve(out_.size() + count * 17 + 1);
  for (size_t i = 0; i < count; ++i) {
    if (i)
      out_ += ',';
    appendFloat(values[i]);
  }
  endArray();
}

void JsonWriter::numbers(const int64_t *values, size_t count) {
  beginArray();
  out_.reserve(out_.size() + count * 21 + 1);
  for (size_t i = 0; i < count; ++i) {
    if (i)
      out_ += ',';
    appendInteger(values[i]);
  }
  endArray();
}
