//===- CpuIsa.h - Which vector instructions the CPU kernels use -*- C++ -*-===//
//
// The CPU backend's kernels (GEMM micro-kernels, vector sigmoid/tanh) come
// in a portable version and an AVX2+FMA version, picked at run time from
// what the processor reports. Both give the same bits for a row whatever it
// is batched with; across the two versions results differ in the last bits
// (fused versus separate multiply-add in the GEMM).
//
// CELLRUN_CPU_ISA=generic forces the portable kernels (for comparison);
// asking for avx2 on a processor without it falls back to generic.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_CPUISA_H
#define CELLRUN_BACKEND_CPU_CPUISA_H

namespace cellrun::cpu {

enum class CpuIsa { Generic, Avx2 };

/// Whether this processor runs AVX2 and FMA instructions.
bool cpuHasAvx2();
/// The kernels to use: AVX2 where the processor has it, unless
/// CELLRUN_CPU_ISA=generic (read once).
CpuIsa detectCpuIsa();
const char *cpuIsaName(CpuIsa isa);

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_CPUISA_H
