//===- JsonWriter.cpp - A small streaming JSON writer ---------------------===//
#include "cellrun/JsonWriter.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace cellrun {

std::string jsonQuote(std::string_view text) {
  std::string quoted = "\"";
  for (char c : text) {
    switch (c) {
    case '"':
      quoted += "\\\"";
      break;
    case '\\':
      quoted += "\\\\";
      break;
    case '\n':
      quoted += "\\n";
      break;
    case '\r':
      quoted += "\\r";
      break;
    case '\t':
      quoted += "\\t";
      break;
    case '\b':
      quoted += "\\b";
      break;
    case '\f':
      quoted += "\\f";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x",
                      static_cast<unsigned char>(c));
        quoted += escaped;
      } else {
        quoted += c;
      }
    }
  }
  return quoted + "\"";
}

void JsonWriter::beforeItem() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (frames_.empty())
    return;
  Frame &frame = frames_.back();
  if (frame.inlineArray) {
    if (frame.members++)
      out_ << ", ";
    return;
  }
  if (frame.members++)
    out_ << ',';
  out_ << '\n' << std::string(2 * frames_.size(), ' ');
}

void JsonWriter::writeRaw(std::string_view text) {
  beforeItem();
  out_ << text;
}

void JsonWriter::beginObject() {
  writeRaw("{");
  frames_.push_back({false, 0});
}

void JsonWriter::beginArray() {
  writeRaw("[");
  frames_.push_back({false, 0});
}

void JsonWriter::beginInlineArray() {
  writeRaw("[");
  frames_.push_back({true, 0});
}

void JsonWriter::endObject() {
  Frame frame = frames_.back();
  frames_.pop_back();
  if (frame.members)
    out_ << '\n' << std::string(2 * frames_.size(), ' ');
  out_ << '}';
}

void JsonWriter::endArray() {
  Frame frame = frames_.back();
  frames_.pop_back();
  if (frame.members && !frame.inlineArray)
    out_ << '\n' << std::string(2 * frames_.size(), ' ');
  out_ << ']';
}

void JsonWriter::key(std::string_view name) {
  beforeItem();
  out_ << jsonQuote(name) << ": ";
  afterKey_ = true;
}

void JsonWriter::value(std::string_view text) { writeRaw(jsonQuote(text)); }

void JsonWriter::value(bool flag) { writeRaw(flag ? "true" : "false"); }

void JsonWriter::value(double number) {
  if (!std::isfinite(number))
    return null();
  char text[32];
  auto [end, error] = std::to_chars(text, text + sizeof text, number);
  writeRaw(error == std::errc() ? std::string_view(text, end - text) : "null");
}

void JsonWriter::value(float number) {
  if (!std::isfinite(number))
    return null();
  char text[32];
  auto [end, error] = std::to_chars(text, text + sizeof text, number);
  writeRaw(error == std::errc() ? std::string_view(text, end - text) : "null");
}

void JsonWriter::writeInteger(const std::string &digits) { writeRaw(digits); }

void JsonWriter::null() { writeRaw("null"); }

void JsonWriter::finish() { out_ << '\n'; }

} // namespace cellrun
