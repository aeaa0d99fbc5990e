//===- ManifestBinding.h - Manifest roles onto imported cells --*- C++ -*-===//
#ifndef CELLC_MANIFEST_MANIFESTBINDING_H
#define CELLC_MANIFEST_MANIFESTBINDING_H

#include "cell/IR/CellOps.h"
#include "compiler/manifest/Manifest.h"

#include "mlir/IR/BuiltinOps.h"

namespace cellc {

/// Checks the manifest against the cells imported into `module` (one
/// `cell.cell` per manifest cell, same name) and records it in the IR: roles
/// and their extra keys on arguments and results, `cell.batch_sizes` and
/// `cell.priority` on each cell, `cell.model` and `cell.unfolding` on the
/// module. Errors point at the manifest line that is wrong.
mlir::LogicalResult bindManifest(const Manifest &manifest,
                                 mlir::ModuleOp module);

/// Records batch sizes and priority on a cell imported without a manifest.
void setCellSchedule(mlir::cell::CellOp cell,
                     llvm::ArrayRef<int64_t> batchSizes, int64_t priority);

} // namespace cellc

#endif // CELLC_MANIFEST_MANIFESTBINDING_H
