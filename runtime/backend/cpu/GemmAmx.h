//===- GemmAmx.h - bf16 products on AMX tiles ------------------*- C++ -*-===//
//
// The bf16 GEMM (PackedGemmBf16.h) on Intel AMX (Sapphire Rapids and later):
// TDPBF16PS multiplies a 16-row tile of A by a 16-column tile of B over 32
// values of k at once, several times the fp32 multiply-adds a cycle of
// AVX-512. Its sums are fp32, but it adds its products in its own order and
// precision (closer to the exact sum than one fused multiply-add after
// another), so its bits are not the other bf16 kernels': where AMX runs, it
// runs every product of that weight, of any row count, so that a row's
// result still does not depend on its batch (each element of D comes from
// its row of A and column of B over k blocks in order, whatever the rows
// next to it or the split among threads). Any depth: k is padded with zeros
// to whole tiles of 32.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_GEMMAMX_H
#define CELLRUN_BACKEND_CPU_GEMMAMX_H

#include "PackedGemm.h"

namespace cellrun::cpu {
class PackedMatrixBf16;

/// Whether the processor has AMX-TILE and AMX-BF16, the OS saves their
/// state and the AVX-512 kernels run (detectCpuIsa); CELLRUN_CPU_AMX=off
/// says no. Asks nothing of the OS.
bool cpuOffersAmxBf16();

/// cpuOffersAmxBf16, and Linux granted this process the tile data
/// (arch_prctl, asked at the first call: only when bf16 weights are packed).
/// Once granted, Linux refuses an alternate signal stack smaller than the
/// signal frame with the tile state: a program embedding the runtime sizes
/// its sigaltstacks by sysconf(_SC_SIGSTKSZ), not the old SIGSTKSZ.
bool cpuHasAmxBf16();

/// Whether the AMX kernel takes products by `b` (any of depth one or more)
/// on this processor.
bool amxTakes(const PackedMatrixBf16 &b);

/// D[m, n] (row stride ldd) = epilogue(bf16(A[m, k]) * B) on AMX tiles; B
/// must be one amxTakes accepts. With `pool`, pairs of B's panels are split
/// among its workers.
void amxGemmBf16(const float *a, int64_t lda, int64_t m,
                 const PackedMatrixBf16 &b, const GemmEpilogue &epilogue,
                 float *d, int64_t ldd, ThreadPool *pool = nullptr);

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_GEMMAMX_H
