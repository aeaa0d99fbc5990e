//===- JsonReaderTest.cpp - simdjson's reading equals the runtime's
//--------===//
//
// readRequestJsonFast must give what parseRequestJson gives: the same tree,
// with the same kind of every number (unsigned, signed, float), and for
// anything refused the same message.
//
//===----------------------------------------------------------------------===//
#include "JsonReader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace cellrun;
using Json = nlohmann::json;

namespace {

/// Equal values of equal kinds everywhere (Json's == takes 1u == 1 == 1.0).
::testing::AssertionResult sameTree(const Json &a, const Json &b,
                                    const std::string &at = "$") {
  if (a.type() != b.type())
    return ::testing::AssertionFailure()
           << at << ": " << a.type_name() << " against " << b.type_name()
           << " (" << a.dump() << " / " << b.dump() << ")";
  if (a.is_array()) {
    if (a.size() != b.size())
      return ::testing::AssertionFailure() << at << ": sizes differ";
    for (size_t i = 0; i < a.size(); ++i)
      if (auto same = sameTree(a[i], b[i], at + "[" + std::to_string(i) + "]");
          !same)
        return same;
    return ::testing::AssertionSuccess();
  }
  if (a.is_object()) {
    if (a.size() != b.size())
      return ::testing::AssertionFailure() << at << ": member counts differ";
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto other = b.find(it.key());
      if (other == b.end())
        return ::testing::AssertionFailure() << at << ": no " << it.key();
      if (auto same = sameTree(*it, *other, at + "." + it.key()); !same)
        return same;
    }
    return ::testing::AssertionSuccess();
  }
  if (a.is_number_float()) {
    // Bit for bit: -0.0 is not 0.0.
    double x = a.get<double>(), y = b.get<double>();
    if (std::memcmp(&x, &y, sizeof x) != 0)
      return ::testing::AssertionFailure() << at << ": " << x << " / " << y;
    return ::testing::AssertionSuccess();
  }
  if (a != b)
    return ::testing::AssertionFailure()
           << at << ": " << a.dump() << " / " << b.dump();
  return ::testing::AssertionSuccess();
}

void expectSameReading(const std::string &text) {
  auto fast = serve::readRequestJsonFast(text);
  auto slow = parseRequestJson(text);
  ASSERT_EQ(fast.ok(), slow.ok()) << text;
  if (!slow.ok()) {
    EXPECT_EQ(fast.status().code(), slow.status().code()) << text;
    EXPECT_EQ(fast.status().message(), slow.status().message()) << text;
    return;
  }
  EXPECT_TRUE(sameTree(fast.value(), slow.value())) << text;
}

TEST(JsonReaderTest, EveryKindOfValueReadsAsTheRuntimeReadsIt) {
  const char *texts[] = {
      R"({"id": "r1", "tokens": [5, 17, 3]})",
      R"({"a": 0, "b": -0, "c": -1, "d": 9223372036854775807,
          "e": 9223372036854775808, "f": 18446744073709551615,
          "g": -9223372036854775808, "h": 18446744073709551616,
          "i": 123456789012345678901234567890, "j": -123456789012345678901})",
      R"([1.5, -0.0, 0.1, 1e-7, 1E5, 2.5e+3, 3.0, 1e-400, 4.9e-324,
          1.7976931348623157e308, 0.30000000000000004, 7.0e0])",
      R"({"s": "x\u00e9\n\t\"\\\/\b\f\r", "t": "\ud83d\ude00", "u": ""})",
      R"({"x": [true, false, null, [], {}, [[[]]], {"y": {"z": null}}]})",
      " \t\n[ 1 , 2 ]\r\n",
      // -0 alone (signed in nlohmann), beside 0, in a string, as a float.
      R"({"b": -0})",
      "[0, -0, 0]",
      R"({"id": "a-0", "n": 0})",
      "[-0.0, -0e1, -0E1, 0]",
      "\"just a string\"",
      "42",
      "null",
  };
  for (const char *text : texts)
    expectSameReading(text);
}

