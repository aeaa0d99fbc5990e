//===- CublasLtLibrary.h - cuBLASLt, opened when a CUDA backend starts -*- C++
//-*-===//
//
// The runtime does not link cuBLASLt: the library is over 500 MB, and a
// process that links it maps it at every start (about 200 MB resident and
// tens of milliseconds for `cellrun --version`) and cannot start at all
// where the CUDA toolkit is missing, though it serves on the CPU. The CUDA
// backend opens it with dlopen when it is first made, and calls it through
// this table of the functions it uses, typed by the toolkit's own header.
//
//===----------------------------------------------------------------------===//
#ifndef CELLRUN_BACKEND_CUDA_CUBLASLTLIBRARY_H
#define CELLRUN_BACKEND_CUDA_CUBLASLTLIBRARY_H

#include "cellrun/Status.h"

#include <cublasLt.h>

#include <string>
#include <vector>

// Every cuBLASLt function the runtime calls, by its exported name.
#define CELL_CUBLASLT_FUNCTIONS(X)                                             \
  X(cublasLtCreate)                                                            \
  X(cublasLtDestroy)                                                           \
  X(cublasLtGetStatusName)                                                     \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtMatmul)                                                            \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)

namespace cellrun::cuda {

/// The functions, as pointers of the header's types (a name the loaded
/// library lacks fails the load, so none is null after it).
struct CublasLt {
#define CELL_CUBLASLT_POINTER(name) decltype(&::name) name = nullptr;
  CELL_CUBLASLT_FUNCTIONS(CELL_CUBLASLT_POINTER)
#undef CELL_CUBLASLT_POINTER
  /// The file that was opened (as dlopen was given it).
  std::string file;
};

/// The files tried, in order: the soname of the toolkit the runtime was
/// built with, found the loader's way (LD_LIBRARY_PATH, the run path of the
/// object that calls dlopen: cellrun, or libcellrun.so; the loader's cache),
/// then that soname in the build's CUDA library directory and in
/// /usr/local/cuda/lib64.
std::vector<std::string> cublasLtCandidates();

/// Opens the first of `files` that loads and has every function. The error
/// names each file tried and why it failed (dlerror's words). The library
/// stays open for the life of the process.
Result<CublasLt> openCublasLt(const std::vector<std::string> &files);

/// cuBLASLt for the process: opened from cublasLtCandidates() on the first
/// call (thread-safe); later calls return the same table, or the same error.
Result<const CublasLt *> loadCublasLt();

/// The table loadCublasLt() opened. Only for code that runs after a
/// successful loadCublasLt() (a CUDA backend and what it made).
const CublasLt &lt();

} // namespace cellrun::cuda

#endif // CELLRUN_BACKEND_CUDA_CUBLASLTLIBRARY_H
