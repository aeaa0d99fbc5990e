//===- OnnxModelTest.cpp - Tests for reading ONNX models ------------------===//
//
// Builds ONNX models in memory (protobuf API or textual syntax), reads them
// with cellc::onnx_model and checks the structs, the tensor bytes, and the
// one-line messages for malformed, truncated and unsupported files.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/OnnxModel.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

using namespace cellc::onnx_model;

namespace {

::testing::AssertionResult contains(const std::string &text,
                                    const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << text << "\" does not contain \"" << part << "\"";
}

const char *const kTextModel = R"(<ir_version: 8, opset_import: ["" : 14]>
agraph (float[N, 64] x, float[N, 64] h) => (float[N, 64] y) {
  s = Add(x, h)
  y = Tanh(s)
}
)";

/// Parses `contents` as "test.onnx"; fails the test on error.
Model parseOk(const std::string &contents, bool textual) {
  Model model;
  std::string error;
  EXPECT_TRUE(parseModel(contents, textual, "test.onnx", model, error))
      << error;
  return model;
}

/// Parses `contents` expecting failure; returns the message.
std::string parseError(const std::string &contents, bool textual) {
  Model model;
  std::string error;
  EXPECT_FALSE(parseModel(contents, textual, "test.onnx", model, error));
  EXPECT_EQ(error.find('\n'), std::string::npos) << "not one line: " << error;
  EXPECT_EQ(error.rfind("test.onnx: ", 0), 0u) << error;
  return error;
}

template <typename T> std::vector<char> bytesOf(std::vector<T> values) {
  std::vector<char> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

void addTensorInput(onnx::GraphProto &graph, const std::string &name,
                    int32_t elemType, std::vector<int64_t> dims) {
  onnx::ValueInfoProto *input = graph.add_input();
  input->set_name(name);
  auto *tensorType = input->mutable_type()->mutable_tensor_type();
  tensorType->set_elem_type(elemType);
  for (int64_t dim : dims)
    tensorType->mutable_shape()->add_dim()->set_dim_value(dim);
}

onnx::TensorProto *addInitializer(onnx::GraphProto &graph,
                                  const std::string &name, int32_t dataType,
                                  std::vector<int64_t> dims) {
  onnx::TensorProto *tensor = graph.add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(dataType);
  for (int64_t dim : dims)
    tensor->add_dims(dim);
  return tensor;
}

/// A model with one input `x` (float[N, 4]), one output `y` and one Identity.
onnx::ModelProto minimalModel() {
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.set_producer_name("unit-test");
  model.set_producer_version("1.0");
  onnx::OperatorSetIdProto *opset = model.add_opset_import();
  opset->set_domain("ai.onnx");
  opset->set_version(13);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("g");
  onnx::ValueInfoProto *input = graph->add_input();
  input->set_name("x");
  auto *tensorType = input->mutable_type()->mutable_tensor_type();
  tensorType->set_elem_type(onnx::TensorProto::FLOAT);
  tensorType->mutable_shape()->add_dim()->set_dim_param("N");
  tensorType->mutable_shape()->add_dim()->set_dim_value(4);
  graph->add_output()->set_name("y");
  onnx::NodeProto *node = graph->add_node();
  node->set_op_type("Identity");
  node->add_input("x");
  node->add_output("y");
  return model;
}

std::string serialize(const onnx::ModelProto &model) {
  std::string bytes;
  EXPECT_TRUE(model.SerializeToString(&bytes));
  return bytes;
}

std::string writeTempFile(const std::string &name,
                          const std::string &contents) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

} // namespace

