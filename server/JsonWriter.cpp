//===- JsonWriter.cpp - Appends JSON text to a string, fast ---------------===//
#include "JsonWriter.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>

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

void JsonWriter::appendNumber(float value) {
  if (!std::isfinite(value)) {
    out_ += "null";
    return;
  }
  char text[32];
  auto [end, error] = std::to_chars(text, text + sizeof(text), value);
  (void)error; // 32 characters hold any float
  size_t length = static_cast<size_t>(end - text);
  // "1" reads back as an integer: keep a float a float, as "1.0". (A loop,
  // not two memchr calls: those were 7% of writing a run's results.)
  bool integral = true;
  for (size_t i = 0; i < length; ++i)
    integral &= text[i] != '.' && text[i] != 'e';
  out_.append(text, length);
  if (integral)
    out_ += ".0";
}

namespace {
template <typename Integer>
void appendInteger(std::string &out, Integer value) {
  char text[24];
  auto [end, error] = std::to_chars(text, text + sizeof(text), value);
  (void)error; // 24 characters hold any 64-bit integer
  out.append(text, static_cast<size_t>(end - text));
}
} // namespace

void JsonWriter::appendNumber(int64_t value) { appendInteger(out_, value); }
void JsonWriter::appendNumber(uint64_t value) { appendInteger(out_, value); }

void JsonWriter::number(float value) {
  separate();
  appendNumber(value);
}

void JsonWriter::number(int64_t value) {
  separate();
  appendNumber(value);
}

void JsonWriter::number(uint64_t value) {
  separate();
  appendNumber(value);
}

template <typename T>
void JsonWriter::appendArray(const T *values, size_t count, size_t widest) {
  beginArray();
  out_.reserve(out_.size() + count * (widest + 1) + 1);
  for (size_t i = 0; i < count; ++i) {
    if (i)
      out_ += ',';
    appendNumber(values[i]);
  }
  endArray();
}

// At most 16 characters a float (-1.17549435e-38), 20 an int64.
void JsonWriter::numbers(const float *values, size_t count) {
  appendArray(values, count, 16);
}

void JsonWriter::numbers(const int64_t *values, size_t count) {
  appendArray(values, count, 20);
}
