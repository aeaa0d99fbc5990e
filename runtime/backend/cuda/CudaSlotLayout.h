//===- CudaSlotLayout.h - A task's bytes in its staging slot ---*- C++ -*-===//
//
// Host-side half of the cuda backend's staging (CudaStaging.cpp enqueues
// the copies and kernels), kept apart from CUDA so that it is tested on any
// machine. A slot's host-to-device area holds the ticket, the task's row
// indices (a batch-size block per cell input, then per cell output), then
// per pool of written rows their pool indices and their bytes, then per
// pool of read rows their pool indices; its read-back area holds the read
// rows, pool after pool. Rows are grouped by pool in the order the pools
// first appear (one row-copy kernel a group), in their order within a group:
// the single writes (reads) first, then the columns' rows, column after
// column, which is the order Executor::WriteColumn::appendTo (ReadColumn)
// would give them as single ones. A read row whose destination the device
// writes in place (page-locked results, ExecutorOptions::pinnedResults)
// goes instead into an addressed group of its pool: its pool index, then
// its destination's address, in the host-to-device area, and neither
// read-back bytes nor a delivery. The layout keeps its vectors from task to
// task: nothing is allocated per row, and each row is visited once to count
// and once to fill.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CUDA_CUDASLOTLAYOUT_H
#define CELLRUN_BACKEND_CUDA_CUDASLOTLAYOUT_H

#include "backend/cpu/ThreadPool.h"
#include "base/ValueMemory.h"
#include "exec/Executor.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cellrun::cuda {

/// The ticket at the start of a slot; every block after it starts on 16
/// bytes (the row-copy kernel's widest unit).
constexpr size_t kTicketBytes = 16;
inline size_t align16(size_t bytes) { return (bytes + 15) / 16 * 16; }
/// The bytes a thread of the row-copy kernels moves at once for rows of
/// `rowBytes` (RowCopyKernel.h): addresses must lie on it.
inline size_t copyUnit(size_t rowBytes) {
  return rowBytes % 16 == 0 ? 16 : (rowBytes % 4 == 0 ? 4 : 1);
}

/// A pool as a task's row moves see it: its device address and row size.
struct PoolRef {
  void *pool = nullptr;
  size_t rowBytes = 0;
};

/// Rows of one pool a task moves.
struct PoolGroup {
  void *pool = nullptr;
  size_t rowBytes = 0;
  uint32_t count = 0;
  size_t indices = 0; // offset of the pool-row indices in the slot
  size_t data = 0;    // writes: offset of the bytes in the slot;
                      // reads: offset in the read-back area;
                      // addressed reads: offset of the addresses (one
                      // uint64 a row) in the slot
};

/// The rows a task writes and reads, as the executor gives them (checked:
/// Executor::checkIO, checkColumns): single ones and columns (none where a
/// pointer is null).
struct RowMoves {
  const std::vector<Executor::RowWrite> *writes = nullptr;
  const std::vector<Executor::RowRead> *reads = nullptr;
  const std::vector<Executor::WriteColumn> *writeColumns = nullptr;
  const std::vector<Executor::ReadColumn> *readColumns = nullptr;
};

class SlotLayout {
public:
  /// Lays out a task whose rows written and read are `moves` (input i's
  /// pool is inputs[i], output o's outputs[o]; every input and output they
  /// name within those), after `indexBlocks` batch-size blocks of row
  /// indices. Read rows whose destination `addressable` owns, on their copy
  /// unit, of at least minAddressedRowBytes(), are addressed (none when it
  /// is null: no memory installed, or a cell whose code lacks the kernel).
  void layOut(const RowMoves &moves, const std::vector<PoolRef> &inputs,
              const std::vector<PoolRef> &outputs, size_t indexBlocks,
              uint32_t batch, const ValueMemory *addressable = nullptr);
  /// Bytes of the host-to-device area laid out so far, and of the
  /// read-back area.
  size_t bytes() const { return bytes_; }
  size_t backBytes() const { return backBytes_; }
  const std::vector<PoolGroup> &writeGroups() const { return writeGroups_; }
  const std::vector<PoolGroup> &readGroups() const { return readGroups_; }
  const std::vector<PoolGroup> &addressedGroups() const {
    return addressedGroups_;
  }

  /// Read rows shorter than this go the staged way even into addressable
  /// memory: for the host, an address a row then costs more than the row's
  /// copy (slot_layout_bench, 2026-12-03: even near 256 bytes; 64-byte
  /// rows 19 ns a row addressed against 15 staged and delivered, 4 KB rows
  /// 18 against 140). Benchmarks and tests may lower it.
  static constexpr size_t kMinAddressedRowBytes = 256;
  size_t minAddressedRowBytes() const { return minAddressedRowBytes_; }
  void setMinAddressedRowBytes(size_t bytes) { minAddressedRowBytes_ = bytes; }

  /// Writes into the slot's host area `host` the ticket, the `rows` row
  /// indices of every input and output (rowIndices: inputs first, each in
  /// a `batch`-size block), the written rows (pool indices and bytes) and
  /// the read rows' pool indices (and an addressed row's destination);
  /// appends to `deliveries` each other read row's copy from the read-back
  /// area `hostBack` to its destination. The same moves as layOut;
  /// rowIndices has a block for each of its inputs, then
  /// for each of its outputs, and every row they name is below `rows`.
  void fill(uint8_t *host, uint64_t ticket,
            const std::vector<const std::vector<int32_t> *> &rowIndices,
            uint32_t rows, uint32_t batch, const RowMoves &moves,
            uint8_t *hostBack, std::vector<cpu::RowCopy> &deliveries);

private:
  /// Whether a read row to `destination` is addressed.
  bool addressed(const void *destination, size_t rowBytes) const {
    return addressable_ && rowBytes >= minAddressedRowBytes_ &&
           addressable_->owns(destination) &&
           reinterpret_cast<uintptr_t>(destination) % copyUnit(rowBytes) == 0;
  }

  std::vector<PoolGroup> writeGroups_, readGroups_, addressedGroups_;
  /// Per cell input (output): its group, -1 before its first row.
  std::vector<int32_t> groupOfInput_, groupOfOutput_, addressedGroupOfOutput_;
  const ValueMemory *addressable_ = nullptr;
  size_t minAddressedRowBytes_ = kMinAddressedRowBytes;
  std::vector<size_t> outputRowBytes_; // per cell output
  size_t inputCount_ = 0;        // where the outputs' row-index blocks start
  std::vector<uint32_t> filled_; // per group, rows filled so far
  size_t bytes_ = 0, backBytes_ = 0;
};

} // namespace cellrun::cuda

#endif // CELLRUN_BACKEND_CUDA_CUDASLOTLAYOUT_H