TEST(OnnxModelTest, TextualModel) {
  Model model = parseOk(kTextModel, /*textual=*/true);
  EXPECT_EQ(model.path, "test.onnx");
  EXPECT_EQ(model.irVersion, 8);
  EXPECT_EQ(model.opsetVersion, 14);
  EXPECT_EQ(model.graphName, "agraph");
  ASSERT_EQ(model.inputs.size(), 2u);
  EXPECT_EQ(model.inputs[0].name, "x");
  EXPECT_EQ(model.inputs[1].name, "h");
  const ValueInfo &x = model.inputs[0];
  EXPECT_EQ(x.elemType, int32_t(DataType::Float));
  ASSERT_TRUE(x.hasShape);
  ASSERT_EQ(x.dims.size(), 2u);
  EXPECT_EQ(x.dims[0].kind, Dim::Kind::Symbolic);
  EXPECT_EQ(x.dims[0].symbol, "N");
  EXPECT_EQ(x.dims[1].kind, Dim::Kind::Known);
  EXPECT_EQ(x.dims[1].value, 64);
  ASSERT_EQ(model.outputs.size(), 1u);
  EXPECT_EQ(model.outputs[0].name, "y");
  ASSERT_EQ(model.nodes.size(), 2u);
  const Node &add = model.nodes[0];
  EXPECT_EQ(add.name, "Add_0");
  EXPECT_EQ(add.opType, "Add");
  EXPECT_EQ(add.domain, "");
  EXPECT_EQ(add.inputs, (std::vector<std::string>{"x", "h"}));
  EXPECT_EQ(add.outputs, (std::vector<std::string>{"s"}));
  EXPECT_TRUE(add.attributes.empty());
  EXPECT_EQ(model.nodes[1].name, "Tanh_1");
  EXPECT_EQ(model.nodes[1].inputs, (std::vector<std::string>{"s"}));
}

TEST(OnnxModelTest, TextualAttributesInitializersAndUnknownDims) {
  const char *text = R"(<ir_version: 8, opset_import: ["" : 14]>
g (float[N, ?, 3] x, float[2] w = {1.0, 2.0}) => (float[N, 3] y, z) {
  y = LeakyRelu<alpha: float = 0.5, mode = "fast", axes = [1, 2]>(x)
  z = Constant<value = int64[2] {7, -8}>()
}
)";
  Model model = parseOk(text, /*textual=*/true);
  // `w = {...}` makes w both an input and an initializer; it is not an input.
  ASSERT_EQ(model.inputs.size(), 1u);
  EXPECT_EQ(model.inputs[0].name, "x");
  EXPECT_EQ(model.inputs[0].dims[1].kind, Dim::Kind::Unknown);
  ASSERT_EQ(model.initializers.size(), 1u);
  EXPECT_EQ(model.initializers[0].name, "w");
  EXPECT_EQ(model.initializers[0].bytes, bytesOf<float>({1.0f, 2.0f}));
  // An output without a type has no tensor type and no shape.
  EXPECT_EQ(model.outputs[1].name, "z");
  EXPECT_EQ(model.outputs[1].elemType, 0);
  EXPECT_FALSE(model.outputs[1].hasShape);

  const Node &relu = model.nodes[0];
  const Attribute *alpha = relu.findAttribute("alpha");
  ASSERT_NE(alpha, nullptr);
  EXPECT_EQ(alpha->kind, Attribute::Kind::Float);
  EXPECT_EQ(alpha->f, 0.5f);
  ASSERT_NE(relu.findAttribute("mode"), nullptr);
  EXPECT_EQ(relu.findAttribute("mode")->kind, Attribute::Kind::String);
  EXPECT_EQ(relu.findAttribute("mode")->s, "fast");
  ASSERT_NE(relu.findAttribute("axes"), nullptr);
  EXPECT_EQ(relu.findAttribute("axes")->kind, Attribute::Kind::Ints);
  EXPECT_EQ(relu.findAttribute("axes")->ints, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(relu.findAttribute("missing"), nullptr);

  const Attribute *value = model.nodes[1].findAttribute("value");
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value->kind, Attribute::Kind::Tensor);
  EXPECT_EQ(value->t.dataType, int32_t(DataType::Int64));
  EXPECT_EQ(value->t.bytes, bytesOf<int64_t>({7, -8}));
}

