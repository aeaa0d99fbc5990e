//===- ProcessorIsas.h - The CPU kernel versions this machine runs -*- C++
//-*-===//
//
// Every version of the CPU backend's kernels the processor can run
// (portable, then AVX2+FMA, then AVX-512 when it has them), for tests that
// compare the versions or run each.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_TEST_PROCESSORISAS_H
#define CELL_TEST_PROCESSORISAS_H

#include "backend/cpu/CpuIsa.h"

#include <vector>

namespace cellc::testing {

inline std::vector<cellrun::cpu::CpuIsa> processorIsas() {
  using cellrun::cpu::CpuIsa;
  std::vector<CpuIsa> result{CpuIsa::Generic};
  if (cellrun::cpu::cpuHasAvx2())
    result.push_back(CpuIsa::Avx2);
  if (cellrun::cpu::cpuHasAvx512())
    result.push_back(CpuIsa::Avx512);
  return result;
}

} // namespace cellc::testing

#endif // CELL_TEST_PROCESSORISAS_H
