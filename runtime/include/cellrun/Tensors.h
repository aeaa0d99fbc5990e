//===- Tensors.h - Requests and results as named tensors -------*- C++ -*-===//
//
// The tensor view of a model, as inference protocols (KServe v2 / Open
// Inference Protocol) see it: the named, typed inputs a request carries and
// the outputs a result has, with their shapes (-1 where a request decides).
//  - chain, seq2seq: one tensor per request input of the first cell, named
//    as the input, shape [L] for one value a step (tokens) or [L, ...row];
//  - tree: "children" ([N, arity], integers, -1 for a leaf) and one tensor
//    per leaf input with one row per leaf, leaves in node order;
//  - outputs: chain: every emitted output [L, ...row] and final_<state>
//    [...row]; seq2seq: "tokens" [T]; tree: the root's outputs [...row].
// Front ends decode the wire format into NamedTensor (values as packed
// little-endian bytes of the tensor's type) and call
// RequestParser::fromTensors, which checks everything the JSON request
// parser checks and names the tensor, step or node at fault.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_TENSORS_H
#define CELLRUN_TENSORS_H

#include "cellrun/Request.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cellrun {

/// The element types of the protocol.
enum class TensorType {
  Bool,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Int8,
  Int16,
  Int32,
  Int64,
  Fp16,
  Fp32,
  Fp64,
  Bytes
};

/// "BOOL", "UINT8", ..., "FP32", "BYTES".
const char *tensorTypeName(TensorType type);
std::optional<TensorType> parseTensorType(std::string_view name);
/// Bytes of one element (0 for BYTES, which has no fixed size).
size_t tensorTypeSize(TensorType type);
bool isIntegerTensorType(TensorType type);
bool isFloatTensorType(TensorType type);

struct TensorDescription {
  std::string name;
  TensorType type = TensorType::Fp32;
  /// Other types accepted for this input (tokens: INT32 besides INT64).
  std::vector<TensorType> alsoAccepted;
  std::vector<int64_t> shape; // -1: decided by each request
  /// Integer inputs that index a table (token ids): values 0..limit-1;
  /// 0 when any value goes.
  int64_t valueLimit = 0;
};

struct ModelSignature {
  std::vector<TensorDescription> inputs, outputs;
};

/// One tensor of a request: `data` holds the elements, row-major, packed
/// little-endian in `type`.
struct NamedTensor {
  std::string name;
  TensorType type = TensorType::Fp32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  int64_t elementCount() const;
  /// Element `index` as an integer or as a number (converted from `type`).
  int64_t integerAt(size_t index) const;
  double numberAt(size_t index) const;
};

/// What a request says besides its tensors.
struct TensorRequestOptions {
  std::string id;
  int64_t maxDecodeLength = 0; // seq2seq; 0: the model's limit
  double deadlineMicros = 0;   // 0: none
  SessionChunk session;        // chain models
};

} // namespace cellrun

#endif // CELLRUN_TENSORS_H