TEST(OnnxModelTest, BinaryModelWithEveryTensorStorage) {
  onnx::ModelProto proto = minimalModel();
  onnx::GraphProto &graph = *proto.mutable_graph();
  std::vector<float> rawValues = {1.5f, -2.0f, 3.25f, 0.0f, 5.0f, 6.0f};
  addInitializer(graph, "raw", onnx::TensorProto::FLOAT, {2, 3})
      ->set_raw_data(std::string(reinterpret_cast<char *>(rawValues.data()),
                                 rawValues.size() * sizeof(float)));
  onnx::TensorProto *floats =
      addInitializer(graph, "floats", onnx::TensorProto::FLOAT, {2});
  floats->add_float_data(0.25f);
  floats->add_float_data(-4.0f);
  onnx::TensorProto *int64s =
      addInitializer(graph, "int64s", onnx::TensorProto::INT64, {3});
  for (int64_t value : {int64_t(1), int64_t(-2), int64_t(1) << 40})
    int64s->add_int64_data(value);
  onnx::TensorProto *halves =
      addInitializer(graph, "halves", onnx::TensorProto::FLOAT16, {2});
  halves->add_int32_data(0x3C00); // 1.0
  halves->add_int32_data(0xC000); // -2.0
  onnx::TensorProto *bools =
      addInitializer(graph, "bools", onnx::TensorProto::BOOL, {3});
  for (int value : {1, 0, 1})
    bools->add_int32_data(value);
  onnx::TensorProto *uint32s =
      addInitializer(graph, "uint32s", onnx::TensorProto::UINT32, {});
  uint32s->add_uint64_data(0xDEADBEEF);
  onnx::TensorProto *doubles =
      addInitializer(graph, "doubles", onnx::TensorProto::DOUBLE, {1});
  doubles->add_double_data(0.1);
  // Older exporters also list initializers as graph inputs.
  addTensorInput(graph, "raw", onnx::TensorProto::FLOAT, {2, 3});

  onnx::NodeProto *constant = graph.add_node();
  constant->set_op_type("Constant");
  constant->set_name("my_constant");
  constant->add_output("c");
  onnx::AttributeProto *value = constant->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT32);
  value->mutable_t()->add_int32_data(-7);
  onnx::NodeProto *split = graph.add_node();
  split->set_op_type("Split");
  split->set_domain("ai.onnx");
  split->add_input("x");
  split->add_input("");
  split->add_output("a");
  split->add_output("b");
  onnx::AttributeProto *sizes = split->add_attribute();
  sizes->set_name("split");
  sizes->set_type(onnx::AttributeProto::INTS);
  sizes->add_ints(1);
  sizes->add_ints(3);

  Model model = parseOk(serialize(proto), /*textual=*/false);
  EXPECT_EQ(model.irVersion, 7);
  EXPECT_EQ(model.opsetVersion, 13); // domain "ai.onnx" is the default domain
  EXPECT_EQ(model.producerName, "unit-test");
  EXPECT_EQ(model.producerVersion, "1.0");
  EXPECT_EQ(model.graphName, "g");
  ASSERT_EQ(model.inputs.size(), 1u);
  EXPECT_EQ(model.inputs[0].name, "x");

  ASSERT_EQ(model.initializers.size(), 7u);
  const Tensor &raw = model.initializers[0];
  EXPECT_EQ(raw.name, "raw");
  EXPECT_EQ(raw.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(raw.numElements(), 6);
  EXPECT_EQ(raw.bytes, bytesOf(rawValues));
  EXPECT_EQ(model.initializers[1].bytes, bytesOf<float>({0.25f, -4.0f}));
  EXPECT_EQ(model.initializers[2].bytes,
            bytesOf<int64_t>({1, -2, int64_t(1) << 40}));
  EXPECT_EQ(model.initializers[3].dataType, int32_t(DataType::Float16));
  EXPECT_EQ(model.initializers[3].bytes, bytesOf<uint16_t>({0x3C00, 0xC000}));
  EXPECT_EQ(model.initializers[4].bytes, (std::vector<char>{1, 0, 1}));
  EXPECT_EQ(model.initializers[5].numElements(), 1); // a scalar
  EXPECT_EQ(model.initializers[5].bytes, bytesOf<uint32_t>({0xDEADBEEF}));
  EXPECT_EQ(model.initializers[6].bytes, bytesOf<double>({0.1}));

  ASSERT_EQ(model.nodes.size(), 3u);
  EXPECT_EQ(model.nodes[0].name, "Identity_0");
  EXPECT_EQ(model.nodes[1].name, "my_constant");
  const Attribute *constantValue = model.nodes[1].findAttribute("value");
  ASSERT_NE(constantValue, nullptr);
  EXPECT_EQ(constantValue->kind, Attribute::Kind::Tensor);
  EXPECT_EQ(constantValue->t.bytes, bytesOf<int32_t>({-7}));
  const Node &splitNode = model.nodes[2];
  EXPECT_EQ(splitNode.name, "Split_2");
  EXPECT_EQ(splitNode.domain, "ai.onnx");
  EXPECT_EQ(splitNode.inputs, (std::vector<std::string>{"x", ""}));
  EXPECT_EQ(splitNode.outputs, (std::vector<std::string>{"a", "b"}));
  ASSERT_NE(splitNode.findAttribute("split"), nullptr);
  EXPECT_EQ(splitNode.findAttribute("split")->kind, Attribute::Kind::Ints);
  EXPECT_EQ(splitNode.findAttribute("split")->ints,
            (std::vector<int64_t>{1, 3}));
}

