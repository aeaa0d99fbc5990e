//===- CheckHelpers.h - Helpers of the artifact checks ----------*- C++ -*-===//
//
// Small functions shared by ArtifactChecks.cpp and StepChecks.cpp: failure
// statuses, names and shapes for messages, enum range checks, and overflow-
// checked tensor sizes.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_ARTIFACT_CHECKHELPERS_H
#define CELLRUN_ARTIFACT_CHECKHELPERS_H

#include "artifact/Artifact.h"
#include "cellrun/Status.h"

#include "cellpack_generated.h"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace cellrun::detail::checks {

using I64Vector = flatbuffers::Vector<int64_t>;
template <typename T>
using TableVector = flatbuffers::Vector<flatbuffers::Offset<T>>;

inline Status fail(const std::string &message) {
  return Status(StatusCode::DataLoss, message);
}

inline std::string str(const flatbuffers::String *s) {
  return s ? s->str() : "";
}

inline std::string quoted(const flatbuffers::String *s) {
  return "'" + str(s) + "'";
}

template <typename V> inline uint32_t sizeOf(const V *vector) {
  return vector ? vector->size() : 0;
}

/// True when `value` is one of the enum's declared values (the Verifier does
/// not check enums, so a file can hold any number in an enum field).
template <typename E, size_t N>
inline bool isKnown(E value, const E (&all)[N]) {
  for (E known : all)
    if (known == value)
      return true;
  return false;
}

template <typename E> inline std::string enumNumber(E value) {
  return std::to_string(
      static_cast<int>(static_cast<std::underlying_type_t<E>>(value)));
}

inline std::string formatShape(const I64Vector *shape) {
  std::string text = "[";
  for (uint32_t i = 0; i < sizeOf(shape); ++i)
    text += (i ? ", " : "") + std::to_string(shape->Get(i));
  return text + "]";
}

using Dims = std::vector<int64_t>;

inline std::string formatDims(const Dims &dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

/// The Verifier checks only the 4-byte alignment of a vector's length, so
/// the elements of a [long] in a hostile file can sit at 4 mod 8; reading
/// them would be misaligned. Every [long] is checked before it is read.
inline bool isAligned(const I64Vector *vector) {
  // An empty vector is not aligned by the builder, and nothing is read.
  return !vector || vector->size() == 0 ||
         reinterpret_cast<uintptr_t>(vector->data()) % alignof(int64_t) == 0;
}

/// Bytes of a dense tensor of `shape` and `dtype` (a missing shape is a
/// scalar), or an explanation in `problem`.
inline bool denseBytes(const I64Vector *shape, cellpack::DType dtype,
                       uint64_t &bytes, std::string &problem) {
  if (!isAligned(shape)) {
    problem = "the shape is not 8-byte aligned in the file";
    return false;
  }
  uint64_t size = dtypeSize(dtype);
  if (size == 0) {
    problem = "unknown dtype " + enumNumber(dtype);
    return false;
  }
  for (uint32_t i = 0; i < sizeOf(shape); ++i) {
    int64_t dim = shape->Get(i);
    if (dim < 0) {
      problem = "negative dimension in shape " + formatShape(shape);
      return false;
    }
    if (__builtin_mul_overflow(size, static_cast<uint64_t>(dim), &size)) {
      problem = "shape " + formatShape(shape) + " is too large";
      return false;
    }
  }
  bytes = size;
  return true;
}

inline bool shapeIs(const I64Vector *shape, const Dims &dims) {
  if (sizeOf(shape) != dims.size())
    return false;
  for (uint32_t i = 0; i < dims.size(); ++i)
    if (shape->Get(i) != dims[i])
      return false;
  return true;
}

} // namespace cellrun::detail::checks

#endif // CELLRUN_ARTIFACT_CHECKHELPERS_H
