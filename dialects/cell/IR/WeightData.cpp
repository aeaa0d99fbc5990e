//===- WeightData.cpp - Reading and making constant tensors --------------===//
#include "cell/IR/WeightData.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

/// Tensors up to this many elements are kept inline (shapes, split sizes,
/// scalars, tiny test weights); larger ones become resource blobs.
static constexpr int64_t kInlineElementLimit = 16;

unsigned cell::elementBytes(ShapedType type) {
  unsigned bits = type.getElementTypeBitWidth();
  return bits % 8 == 0 ? bits / 8 : 0;
}

std::optional<std::vector<char>> cell::constantBytes(ElementsAttr value) {
  auto type = value.getType().cast<ShapedType>();
  unsigned width = elementBytes(type);
  if (width == 0)
    return std::nullopt;
  size_t size = static_cast<size_t>(type.getNumElements()) * width;
  if (auto blob = value.dyn_cast<DenseResourceElementsAttr>()) {
    AsmResourceBlob *data = blob.getRawHandle().getBlob();
    if (!data || data->getData().size() != size)
      return std::nullopt;
    return std::vector<char>(data->getData().begin(), data->getData().end());
  }
  auto dense = value.dyn_cast<DenseElementsAttr>();
  if (!dense)
    return std::nullopt;
  ArrayRef<char> raw = dense.getRawData();
  if (!dense.isSplat())
    return std::vector<char>(raw.begin(), raw.end());
  std::vector<char> bytes;
  bytes.reserve(size);
  for (int64_t i = 0; i < type.getNumElements(); ++i)
    bytes.insert(bytes.end(), raw.begin(), raw.begin() + width);
  return bytes;
}

ElementsAttr cell::makeConstant(RankedTensorType type, ArrayRef<char> bytes,
                                StringRef name) {
  if (type.getNumElements() <= kInlineElementLimit)
    return DenseElementsAttr::getFromRawBuffer(type, bytes);
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      bytes, /*align=*/64, /*dataIsMutable=*/false);
  // The manager renames the blob if the name is taken.
  auto &blobs =
      DenseResourceElementsHandle::getManagerInterface(type.getContext());
  DenseResourceElementsHandle handle = blobs.insert(name, std::move(blob));
  return DenseResourceElementsAttr::get(type, handle);
}

std::string cell::weightName(ElementsAttr value, StringRef fallback) {
  if (auto blob = value.dyn_cast<DenseResourceElementsAttr>())
    return blob.getRawHandle().getKey().str();
  return fallback.str();
}