TEST(OnnxModelTest, OtherAttributeKinds) {
  onnx::ModelProto proto = minimalModel();
  onnx::NodeProto *node = proto.mutable_graph()->mutable_node(0);
  onnx::AttributeProto *graphAttr = node->add_attribute();
  graphAttr->set_name("body");
  graphAttr->set_type(onnx::AttributeProto::GRAPH);
  graphAttr->mutable_g()->set_name("sub");
  onnx::AttributeProto *reference = node->add_attribute();
  reference->set_name("alpha");
  reference->set_type(onnx::AttributeProto::FLOAT);
  reference->set_ref_attr_name("outer_alpha");
  onnx::AttributeProto *strings = node->add_attribute();
  strings->set_name("names");
  strings->set_type(onnx::AttributeProto::STRINGS);
  strings->add_strings("a");
  strings->add_strings("b");

  Model model = parseOk(serialize(proto), /*textual=*/false);
  const Node &parsed = model.nodes[0];
  EXPECT_EQ(parsed.findAttribute("body")->kind, Attribute::Kind::Other);
  EXPECT_EQ(parsed.findAttribute("alpha")->kind, Attribute::Kind::Other);
  EXPECT_EQ(parsed.findAttribute("names")->kind, Attribute::Kind::Strings);
  EXPECT_EQ(parsed.findAttribute("names")->strings,
            (std::vector<std::string>{"a", "b"}));
}

TEST(OnnxModelTest, NonTensorValueHasNoElemType) {
  onnx::ModelProto proto = minimalModel();
  onnx::ValueInfoProto *output = proto.mutable_graph()->mutable_output(0);
  output->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(onnx::TensorProto::FLOAT);
  proto.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->clear_shape();
  Model model = parseOk(serialize(proto), /*textual=*/false);
  EXPECT_EQ(model.outputs[0].elemType, 0);
  EXPECT_FALSE(model.outputs[0].hasShape);
  EXPECT_EQ(model.inputs[0].elemType, int32_t(DataType::Float));
  EXPECT_FALSE(model.inputs[0].hasShape);
}

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

TEST(OnnxModelTest, EmptyStringTensorIsAccepted) {
  onnx::ModelProto proto = minimalModel();
  addInitializer(*proto.mutable_graph(), "str", onnx::TensorProto::STRING, {0});
  Model model = parseOk(serialize(proto), false);
  ASSERT_EQ(model.initializers.size(), 1u);
  EXPECT_EQ(model.initializers[0].numElements(), 0);
  EXPECT_TRUE(model.initializers[0].bytes.empty());
}

