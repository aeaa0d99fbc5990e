//===- CodeSelection.h - Choosing a cell's CUBIN or PTX ---------*- C++ -*-===//
//
// A cell's code holds CUBINs for some architectures and at most one PTX.
// selectCode picks what a device of a given compute capability can load: a
// CUBIN built for exactly that architecture, else the PTX when the driver
// can JIT it for the device, else an error saying what the artifact has.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_CODESELECTION_H
#define CELLRUN_CODESELECTION_H

#include "artifact/Artifact.h"
#include "cellrun/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace cellrun {

struct CodeChoice {
  enum class Kind { Cubin, Ptx };
  Kind kind;
  /// "sm_90" / "sm_90a" for a CUBIN, "compute_80" for PTX.
  std::string arch;
  /// The image inside the loaded file: CUBIN bytes, or PTX text followed by
  /// a NUL (data[size] == 0) as cuModuleLoadData/cudaLibraryLoadData want.
  const uint8_t *data;
  size_t size;
};

/// The code `cellName` runs with on a device of compute capability
/// `deviceComputeCapability` (major * 10 + minor: 80, 90, 100, 120):
///  - the CUBIN for "sm_<cc>", else the one for "sm_<cc>a";
///  - else the PTX, when its "compute_XY" has XY <= cc (a "compute_XYa" PTX
///    only when XY == cc), to be JIT-compiled by the driver;
///  - else Unsupported: "<file>: cell 'c': no CUBIN for sm_90 and no usable
///    PTX (PTX is compute_100); the artifact has CUBINs for sm_80, sm_100".
/// NotFound for an unknown cell.
Result<CodeChoice> selectCode(const LoadedArtifact &artifact,
                              const std::string &cellName,
                              int deviceComputeCapability);

/// XY of an architecture name "sm_XY" or "compute_XY" (with an optional
/// "a" or "f" suffix): 90 for "sm_90a", 80 for "compute_80"; -1 for
/// anything else.
int codeArchNumber(const std::string &arch);

} // namespace cellrun

#endif // CELLRUN_CODESELECTION_H
