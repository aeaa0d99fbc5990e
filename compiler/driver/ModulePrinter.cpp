//===- ModulePrinter.cpp - How cellc shows what it imported --------------===//
#include "compiler/driver/ModulePrinter.h"

#include "cell/IR/CellOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using mlir::cell::CellOp;
using mlir::cell::ConstantOp;

namespace {
struct WeightStats {
  int64_t blobs = 0;
  int64_t bytes = 0;
};
} // namespace

static WeightStats weightsOf(Operation *root) {
  WeightStats stats;
  root->walk([&](ConstantOp constant) {
    auto blob = constant.getValue().dyn_cast<DenseResourceElementsAttr>();
    if (!blob)
      return;
    auto type = blob.getType().cast<ShapedType>();
    stats.blobs += 1;
    stats.bytes +=
        type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
  });
  return stats;
}

void cellc::printModule(ModuleOp module, llvm::raw_ostream &os,
                        bool withWeights) {
  if (withWeights) {
    module.print(os);
    return;
  }
  std::string text;
  llvm::raw_string_ostream buffer(text);
  module.print(buffer);
  size_t resources = text.find("\n{-#");
  if (resources != std::string::npos)
    text.resize(resources + 1);
  os << text;
  WeightStats stats = weightsOf(module);
  if (stats.blobs > 0)
    os << "// " << stats.blobs << " weight blob(s), " << stats.bytes
       << " bytes, not printed (--print-weights prints them)\n";
}

static const char *roleLetter(mlir::cell::Role role) {
  switch (role) {
  case mlir::cell::Role::Input:
    return "in";
  case mlir::cell::Role::State:
    return "state";
  case mlir::cell::Role::Child:
    return "child";
  case mlir::cell::Role::Output:
    return "out";
  case mlir::cell::Role::Memory:
    return "memory";
  case mlir::cell::Role::MemoryMask:
    return "mask";
  }
  return "?";
}

void cellc::printSummary(ModuleOp module, llvm::raw_ostream &os) {
  for (CellOp cell : module.getOps<CellOp>()) {
    os << "cell " << cell.getSymName() << ": (";
    for (unsigned i = 0; i < cell.getNumArguments(); ++i)
      os << (i ? ", " : "") << cell.getArgumentName(i) << ":"
         << roleLetter(cell.getArgumentRole(i));
    os << ") -> (";
    for (unsigned i = 0; i < cell.getNumResults(); ++i)
      os << (i ? ", " : "") << cell.getResultName(i) << ":"
         << roleLetter(cell.getResultRole(i));
    int64_t ops = 0;
    cell.getBody().walk([&](Operation *) { ++ops; });
    WeightStats weights = weightsOf(cell);
    os << "), " << ops << " ops, "
       << llvm::format("%.1f", weights.bytes / 1024.0) << " KiB weights";
    if (auto sizes =
            cell->getAttrOfType<DenseI64ArrayAttr>("cell.batch_sizes")) {
      os << ", batch sizes {";
      llvm::interleaveComma(sizes.asArrayRef(), os);
      os << "}";
    }
    if (auto priority = cell->getAttrOfType<IntegerAttr>("cell.priority"))
      os << ", priority " << priority.getInt();
    os << "\n";
  }
}
