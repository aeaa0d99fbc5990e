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

CpuIsa cellrun::cpu::detectCpuIsa() {
  static const CpuIsa isa = [] {
    const char *forced = std::getenv("CELLRUN_CPU_ISA");
    if (forced && std::strcmp(forced, "generic") == 0)
      return CpuIsa::Generic;
    return cpuHasAvx2() ? CpuIsa::Avx2 : CpuIsa::Generic;
  }();
  return isa;
}

const char *cellrun::cpu::cpuIsaName(CpuIsa isa) {
  return isa == CpuIsa::Avx2 ? "avx2+fma" : "generic";
}