TEST(JsonReaderTest, RefusedTextGetsTheRuntimesMessage) {
  std::vector<std::string> texts = {
      "",
      "{",
      "[1,]",
      "nul",
      "{} x",
      "{\"a\": 1, \"a\": 2}",
      "{\"o\": {\"k\": 1, \"k\": [2]}}",
      "[1e400]",
      "[-1e400]",
      "\"\xff\"",
      "{\"id\": \"a\xc3\"}",
      "\"\\ud800\"",
      "\"\\ud800\\u0041\"",
      "\"tab\there\"",
      "[01]",
      "[1.]",
      "[.5]",
      "[+1]",
      "{'a': 1}",
      "[\"\\x41\"]",
  };
  // Deeper than the runtime allows, and just within it.
  texts.push_back(std::string(300, '[') + std::string(300, ']'));
  texts.push_back(std::string(kMaxJsonDepth, '[') +
                  std::string(kMaxJsonDepth, ']'));
  texts.push_back(std::string(kMaxJsonDepth + 1, '[') +
                  std::string(kMaxJsonDepth + 1, ']'));
  for (const std::string &text : texts)
    expectSameReading(text);
  // No text at all (a view of no data, as an HTTP body with no JSON part).
  auto none = serve::readRequestJsonFast(std::string_view());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            parseRequestJson(std::string_view()).status().message());
  EXPECT_FALSE(serve::readRequestJsonFast("{\"a\": 1, \"a\": 2}").ok());
  EXPECT_EQ(
      serve::readRequestJsonFast("{\"a\": 1, \"a\": 2}").status().message(),
      "duplicate member \"a\"");
}

/// A random document: objects, arrays, strings with escapes, and numbers
/// written the ways clients write them.
std::string randomValue(std::mt19937_64 &rng, int depth) {
  std::uniform_int_distribution<int> kind(0, depth > 3 ? 5 : 7);
  char buffer[64];
  switch (kind(rng)) {
  case 0: { // a float with 9 digits, as floats are written
    std::uniform_real_distribution<float> value(-4.0f, 4.0f);
    std::snprintf(buffer, sizeof buffer, "%.9g", value(rng));
    return buffer;
  }
  case 1: { // a double with 17, tiny or huge
    std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
    std::uniform_int_distribution<int> exponent(-300, 300);
    std::snprintf(buffer, sizeof buffer, "%.17g",
                  std::ldexp(mantissa(rng), exponent(rng)));
    return buffer;
  }
  case 2: { // an integer of any size
    std::uniform_int_distribution<int64_t> value(INT64_MIN, INT64_MAX);
    int64_t drawn =
        value(rng) >> std::uniform_int_distribution<int>(0, 62)(rng);
    return std::to_string(drawn);
  }
  case 3:
    return std::to_string(std::uniform_int_distribution<uint64_t>(
        uint64_t(INT64_MAX), UINT64_MAX)(rng));
  case 4: {
    std::string text = "\"";
    const char *pieces[] = {
        "a", "Z",    "\\n", "\\\"", "\\u00e9", "\xc3\xa9", "\\ud83d\\ude00",
        " ", "\\\\", "7"};
    int length = std::uniform_int_distribution<int>(0, 12)(rng);
    for (int i = 0; i < length; ++i)
      text += pieces[std::uniform_int_distribution<int>(0, 9)(rng)];
    return text + "\"";
  }
  case 5:
    return std::uniform_int_distribution<int>(0, 2)(rng) == 0 ? "true" : "null";
  case 6: {
    std::string text = "[";
    int count = std::uniform_int_distribution<int>(0, 6)(rng);
    for (int i = 0; i < count; ++i)
      text += (i ? ", " : "") + randomValue(rng, depth + 1);
    return text + "]";
  }
  default: {
    std::string text = "{";
    int count = std::uniform_int_distribution<int>(0, 5)(rng);
    for (int i = 0; i < count; ++i)
      text += (i ? ",\"k" : "\"k") + std::to_string(i) +
              "\": " + randomValue(rng, depth + 1);
    return text + "}";
  }
  }
}

TEST(JsonReaderTest, RandomDocumentsReadAsTheRuntimeReadsThem) {
  std::mt19937_64 rng(2018);
  for (int i = 0; i < 3000; ++i)
    expectSameReading(randomValue(rng, 0));
}

TEST(JsonReaderTest, LargeDocumentsAndThreadsReadTheSame) {
  // Over the parser's kept size (1 MB), then small again on the same thread.
  std::mt19937_64 rng(7);
  std::string large = "{\"steps\": [";
  for (int step = 0; step < 200; ++step) {
    large += step ? ", {\"x\": [" : "{\"x\": [";
    for (int i = 0; i < 1024; ++i) {
      char buffer[32];
      std::snprintf(buffer, sizeof buffer, "%s%.4f", i ? "," : "",
                    std::uniform_real_distribution<double>(-1, 1)(rng));
      large += buffer;
    }
    large += "]}";
  }
  large += "]}";
  ASSERT_GT(large.size(), size_t(1) << 20);
  expectSameReading(large);
  expectSameReading(R"({"id": "after", "tokens": [1, 2]})");
  // Each thread its own parser.
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &mismatches] {
      std::mt19937_64 own(100 + t);
      for (int i = 0; i < 300; ++i) {
        std::string text = randomValue(own, 0);
        auto fast = serve::readRequestJsonFast(text);
        auto slow = parseRequestJson(text);
        if (fast.ok() != slow.ok() ||
            (slow.ok() && !sameTree(fast.value(), slow.value())))
          ++mismatches[t];
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

} // namespace
