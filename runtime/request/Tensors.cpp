//===- Tensors.cpp - Protocol element types and tensor values -------------===//
#include "cellrun/Tensors.h"

#include "artifact/ElementIO.h"

#include <cstring>

using namespace cellrun;

namespace {

struct TypeInfo {
  TensorType type;
  const char *name;
  size_t size;
};

constexpr TypeInfo kTypes[] = {
    {TensorType::Bool, "BOOL", 1},     {TensorType::UInt8, "UINT8", 1},
    {TensorType::UInt16, "UINT16", 2}, {TensorType::UInt32, "UINT32", 4},
    {TensorType::UInt64, "UINT64", 8}, {TensorType::Int8, "INT8", 1},
    {TensorType::Int16, "INT16", 2},   {TensorType::Int32, "INT32", 4},
    {TensorType::Int64, "INT64", 8},   {TensorType::Fp16, "FP16", 2},
    {TensorType::Fp32, "FP32", 4},     {TensorType::Fp64, "FP64", 8},
    {TensorType::Bytes, "BYTES", 0},
};

template <typename T> T load(const std::vector<uint8_t> &data, size_t index) {
  T value;
  std::memcpy(&value, data.data() + index * sizeof(T), sizeof(T));
  return value;
}

} // namespace

const char *cellrun::tensorTypeName(TensorType type) {
  return kTypes[static_cast<int>(type)].name;
}

std::optional<TensorType> cellrun::parseTensorType(std::string_view name) {
  for (const TypeInfo &info : kTypes)
    if (name == info.name)
      return info.type;
  return std::nullopt;
}

size_t cellrun::tensorTypeSize(TensorType type) {
  return kTypes[static_cast<int>(type)].size;
}

bool cellrun::isIntegerTensorType(TensorType type) {
  return type >= TensorType::UInt8 && type <= TensorType::Int64;
}

bool cellrun::isFloatTensorType(TensorType type) {
  return type == TensorType::Fp16 || type == TensorType::Fp32 ||
         type == TensorType::Fp64;
}

int64_t NamedTensor::elementCount() const {
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  return count;
}

int64_t NamedTensor::integerAt(size_t index) const {
  switch (type) {
  case TensorType::Bool:
  case TensorType::UInt8:
    return load<uint8_t>(data, index);
  case TensorType::UInt16:
    return load<uint16_t>(data, index);
  case TensorType::UInt32:
    return load<uint32_t>(data, index);
  case TensorType::UInt64: {
    uint64_t value = load<uint64_t>(data, index);
    return value > uint64_t(INT64_MAX) ? -1 : static_cast<int64_t>(value);
  }
  case TensorType::Int8:
    return load<int8_t>(data, index);
  case TensorType::Int16:
    return load<int16_t>(data, index);
  case TensorType::Int32:
    return load<int32_t>(data, index);
  case TensorType::Int64:
    return load<int64_t>(data, index);
  default:
    return static_cast<int64_t>(numberAt(index));
  }
}

double NamedTensor::numberAt(size_t index) const {
  switch (type) {
  case TensorType::Fp16:
    return cpu::halfToFloat(load<uint16_t>(data, index));
  case TensorType::Fp32:
    return load<float>(data, index);
  case TensorType::Fp64:
    return load<double>(data, index);
  case TensorType::Bytes:
    return 0;
  default:
    return static_cast<double>(integerAt(index));
  }
}
