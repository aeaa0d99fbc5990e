//===- WeightData.h - Reading and making constant tensors ------*- C++ -*-===//
//
// Byte-level access to the data of `cell.constant` values, whether inline
// dense elements or dense resource blobs, and creation of new weight blobs.
// Used by the importer and by the passes that rewrite weights.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_IR_WEIGHTDATA_H
#define CELL_IR_WEIGHTDATA_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::cell {

/// The packed little-endian bytes of a constant, one element after another
/// (splats expanded); nullopt for data that is not available (a resource
/// without its blob) or element types not byte-sized.
std::optional<std::vector<char>> constantBytes(ElementsAttr value);

/// A constant of `type` holding `bytes`: a resource blob named after `name`
/// (made unique) when large, inline dense elements when small.
ElementsAttr makeConstant(RankedTensorType type, ArrayRef<char> bytes,
                          StringRef name);

/// The key of the resource blob behind `value`, or `fallback` for inline
/// constants.
std::string weightName(ElementsAttr value, StringRef fallback);

/// Bytes per element of `type`'s element type (0 if not byte-sized).
unsigned elementBytes(ShapedType type);

} // namespace mlir::cell

#endif // CELL_IR_WEIGHTDATA_H
