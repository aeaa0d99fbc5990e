//===- KernelGrid.h - Blocks a generated kernel's launch takes -*- C++ -*-===//
//
// The grid of a KernelStep for a task of `rows` active rows, as cellc's
// KernelInfo::gridSize computes it: enough blocks of block_size threads for
// row_width threads a row (Elementwise), or blocks_per_row blocks a row
// (RowReduction). Part of the contract between cellc and cellrun: the CUDA
// backend launches it, the emulation tests run it, and cellc gives a row no
// more than kMaxBlocksPerRow blocks (the artifact checks hold it to that).
//
//===----------------------------------------------------------------------===//
#ifndef CELLPACK_KERNELGRID_H
#define CELLPACK_KERNELGRID_H

#include "cellpack_generated.h"

#include <cstdint>

namespace cellpack {

/// The most blocks a row kernel takes a row (so that 512 rows of them stay
/// far below CUDA's 2^31 - 1 blocks a grid).
constexpr uint32_t kMaxBlocksPerRow = 4096;

inline int64_t kernelGridSize(const KernelStep &step, int64_t rows) {
  if (step.shape() == KernelShape::RowReduction)
    return rows * static_cast<int64_t>(step.blocks_per_row());
  int64_t threads = rows * step.row_width();
  return (threads + step.block_size() - 1) / step.block_size();
}

} // namespace cellpack

#endif // CELLPACK_KERNELGRID_H
