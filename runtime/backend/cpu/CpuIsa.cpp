//===- CpuIsa.cpp - Which vector instructions the CPU kernels use --------===//
#include "CpuIsa.h"

#include <cstdlib>
#include <cstring>

using namespace cellrun::cpu;

bool cellrun::cpu::cpuHasAvx2() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

bool cellrun::cpu::cpuHasAvx512() {
#if defined(__x86_64__) || defined(__i386__)
  return cpuHasAvx2() && __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

CpuIsa cellrun::cpu::detectCpuIsa() {
  static const CpuIsa isa = [] {
    CpuIsa best = cpuHasAvx512() ? CpuIsa::Avx512
                  : cpuHasAvx2() ? CpuIsa::Avx2
                                 : CpuIsa::Generic;
    const char *forced = std::getenv("CELLRUN_CPU_ISA");
    CpuIsa asked = best;
    if (forced && std::strcmp(forced, "generic") == 0)
      asked = CpuIsa::Generic;
    else if (forced && std::strcmp(forced, "avx2") == 0)
      asked = CpuIsa::Avx2;
    return asked < best ? asked : best;
  }();
  return isa;
}

const char *cellrun::cpu::cpuIsaName(CpuIsa isa) {
  switch (isa) {
  case CpuIsa::Avx512:
    return "avx512f";
  case CpuIsa::Avx2:
    return "avx2+fma";
  case CpuIsa::Generic:
    break;
  }
  return "generic";
}
