//===- CpuIsa.h - Which vector instructions the CPU kernels use -*- C++ -*-===//
//
// The CPU backend's kernels (GEMM micro-kernels, vector sigmoid/tanh) come
// in a portable version, an AVX2+FMA version and an AVX-512 version, picked
// at run time from what the processor reports. Each gives the same bits for
// a row whatever it is batched with. The AVX2 and AVX-512 versions give the
// same bits as each other (the same fused multiply-adds in the same order,
// only more lanes at a time); the portable GEMM multiplies and adds
// separately, so it differs from them in the last bits.
//
// CELLRUN_CPU_ISA=generic|avx2|avx512 asks for a version (for comparison);
// asking for more than the processor has gives the best it has.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CPU_CPUISA_H
#define CELLRUN_BACKEND_CPU_CPUISA_H

namespace cellrun::cpu {

/// Ordered: each level includes the ones before it.
enum class CpuIsa { Generic, Avx2, Avx512 };

/// Whether this processor runs AVX2 and FMA instructions.
bool cpuHasAvx2();
/// Whether it also runs AVX-512 F (the 512-bit float instructions).
bool cpuHasAvx512();
/// The best this processor has, or what CELLRUN_CPU_ISA asks for if that is
/// less (read once).
CpuIsa detectCpuIsa();
const char *cpuIsaName(CpuIsa isa);
/// Whether kernels of `isa` may use AVX2+FMA instructions.
inline bool usesAvx2(CpuIsa isa) { return isa >= CpuIsa::Avx2; }

} // namespace cellrun::cpu

#endif // CELLRUN_BACKEND_CPU_CPUISA_H
