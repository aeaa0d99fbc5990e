//===- OnnxModelTests.h - What the ONNX model tests share -------*- C++ -*-===//
//
// A valid textual model, a minimal binary one to build on, and the checks
// the tests of cellc::onnx_model make of a parse that must fail.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_ONNXMODELTESTS_H
#define CELL_TEST_ONNXMODELTESTS_H

#include "compiler/import/OnnxModel.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cellc::testing {

/// Whether `text` contains `part`, saying what it is when not.
inline ::testing::AssertionResult contains(const std::string &text,
                                           const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << text << "\" does not contain \"" << part << "\"";
}

/// A valid model in the ONNX textual syntax.
const char *const kTextModel = R"(<ir_version: 8, opset_import: ["" : 14]>
agraph (float[N, 64] x, float[N, 64] h) => (float[N, 64] y) {
  s = Add(x, h)
  y = Tanh(s)
}
)";

/// Parses `contents` expecting failure; returns the message.
inline std::string parseError(const std::string &contents, bool textual) {
  cellc::onnx_model::Model model;
  std::string error;
  EXPECT_FALSE(cellc::onnx_model::parseModel(contents, textual, "test.onnx",
                                             model, error));
  EXPECT_EQ(error.find('\n'), std::string::npos) << "not one line: " << error;
  EXPECT_EQ(error.rfind("test.onnx: ", 0), 0u) << error;
  return error;
}

/// Adds initializer `name` of `dataType` and `dims` to `graph`, without
/// data.
inline onnx::TensorProto *addInitializer(onnx::GraphProto &graph,
                                         const std::string &name,
                                         int32_t dataType,
                                         std::vector<int64_t> dims) {
  onnx::TensorProto *tensor = graph.add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(dataType);
  for (int64_t dim : dims)
    tensor->add_dims(dim);
  return tensor;
}

/// A model with one input `x` (float[N, 4]), one output `y` and one Identity.
inline onnx::ModelProto minimalModel() {
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

/// `model` in the binary protobuf encoding.
inline std::string serialize(const onnx::ModelProto &model) {
  std::string bytes;
  EXPECT_TRUE(model.SerializeToString(&bytes));
  return bytes;
}

} // namespace cellc::testing

#endif // CELL_TEST_ONNXMODELTESTS_H
