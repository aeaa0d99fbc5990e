//===- OnnxModelErrorsTest.cpp - ONNX models cellc refuses to read --------===//
//
// Malformed, truncated and unsupported ONNX models (binary and textual):
// cellc::onnx_model refuses each with a one-line message that names the
// file and what is wrong, never with an exception or a crash.
//
//===----------------------------------------------------------------------===//

#include "OnnxModelTests.h"

#include "compiler/import/OnnxModel.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <random>
#include <string>

using namespace cellc::onnx_model;
using namespace cellc::testing;

TEST(OnnxModelTest, TruncatedBinaryIsRejected) {
  std::string bytes = serialize(minimalModel());
  std::string error = parseError(bytes.substr(0, bytes.size() / 2), false);
  EXPECT_TRUE(contains(error, "not a valid ONNX model"));
  EXPECT_TRUE(contains(error, "truncated"));
}

TEST(OnnxModelTest, EveryPrefixOfABinaryModelIsHandled) {
  onnx::ModelProto proto = minimalModel();
  addInitializer(*proto.mutable_graph(), "w", onnx::TensorProto::FLOAT, {2})
      ->set_raw_data(std::string(8, '\x01'));
  std::string bytes = serialize(proto);
  int failures = 0;
  for (size_t length = 0; length < bytes.size(); ++length) {
    Model model;
    std::string error;
    if (parseModel(bytes.substr(0, length), false, "p.onnx", model, error))
      continue;
    ++failures;
    EXPECT_TRUE(contains(error, "p.onnx: not a valid ONNX model"));
  }
  // Only a cut between the graph and the trailing opset_import parses.
  EXPECT_GE(failures, int(bytes.size()) - 1);
}

TEST(OnnxModelTest, GarbageIsRejected) {
  std::mt19937 random(42);
  std::string garbage(4096, '\0');
  for (char &c : garbage)
    c = char(random());
  EXPECT_TRUE(contains(parseError(garbage, false), "not a valid ONNX model"));
}

TEST(OnnxModelTest, EmptyInputIsRejected) {
  EXPECT_TRUE(contains(parseError("", false), "not a valid ONNX model"));
  EXPECT_TRUE(contains(parseError("", true), "not a valid ONNX model"));
}

TEST(OnnxModelTest, ModelWithoutGraphIsRejected) {
  onnx::ModelProto proto;
  proto.set_ir_version(8);
  EXPECT_TRUE(contains(parseError(serialize(proto), false), "no graph"));
}

TEST(OnnxModelTest, TextSyntaxErrorNamesThePosition) {
  std::string text = R"(<ir_version: 8, opset_import: ["" : 14]>
agraph (float[N] x) => (float[N] y) { y = Tanh(x, }
)";
  std::string error = parseError(text, true);
  EXPECT_TRUE(contains(error, "ONNX text syntax error"));
  EXPECT_TRUE(contains(error, "line: 2"));
  EXPECT_TRUE(contains(error, "Expected character )"));
}

TEST(OnnxModelTest, TextNumberOutOfRangeIsAnErrorNotAnException) {
  std::string text = R"(<ir_version: 99999999999999999999999>
agraph (float[N] x) => (float[N] y) { y = Tanh(x) }
)";
  std::string error = parseError(text, true);
  EXPECT_TRUE(contains(error, "ONNX text syntax error"));
  EXPECT_TRUE(contains(error, "line: 1"));
}

TEST(OnnxModelTest, TextWithTrailingJunkOrNulIsRejected) {
  EXPECT_TRUE(contains(parseError(std::string(kTextModel) + "}}", true),
                       "ONNX text syntax error"));
  std::string withNul = kTextModel;
  withNul[10] = '\0';
  EXPECT_TRUE(contains(parseError(withNul, true), "NUL byte at offset 10"));
}

