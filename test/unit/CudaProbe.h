//===- CudaProbe.h - When a GPU test skips and when it fails ---*- C++ -*-===//
//
// A GPU test skips, with the probe's reason, on a machine without a CUDA
// device; a machine whose GPU is there but cannot be used (cuBLASLt could
// not be opened) is broken, and its GPU tests fail instead of passing
// having tested nothing.
//
//===----------------------------------------------------------------------===//
#ifndef CELLC_TEST_UNIT_CUDAPROBE_H
#define CELLC_TEST_UNIT_CUDAPROBE_H

#include "cellrun/Status.h"

#include <string>

namespace cellc::testing {

/// The probe found a device but something it needs is missing
/// (probeCudaDevice's "no CUDA device: <device> is present, but ...").
inline bool cudaPresentButUnusable(const cellrun::Status &status) {
  return status.message().find(" is present, but ") != std::string::npos;
}

} // namespace cellc::testing

/// In a test or SetUp: fails on a present but unusable GPU, else skips
/// saying `what` is not tested and why.
#define CELL_SKIP_WITHOUT_CUDA(probe, what)                                    \
  do {                                                                         \
    if (!(probe).ok()) {                                                       \
      if (cellc::testing::cudaPresentButUnusable((probe).status()))            \
        FAIL() << what << " not tested: " << (probe).status().message();       \
      GTEST_SKIP() << what << " not tested: " << (probe).status().message();   \
    }                                                                          \
  } while (false)

#endif // CELLC_TEST_UNIT_CUDAPROBE_H
