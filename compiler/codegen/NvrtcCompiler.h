//===- NvrtcCompiler.h - CUDA C++ to CUBIN/PTX with NVRTC -------*- C++ -*-===//
//
// Compiles one CUDA C++ source with NVRTC into a CUBIN per requested `sm_XX`
// and, optionally, PTX for one `compute_XX`, returning the mangled names of the
// requested kernels. Plain C++ (no MLIR headers); needs no GPU or driver.
//
//===----------------------------------------------------------------------===//
#ifndef CELL_CODEGEN_NVRTCCOMPILER_H
#define CELL_CODEGEN_NVRTCCOMPILER_H

#include <string>
#include <vector>

namespace cellc::codegen {

/// Machine code for one real architecture.
struct CompiledArch {
  std::string arch;        // "sm_80"
  std::vector<char> cubin; // ELF image, as returned by nvrtcGetCUBIN
};

struct CompiledProgram {
  /// One per requested sm_XX, in request order.
  std::vector<CompiledArch> cubins;
  /// PTX for the PTX target (e.g. compute_80), empty if none was requested.
  std::string ptx;
  /// The PTX target ("compute_80"), empty if none was requested.
  std::string ptxArch;
  /// Mangled names of the requested __global__ kernels, same order as
  /// CompileOptions::kernelNames.
  std::vector<std::string> loweredNames;
  /// Wall time of all NVRTC work, in seconds.
  double seconds = 0;
};

struct CompileOptions {
  /// Real architectures to build CUBINs for ("sm_80", "sm_90a", ...).
  std::vector<std::string> cubinArchs = {"sm_80", "sm_90"};
  /// Virtual architecture to emit PTX for; empty: no PTX.
  std::string ptxArch = "compute_80";
  /// __global__ kernels to keep and lower (nvrtcAddNameExpression), e.g.
  /// "lstm_step_b8" (extern "C") or "lstm_step<8>" (C++).
  std::vector<std::string> kernelNames;
  /// Further NVRTC options, e.g. "--use_fast_math".
  std::vector<std::string> extraOptions;
};

/// Compiles `source` (named `programName` in messages), one NVRTC program per
/// architecture, sequentially. On failure returns false, leaves `result`
/// untouched and sets `error` to a message naming the architecture and holding
/// NVRTC's error lines (with source line numbers); never aborts.
bool compileCuda(const std::string &source, const std::string &programName,
                 const CompileOptions &options, CompiledProgram &result,
                 std::string &error);

/// Architectures NVRTC supports (nvrtcGetSupportedArchs), as "sm_XX".
std::vector<std::string> supportedArchs();

/// Checks an architecture name ("sm_80", "sm_90a", "compute_80"): returns an
/// error message listing the supported ones, or "" when valid and supported.
std::string checkArch(const std::string &arch);

} // namespace cellc::codegen

#endif // CELL_CODEGEN_NVRTCCOMPILER_H
