//===- JsonWriterTest.cpp - The serve front end's reply JSON writer -------===//
#include "JsonWriter.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using cellrun::serve::JsonWriter;

namespace {

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

TEST(JsonWriter, FloatsReadBackAsTheSameFloat) {
  std::mt19937 random(17);
  std::vector<float> values;
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  for (int i = 0; i < 4000; ++i)
    values.push_back(unit(random) * std::pow(10.f, float(i % 60 - 30)));
  values.push_back(std::numeric_limits<float>::min());
  values.push_back(std::numeric_limits<float>::denorm_min());
  values.push_back(std::numeric_limits<float>::max());
  values.push_back(-0.f);
  std::string text;
  JsonWriter(text).numbers(values.data(), values.size());
  nlohmann::json parsed = nlohmann::json::parse(text);
  ASSERT_EQ(parsed.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_TRUE(parsed[i].is_number_float()) << parsed[i];
    EXPECT_EQ(bitsOf(static_cast<float>(parsed[i].get<double>())),
              bitsOf(values[i]))
        << "value " << i << " written as " << parsed[i];
  }
  // Never a double's 17 digits: 0.1f is "0.1".
  text.clear();
  JsonWriter(text).number(0.1f);
  EXPECT_EQ(text, "0.1");
}

TEST(JsonWriter, IntegralFloatsStayFloatsAndNonFiniteIsNull) {
  std::vector<float> values = {3.f, -2.f, 1e20f, std::nanf(""),
                               std::numeric_limits<float>::infinity()};
  std::string text;
  JsonWriter(text).numbers(values.data(), values.size());
  EXPECT_EQ(text, "[3.0,-2.0,1e+20,null,null]");
}

TEST(JsonWriter, IntegersAtTheirLimits) {
  std::vector<int64_t> values = {0, -1, std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max()};
  std::string text;
  JsonWriter(text).numbers(values.data(), values.size());
  EXPECT_EQ(text, "[0,-1,-9223372036854775808,9223372036854775807]");
}

TEST(JsonWriter, NestedObjectsParseAsTheTreeTheyDescribe) {
  std::string text;
  JsonWriter writer(text);
  std::string awkward = "a\"b\\c\n\x01\xff";
  writer.beginObject();
  writer.key("id");
  writer.string(awkward);
  writer.key("outputs");
  writer.beginArray();
  for (int o = 0; o < 2; ++o) {
    writer.beginObject();
    writer.key("data");
    std::vector<float> data = {0.5f + o, -0.25f};
    writer.numbers(data.data(), data.size());
    writer.key("parameters");
    writer.beginObject();
    writer.key("binary_data_size");
    writer.number(static_cast<uint64_t>(8 + o));
    writer.endObject();
    writer.endObject();
  }
  writer.endArray();
  writer.key("empty");
  writer.beginArray();
  writer.endArray();
  writer.key("count");
  writer.number(int64_t(-7));
  writer.endObject();

  nlohmann::json expected = {
      {"id", "a\"b\\c\n\x01\xef\xbf\xbd"},
      {"outputs",
       {{{"data", {0.5, -0.25}}, {"parameters", {{"binary_data_size", 8}}}},
        {{"data", {1.5, -0.25}}, {"parameters", {{"binary_data_size", 9}}}}}},
      {"empty", nlohmann::json::array()},
      {"count", -7}};
  EXPECT_EQ(nlohmann::json::parse(text), expected) << text;
}

} // namespace
