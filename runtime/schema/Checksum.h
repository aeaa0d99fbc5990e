//===- Checksum.h - The payload checksum of a cellpack ---------*- C++ -*-===//
//
// FNV-1a 64 over bytes, shared by the writer (cellc) and the loader
// (cellrun) of the artifact. Header-only so that neither side links the other.
//
//===----------------------------------------------------------------------===//
#ifndef CELLPACK_CHECKSUM_H
#define CELLPACK_CHECKSUM_H

#include <cstddef>
#include <cstdint>

namespace cellpack {

/// Format version written by this cellc and the only one this cellrun reads.
/// 2: every cell's CUDA code defines cellrun_copy_rows (RowCopyKernel.h).
/// 3: roles memory and memory_mask; opcodes Erf..ReduceMax and RowMatMul.
/// 4: KernelStep.blocks_per_row (a reader of 3 would launch one block a row).
constexpr uint32_t kFormatVersion = 4;

inline uint64_t checksum(const uint8_t *data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

} // namespace cellpack

#endif // CELLPACK_CHECKSUM_H
