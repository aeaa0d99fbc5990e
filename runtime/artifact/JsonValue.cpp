//===- JsonValue.cpp - A small JSON reader for requests -------------------===//
#include "cellrun/JsonValue.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

using namespace cellrun;

namespace cellrun {

class JsonParser {
public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  Result<JsonValue> parseDocument() {
    JsonValue value;
    if (Status status = parseValue(value, 0); !status.isOk())
      return status;
    skipSpace();
    if (at_ != text_.size())
      return error("expected the end of the text");
    return value;
  }

private:
  static constexpr int kMaxDepth = 256;

  Status error(const std::string &what) const {
    return Status(StatusCode::InvalidArgument,
                  "at byte " + std::to_string(at_) + ": " + what);
  }
  void skipSpace() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' ||
                                  text_[at_] == '\n' || text_[at_] == '\r'))
      ++at_;
  }
  bool consume(std::string_view word) {
    if (text_.substr(at_, word.size()) != word)
      return false;
    at_ += word.size();
    return true;
  }

  Status parseValue(JsonValue &value, int depth) {
    if (depth > kMaxDepth)
      return error("nesting deeper than " + std::to_string(kMaxDepth));
    skipSpace();
    if (at_ >= text_.size())
      return error("expected a value, found the end of the text");
    char c = text_[at_];
    if (c == '{')
      return parseObject(value, depth);
    if (c == '[')
      return parseArray(value, depth);
    if (c == '"') {
      value.kind_ = JsonValue::Kind::String;
      return parseString(value.string_);
    }
    if (consume("true") || consume("false")) {
      value.kind_ = JsonValue::Kind::Bool;
      value.boolean_ = text_[at_ - 1] == 'e' && text_[at_ - 2] == 'u';
      return Status::ok();
    }
    if (consume("null"))
      return Status::ok();
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(value);
    return error(std::string("unexpected character '") + c + "'");
  }

  Status parseNumber(JsonValue &value) {
    size_t start = at_;
    if (text_[at_] == '-')
      ++at_;
    auto digits = [&] {
      size_t first = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9')
        ++at_;
      return at_ > first;
    };
    if (!digits())
      return error("expected digits");
    bool integral = true;
    if (at_ < text_.size() && text_[at_] == '.') {
      ++at_;
      integral = false;
      if (!digits())
        return error("expected digits after '.'");
    }
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      ++at_;
      integral = false;
      if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-'))
        ++at_;
      if (!digits())
        return error("expected an exponent");
    }
    std::string literal(text_.substr(start, at_ - start));
    value.kind_ = JsonValue::Kind::Number;
    value.number_ = std::strtod(literal.c_str(), nullptr);
    if (!std::isfinite(value.number_))
      return error("number out of range: " + literal);
    if (integral) {
      errno = 0;
      long long parsed = std::strtoll(literal.c_str(), nullptr, 10);
      value.integral_ = errno == 0;
      value.integer_ = parsed;
    } else if (value.number_ == std::floor(value.number_) &&
               std::fabs(value.number_) < 9.0e15) {
      value.integral_ = true;
      value.integer_ = static_cast<int64_t>(value.number_);
    }
    return Status::ok();
  }

  Status parseString(std::string &out) {
    ++at_; // the opening quote
    while (at_ < text_.size()) {
      char c = text_[at_++];
      if (c == '"')
        return Status::ok();
      if (static_cast<unsigned char>(c) < 0x20)
        return error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= text_.size())
        break;
      char escape = text_[at_++];
      switch (escape) {
      case '"':
      case '\\':
      case '/':
        out += escape;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        if (at_ + 4 > text_.size())
          return error("truncated \\u escape");
        unsigned code = std::strtoul(std::string(text_.substr(at_, 4)).c_str(),
                                     nullptr, 16);
        at_ += 4;
        // UTF-8 of the code unit (surrogate pairs are kept as two units).
        if (code < 0x80) {
          out += static_cast<char>(code);
        } else if (code < 0x800) {
          out += static_cast<char>(0xC0 | (code >> 6));
          out += static_cast<char>(0x80 | (code & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (code >> 12));
          out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (code & 0x3F));
        }
        break;
      }
      default:
        return error(std::string("unknown escape '\\") + escape + "'");
      }
    }
    return error("unterminated string");
  }

  Status parseArray(JsonValue &value, int depth) {
    value.kind_ = JsonValue::Kind::Array;
    ++at_;
    skipSpace();
    if (consume("]"))
      return Status::ok();
    while (true) {
      value.items_.emplace_back();
      if (Status status = parseValue(value.items_.back(), depth + 1);
          !status.isOk())
        return status;
      skipSpace();
      if (consume("]"))
        return Status::ok();
      if (!consume(","))
        return error("expected ',' or ']' in an array");
    }
  }

  Status parseObject(JsonValue &value, int depth) {
    value.kind_ = JsonValue::Kind::Object;
    ++at_;
    skipSpace();
    if (consume("}"))
      return Status::ok();
    while (true) {
      skipSpace();
      if (at_ >= text_.size() || text_[at_] != '"')
        return error("expected a member name in quotes");
      std::string key;
      if (Status status = parseString(key); !status.isOk())
        return status;
      if (value.find(key))
        return error("duplicate member \"" + key + "\"");
      skipSpace();
      if (!consume(":"))
        return error("expected ':' after a member name");
      value.members_.emplace_back(std::move(key), JsonValue());
      if (Status status = parseValue(value.members_.back().second, depth + 1);
          !status.isOk())
        return status;
      skipSpace();
      if (consume("}"))
        return Status::ok();
      if (!consume(","))
        return error("expected ',' or '}' in an object");
    }
  }

  std::string_view text_;
  size_t at_ = 0;
};

} // namespace cellrun

const JsonValue *JsonValue::find(std::string_view key) const {
  for (const auto &[name, member] : members_)
    if (name == key)
      return &member;
  return nullptr;
}

const char *JsonValue::kindName(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Number:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "a value";
}

Result<JsonValue> cellrun::parseJson(std::string_view text) {
  return JsonParser(text).parseDocument();
}
