//===- RowCopyKernel.h - The row copy in every cell's code ---*- C++ -*-===//
//
// Part of the contract between cellc and cellrun: every cell's CUDA program
// defines this kernel (cellc appends the source; it is listed among the
// cell code's kernel_names), and the cuda backend launches it to move a
// task's small host data through its staging buffers in one copy each way:
// rows of request data are scattered from the staging buffer into state
// pools before the task, and the rows the host reads are gathered from the
// pools into the staging buffer after it.
//
// cellrun_copy_rows_to_addresses copies pool rows, by index, to host
// addresses the device writes directly (mapped page-locked results): no copy
// through the staging buffer and none by the host after the task.
//
// cellrun_copy_rows copies `count` rows of `rowBytes` bytes: row r of
// `from` (row fromRows[r], or r when fromRows is null) to row toRows[r] (or
// r) of `to`, 16, 4 or 1 bytes a thread as the row size allows (16-byte
// units need 16-byte aligned buffers). Any grid size works (grid-stride).
// Compiled as C++ for the tests (CELL_CUDA_EMULATION), it also defines a
// launcher that runs it on the CPU.
//
//===----------------------------------------------------------------------===//
#ifndef CELLPACK_ROWCOPYKERNEL_H
#define CELLPACK_ROWCOPYKERNEL_H

namespace cellpack {

constexpr const char *kRowCopyKernelName = "cellrun_copy_rows";
/// Appended since 2026-12: code compiled before lacks it, and the runtime
/// then copies those rows through the host (ExecutorOptions::pinnedResults).
constexpr const char *kRowCopyToAddressesKernelName =
    "cellrun_copy_rows_to_addresses";

constexpr const char *kRowCopyKernelSource = R"cuda(
// Support kernel (cellrun's staging copies): rows between pools and buffers.
#ifndef CELLRUN_COPY_ROWS_DEFINED
#define CELLRUN_COPY_ROWS_DEFINED
extern "C" __global__ void cellrun_copy_rows(
    const unsigned char *__restrict__ from, const int *__restrict__ fromRows,
    unsigned char *__restrict__ to, const int *__restrict__ toRows,
    unsigned rowBytes, unsigned count) {
  cellrun_grid_dependency(); // GridDependency.h, earlier in the program
  unsigned unit = rowBytes % 16u == 0u ? 16u : (rowBytes % 4u == 0u ? 4u : 1u);
  unsigned long long units = rowBytes / unit;
  unsigned long long total = units * count;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i =
           (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < total; i += stride) {
    unsigned long long row = i / units, part = i % units;
    unsigned long long source =
        (unsigned long long)(fromRows ? fromRows[row] : (int)row) * rowBytes +
        part * unit;
    unsigned long long target =
        (unsigned long long)(toRows ? toRows[row] : (int)row) * rowBytes +
        part * unit;
    if (unit == 16u)
      *(uint4 *)(to + target) = *(const uint4 *)(from + source);
    else if (unit == 4u)
      *(unsigned *)(to + target) = *(const unsigned *)(from + source);
    else
      to[target] = from[source];
  }
}
// Rows from a pool to host addresses the device writes in place (mapped
// page-locked results): row fromRows[r] of `from` to to[r].
extern "C" __global__ void cellrun_copy_rows_to_addresses(
    const unsigned char *__restrict__ from, const int *__restrict__ fromRows,
    const unsigned long long *__restrict__ to, unsigned rowBytes,
    unsigned count) {
  cellrun_grid_dependency();
  unsigned unit = rowBytes % 16u == 0u ? 16u : (rowBytes % 4u == 0u ? 4u : 1u);
  unsigned long long units = rowBytes / unit;
  unsigned long long total = units * count;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i =
           (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < total; i += stride) {
    unsigned long long row = i / units, part = i % units;
    const unsigned char *source =
        from + (unsigned long long)fromRows[row] * rowBytes + part * unit;
    unsigned char *target = (unsigned char *)to[row] + part * unit;
    if (unit == 16u)
      *(uint4 *)target = *(const uint4 *)source;
    else if (unit == 4u)
      *(unsigned *)target = *(const unsigned *)source;
    else
      *target = *source;
  }
  // Seen by the host before anything this thread writes later, and so
  // before the task's ticket, which the host polls (written by a copy
  // after the kernel): writes over the bus are not ordered otherwise.
  __threadfence_system();
}
#ifdef CELL_CUDA_EMULATION
extern "C" void cellrun_copy_rows_to_addresses__emulate(void **args,
                                                        unsigned grid,
                                                        unsigned block) {
  cellEmulateLaunch(grid, block, false, [&] {
    cellrun_copy_rows_to_addresses(
        *static_cast<const unsigned char *const *>(args[0]),
        *static_cast<const int *const *>(args[1]),
        *static_cast<const unsigned long long *const *>(args[2]),
        *static_cast<const unsigned *>(args[3]),
        *static_cast<const unsigned *>(args[4]));
  });
}
extern "C" void cellrun_copy_rows__emulate(void **args, unsigned grid,
                                           unsigned block) {
  cellEmulateLaunch(grid, block, false, [&] {
    cellrun_copy_rows(*static_cast<const unsigned char *const *>(args[0]),
                      *static_cast<const int *const *>(args[1]),
                      *static_cast<unsigned char *const *>(args[2]),
                      *static_cast<const int *const *>(args[3]),
                      *static_cast<const unsigned *>(args[4]),
                      *static_cast<const unsigned *>(args[5]));
  });
}
#endif
#endif
)cuda";

/// Threads a block when the runtime launches it.
constexpr unsigned kRowCopyBlockSize = 256;

} // namespace cellpack

#endif // CELLPACK_ROWCOPYKERNEL_H
