//===- OnnxModelTest.cpp - Tests for reading ONNX models ------------------===//
//
// Builds ONNX models in memory (protobuf API or textual syntax), reads them
// with cellc::onnx_model and checks the structs, the tensor bytes, and
// reading files. The one-line messages for malformed, truncated and
// unsupported files are tested in OnnxModelErrorsTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "OnnxModelTests.h"

#include "compiler/import/OnnxModel.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>

using namespace cellc::onnx_model;
using namespace cellc::testing;

namespace {

/// Parses `contents` as "test.onnx"; fails the test on error.
Model parseOk(const std::string &contents, bool textual) {
  Model model;
  std::string error;
  EXPECT_TRUE(parseModel(contents, textual, "test.onnx", model, error))
      << error;
  return model;
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

/// Initializers of `graph` in every storage: raw_data (`rawValues`, also
/// listed as a graph input as older exporters do), float_data, int64_data,
/// FLOAT16 and BOOL in int32_data, a UINT32 scalar in uint64_data and
/// double_data.
void addEveryTensorStorage(onnx::GraphProto &graph,
                           const std::vector<float> &rawValues) {
  addInitializer(graph, "raw", onnx::TensorProto::FLOAT, {2, 3})
      ->set_raw_data(
          std::string(reinterpret_cast<const char *>(rawValues.data()),
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
}

/// A named Constant node (an INT32 tensor attribute) and a Split node with
/// an omitted input and an INTS attribute, after the nodes of `graph`.
void addConstantAndSplit(onnx::GraphProto &graph) {
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
  addEveryTensorStorage(graph, rawValues);
  addConstantAndSplit(graph);

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
