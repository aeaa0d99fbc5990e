//===- ElementIO.h - Reading and writing tensor elements by dtype -*- C++ -*-=//
//
// Host code (the CPU backend, the request parser, cell graphs' outputs)
// keeps float values as float and integer values as int64; these helpers
// convert from and to the element types of the artifact (including fp16
// and bf16 bit patterns). In namespace cpu for the CPU backend's sake.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_ARTIFACT_ELEMENTIO_H
#define CELLRUN_ARTIFACT_ELEMENTIO_H

#include "cellpack_generated.h"

#include <cstdint>
#include <cstring>

namespace cellrun::cpu {

inline bool isFloatType(cellpack::DType type) {
  return type == cellpack::DType::F32 || type == cellpack::DType::F64 ||
         type == cellpack::DType::F16 || type == cellpack::DType::BF16;
}

inline size_t elementSize(cellpack::DType type) {
  switch (type) {
  case cellpack::DType::F64:
  case cellpack::DType::I64:
    return 8;
  case cellpack::DType::F32:
  case cellpack::DType::I32:
    return 4;
  case cellpack::DType::F16:
  case cellpack::DType::BF16:
  case cellpack::DType::I16:
    return 2;
  default:
    return 1;
  }
}

/// Bytes of one row of `spec` (its row shape's elements).
inline size_t rowBytes(const cellpack::TensorSpec &spec) {
  size_t bytes = elementSize(spec.dtype());
  if (spec.row_shape())
    for (int64_t dim : *spec.row_shape())
      bytes *= static_cast<size_t>(dim > 0 ? dim : 0);
  return bytes;
}

/// Bytes of the value `ref` names (its shape's elements).
inline uint64_t valueBytes(const cellpack::ValueRef &ref) {
  uint64_t bytes = elementSize(ref.dtype());
  if (ref.shape())
    for (int64_t dim : *ref.shape())
      bytes *= static_cast<uint64_t>(dim > 0 ? dim : 0);
  return bytes;
}

/// Whether `ref` is a workspace value sharing a byte with [begin, end).
inline bool overlapsWorkspace(const cellpack::ValueRef *ref, uint64_t begin,
                              uint64_t end) {
  return ref && ref->kind() == cellpack::ValueKind::Workspace &&
         ref->offset() < end && begin < ref->offset() + valueBytes(*ref);
}

inline float halfToFloat(uint16_t bits) {
  uint32_t sign = (bits & 0x8000u) << 16, exponent = (bits >> 10) & 0x1f,
           mantissa = bits & 0x3ffu, out;
  if (exponent == 0) {
    if (mantissa == 0) {
      out = sign;
    } else { // subnormal: normalise
      exponent = 127 - 15 + 1;
      while (!(mantissa & 0x400u)) {
        mantissa <<= 1;
        --exponent;
      }
      out = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    out = sign | 0x7f800000u | (mantissa << 13);
  } else {
    out = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &out, 4);
  return value;
}

inline uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t sign = (bits >> 16) & 0x8000u;
  int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffffu;
  if (((bits >> 23) & 0xff) == 0xff) // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0));
  if (exponent >= 31)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (exponent <= 0) {
    if (exponent < -10)
      return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exponent);
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1),
             midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half =
      sign | (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1)))
    ++half; // may carry into the exponent, which is the right rounding
  return static_cast<uint16_t>(half);
}

inline float bf16ToFloat(uint16_t bits) {
  uint32_t out = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &out, 4);
  return value;
}

inline uint16_t floatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // nan stays nan
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1); // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

/// Element `index` of `data` (of `type`) as a float.
inline float loadFloat(const void *data, cellpack::DType type, int64_t index) {
  const char *at = static_cast<const char *>(data) + index * elementSize(type);
  switch (type) {
  case cellpack::DType::F32: {
    float v;
    std::memcpy(&v, at, 4);
    return v;
  }
  case cellpack::DType::F64: {
    double v;
    std::memcpy(&v, at, 8);
    return static_cast<float>(v);
  }
  case cellpack::DType::F16: {
    uint16_t v;
    std::memcpy(&v, at, 2);
    return halfToFloat(v);
  }
  default: {
    uint16_t v;
    std::memcpy(&v, at, 2);
    return bf16ToFloat(v);
  }
  }
}

/// Element `index` of `data` (of an integer `type`) as an int64.
inline int64_t loadInt(const void *data, cellpack::DType type, int64_t index) {
  const char *at = static_cast<const char *>(data) + index * elementSize(type);
  switch (type) {
  case cellpack::DType::I64: {
    int64_t v;
    std::memcpy(&v, at, 8);
    return v;
  }
  case cellpack::DType::I32: {
    int32_t v;
    std::memcpy(&v, at, 4);
    return v;
  }
  case cellpack::DType::I16: {
    int16_t v;
    std::memcpy(&v, at, 2);
    return v;
  }
  case cellpack::DType::I8:
    return static_cast<int8_t>(*at);
  default:
    return *at != 0;
  }
}

inline void storeFloat(void *data, cellpack::DType type, int64_t index,
                       float value) {
  char *at = static_cast<char *>(data) + index * elementSize(type);
  if (type == cellpack::DType::F32) {
    std::memcpy(at, &value, 4);
  } else if (type == cellpack::DType::F64) {
    double v = value;
    std::memcpy(at, &v, 8);
  } else {
    uint16_t v =
        type == cellpack::DType::F16 ? floatToHalf(value) : floatToBf16(value);
    std::memcpy(at, &v, 2);
  }
}

inline void storeInt(void *data, cellpack::DType type, int64_t index,
                     int64_t value) {
  char *at = static_cast<char *>(data) + index * elementSize(type);
  switch (type) {
  case cellpack::DType::I64:
    std::memcpy(at, &value, 8);
    break;
  case cellpack::DType::I32: {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(at, &v, 4);
    break;
  }
  case cellpack::DType::I16: {
    int16_t v = static_cast<int16_t>(value);
    std::memcpy(at, &v, 2);
    break;
  }
  default:
    *at = static_cast<char>(type == cellpack::DType::Bool ? value != 0 : value);
  }
}

} // namespace cellrun::cpu

#endif // CELLRUN_ARTIFACT_ELEMENTIO_H