TEST(OnnxModelTest, UnknownDataTypeIsKeptForTheImporter) {
  onnx::ModelProto proto = minimalModel();
  addInitializer(*proto.mutable_graph(), "f8", 17, {2})
      ->set_raw_data(std::string("\x01\x02", 2));
  Model model = parseOk(serialize(proto), false);
  EXPECT_EQ(model.initializers[0].dataType, 17);
  EXPECT_EQ(model.initializers[0].bytes, (std::vector<char>{1, 2}));
}

TEST(OnnxModelTest, InitializerListedAsInputIsNotAnInput) {
  onnx::ModelProto proto = minimalModel();
  onnx::GraphProto &graph = *proto.mutable_graph();
  addInitializer(graph, "W", onnx::TensorProto::FLOAT, {1})->add_float_data(2);
  addTensorInput(graph, "W", onnx::TensorProto::FLOAT, {1});
  addTensorInput(graph, "h", onnx::TensorProto::FLOAT, {1});
  Model model = parseOk(serialize(proto), false);
  ASSERT_EQ(model.inputs.size(), 2u);
  EXPECT_EQ(model.inputs[0].name, "x");
  EXPECT_EQ(model.inputs[1].name, "h");
  ASSERT_EQ(model.initializers.size(), 1u);
  EXPECT_EQ(model.initializers[0].name, "W");
}

TEST(OnnxModelTest, ReadModelMissingFile) {
  Model model;
  std::string error;
  std::string path = ::testing::TempDir() + "does_not_exist.onnx";
  EXPECT_FALSE(readModel(path, model, error));
  EXPECT_EQ(error, path + ": cannot open: No such file or directory");
}

TEST(OnnxModelTest, ReadModelPicksTheSyntaxFromTheFileName) {
  std::string binaryPath =
      writeTempFile("onnxmodel_test.onnx", serialize(minimalModel()));
  std::string textPath = writeTempFile("onnxmodel_test.onnxtxt", kTextModel);
  Model model;
  std::string error;
  ASSERT_TRUE(readModel(binaryPath, model, error)) << error;
  EXPECT_EQ(model.path, binaryPath);
  EXPECT_EQ(model.graphName, "g");
  ASSERT_TRUE(readModel(textPath, model, error)) << error;
  EXPECT_EQ(model.graphName, "agraph");
  // The text read as binary is not a model.
  std::string misnamed = writeTempFile("onnxmodel_text.onnx", kTextModel);
  EXPECT_FALSE(readModel(misnamed, model, error));
  EXPECT_TRUE(contains(error, misnamed + ": not a valid ONNX model"));
  std::remove(binaryPath.c_str());
  std::remove(textPath.c_str());
  std::remove(misnamed.c_str());
}

TEST(OnnxModelTest, ReadModelOnADirectory) {
  Model model;
  std::string error;
  EXPECT_FALSE(readModel(::testing::TempDir(), model, error));
  EXPECT_TRUE(contains(error, "cannot read"));
}

TEST(OnnxModelTest, DataTypeHelpers) {
  EXPECT_STREQ(dataTypeName(int32_t(DataType::Float)), "float");
  EXPECT_STREQ(dataTypeName(int32_t(DataType::BFloat16)), "bfloat16");
  EXPECT_STREQ(dataTypeName(15), "complex128");
  EXPECT_STREQ(dataTypeName(17), "unknown");
  EXPECT_STREQ(dataTypeName(-1), "unknown");
  EXPECT_EQ(dataTypeSize(int32_t(DataType::Float16)), 2u);
  EXPECT_EQ(dataTypeSize(int32_t(DataType::Int64)), 8u);
  EXPECT_EQ(dataTypeSize(int32_t(DataType::Bool)), 1u);
  EXPECT_EQ(dataTypeSize(15), 16u);
  EXPECT_EQ(dataTypeSize(int32_t(DataType::String)), 0u);
  EXPECT_EQ(dataTypeSize(99), 0u);
  Tensor tensor;
  EXPECT_EQ(tensor.numElements(), 1);
  tensor.dims = {2, 3, 4};
  EXPECT_EQ(tensor.numElements(), 24);
  tensor.dims = {5, 0};
  EXPECT_EQ(tensor.numElements(), 0);
}
