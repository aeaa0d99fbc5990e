//===- OnnxModel.h - ONNX model read into plain C++ structs ----*- C++ -*-===//
//
// The only part of cellc that touches ONNX/protobuf. It reads a binary `.onnx`
// file or ONNX's textual syntax (`.onnxtxt`) and hands back plain structs, so
// the MLIR importer (built without RTTI/exceptions, like LLVM) never sees
// protobuf.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_IMPORT_ONNXMODEL_H
#define CELL_IMPORT_ONNXMODEL_H

#include <cstdint>
#include <string>
#include <vector>

namespace cellc::onnx_model {

/// ONNX TensorProto.DataType values that cellc understands; others keep their
/// numeric value and are rejected by the importer with the type's name.
enum class DataType : int32_t {
  Undefined = 0,
  Float = 1,
  Uint8 = 2,
  Int8 = 3,
  Uint16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  Uint32 = 12,
  Uint64 = 13,
  BFloat16 = 16,
};

/// Human-readable name of an ONNX data type ("float", "int64", ...).
const char *dataTypeName(int32_t dataType);
/// Bytes per element, or 0 for types without a fixed size (string, undefined).
unsigned dataTypeSize(int32_t dataType);

/// A tensor with its data as packed little-endian bytes, whatever field of the
/// TensorProto held it (raw_data, float_data, int64_data, ...).
struct Tensor {
  std::string name;
  int32_t dataType = 0;
  std::vector<int64_t> dims;
  std::vector<char> bytes;
  int64_t numElements() const;
};

/// One dimension of a graph input/output: a known size, a named symbol
/// (`dim_param`), or nothing at all.
struct Dim {
  enum class Kind { Known, Symbolic, Unknown } kind = Kind::Unknown;
  int64_t value = 0;  // when Known
  std::string symbol; // when Symbolic
};

struct ValueInfo {
  std::string name;
  int32_t elemType = 0; // 0 when the value has no tensor type
  bool hasShape = false;
  std::vector<Dim> dims;
};

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Other };
  std::string name;
  Kind kind = Kind::Other;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string name; // may be empty in the file; the reader then names it
                    // "<OpType>_<index>" so every diagnostic can name it
  std::string opType;
  std::string domain;              // "" or "ai.onnx" for the default domain
  std::vector<std::string> inputs; // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::vector<Attribute> attributes;

  const Attribute *findAttribute(const std::string &attrName) const;
};

struct Model {
  std::string path; // as given to readModel
  int64_t irVersion = 0;
  int64_t opsetVersion =
      0; // of the default ("" / "ai.onnx") domain; 0 if absent
  std::string producerName;
  std::string producerVersion;
  std::string graphName;
  std::vector<ValueInfo> inputs; // graph inputs that are not initializers
  std::vector<ValueInfo> outputs;
  std::vector<Tensor> initializers;
  std::vector<Node> nodes;
};

/// Reads `path`: ONNX textual syntax when the name ends in `.onnxtxt`, binary
/// protobuf otherwise. On failure returns false and sets `error` to one line
/// that says what is wrong (missing file, truncated or malformed protobuf,
/// parse error with position, external data, tensor whose data does not match
/// its shape, ...). Never throws and never aborts.
bool readModel(const std::string &path, Model &model, std::string &error);

/// Same as readModel for a model held in memory; `textual` selects the syntax
/// and `displayName` is used in messages and stored as `model.path`.
bool parseModel(const std::string &contents, bool textual,
                const std::string &displayName, Model &model,
                std::string &error);

} // namespace cellc::onnx_model

#endif // CELL_IMPORT_ONNXMODEL_H
