//===- CublasLtLibrary.cpp - cuBLASLt, opened when a CUDA backend starts --===//
#include "CublasLtLibrary.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

using namespace cellrun;
using namespace cellrun::cuda;

std::vector<std::string> cellrun::cuda::cublasLtCandidates() {
  std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  std::vector<std::string> files{soname};
#ifdef CELL_CUDA_LIBRARY_DIR
  files.push_back(std::string(CELL_CUDA_LIBRARY_DIR) + "/" + soname);
#endif
  files.push_back("/usr/local/cuda/lib64/" + soname);
  return files;
}

Result<CublasLt>
cellrun::cuda::openCublasLt(const std::vector<std::string> &files) {
  std::string tried;
  for (const std::string &file : files) {
    void *library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char *why = dlerror();
      tried += std::string(tried.empty() ? " " : "; ") +
               (why ? why : file + ": not loaded");
      continue;
    }
    CublasLt table;
    table.file = file;
    std::string missing;
#define CELL_CUBLASLT_RESOLVE(name)                                            \
  table.name = reinterpret_cast<decltype(&::name)>(dlsym(library, #name));     \
  if (!table.name)                                                             \
    missing += std::string(missing.empty() ? "" : ", ") + #name;
    CELL_CUBLASLT_FUNCTIONS(CELL_CUBLASLT_RESOLVE)
#undef CELL_CUBLASLT_RESOLVE
    if (missing.empty())
      return table; // stays open: the backends made from it call into it
    dlclose(library);
    tried +=
        std::string(tried.empty() ? " " : "; ") + file + " lacks " + missing;
  }
  return Status(StatusCode::Unavailable,
                "cuBLASLt " + std::to_string(CUBLAS_VER_MAJOR) +
                    " (the CUDA toolkit's libcublasLt, which the CUDA backend "
                    "needs) could not be loaded; install it or name its "
                    "directory in LD_LIBRARY_PATH. Tried:" +
                    tried);
}

namespace {
const Result<CublasLt> &processCublasLt() {
  // Never destroyed: a backend torn down during the program's exit (an
  // engine held by a static) still calls cublasLtDestroy through it.
  static const Result<CublasLt> *loaded =
      new Result<CublasLt>(openCublasLt(cublasLtCandidates()));
  return *loaded;
}
} // namespace

Result<const CublasLt *> cellrun::cuda::loadCublasLt() {
  const Result<CublasLt> &loaded = processCublasLt();
  if (!loaded.ok())
    return loaded.status();
  return &loaded.value();
}

const CublasLt &cellrun::cuda::lt() {
  const Result<CublasLt> &loaded = processCublasLt();
  if (!loaded.ok()) { // a bug: no backend exists without the library
    std::fprintf(stderr, "cellrun: cuBLASLt used before it was loaded: %s\n",
                 loaded.status().toString().c_str());
    std::abort();
  }
  return loaded.value();
}