TEST(OnnxModelTest, EveryPrefixOfATextModelIsHandled) {
  std::string text = kTextModel;
  size_t complete = text.rfind('}') + 1;
  for (size_t length = 0; length < text.size(); ++length) {
    Model model;
    std::string error;
    bool ok =
        parseModel(text.substr(0, length), true, "p.onnxtxt", model, error);
    EXPECT_EQ(ok, length >= complete) << "prefix of " << length << " bytes";
    if (!ok) {
      EXPECT_TRUE(contains(error, "p.onnxtxt: ")) << error;
    }
  }
}

TEST(OnnxModelTest, ExternalDataIsRejected) {
  onnx::ModelProto proto = minimalModel();
  onnx::TensorProto *weights = addInitializer(*proto.mutable_graph(), "W",
                                              onnx::TensorProto::FLOAT, {4});
  onnx::StringStringEntryProto *location = weights->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  EXPECT_TRUE(contains(parseError(serialize(proto), false),
                       "tensor 'W' uses external data, which cellc does not "
                       "support; re-export with the weights inside the model"));

  weights->clear_external_data();
  weights->set_data_location(onnx::TensorProto::EXTERNAL);
  EXPECT_TRUE(contains(parseError(serialize(proto), false),
                       "tensor 'W' uses external data"));
}

TEST(OnnxModelTest, ExternalDataInConstantIsRejected) {
  onnx::ModelProto proto = minimalModel();
  onnx::AttributeProto *value =
      proto.mutable_graph()->mutable_node(0)->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->set_data_location(onnx::TensorProto::EXTERNAL);
  std::string error = parseError(serialize(proto), false);
  EXPECT_TRUE(contains(error, "uses external data"));
  EXPECT_TRUE(contains(error, "attribute 'value' of node 'Identity_0'"));
}

TEST(OnnxModelTest, DataSizeMismatchIsRejected) {
  onnx::ModelProto proto = minimalModel();
  addInitializer(*proto.mutable_graph(), "bias", onnx::TensorProto::FLOAT,
                 {2, 3})
      ->set_raw_data(std::string(20, '\0'));
  std::string error = parseError(serialize(proto), false);
  EXPECT_TRUE(contains(error, "tensor 'bias'"));
  EXPECT_TRUE(contains(error, "20 bytes"));
  EXPECT_TRUE(contains(error, "need 24 bytes"));
}

TEST(OnnxModelTest, DataInTheWrongFieldIsAMismatch) {
  onnx::ModelProto proto = minimalModel();
  onnx::TensorProto *tensor = addInitializer(*proto.mutable_graph(), "w",
                                             onnx::TensorProto::FLOAT, {1});
  tensor->add_int64_data(1); // float data belongs in float_data
  EXPECT_TRUE(contains(parseError(serialize(proto), false),
                       "tensor 'w' (float[1]) holds 0 bytes"));
}

TEST(OnnxModelTest, NegativeDimsSegmentsAndStringsAreRejected) {
  onnx::ModelProto negative = minimalModel();
  addInitializer(*negative.mutable_graph(), "n", onnx::TensorProto::FLOAT,
                 {2, -1});
  EXPECT_TRUE(contains(parseError(serialize(negative), false),
                       "tensor 'n' has a negative dimension"));

  onnx::ModelProto segmented = minimalModel();
  onnx::TensorProto *segment = addInitializer(*segmented.mutable_graph(), "s",
                                              onnx::TensorProto::FLOAT, {1});
  segment->add_float_data(1);
  segment->mutable_segment()->set_begin(0);
  EXPECT_TRUE(contains(parseError(serialize(segmented), false),
                       "tensor 's' is stored in segments"));

  onnx::ModelProto strings = minimalModel();
  addInitializer(*strings.mutable_graph(), "str", onnx::TensorProto::STRING,
                 {1})
      ->add_string_data("hello");
  EXPECT_TRUE(contains(parseError(serialize(strings), false),
                       "string tensors are not supported"));
}
