# Finds the external dependencies (Debian packages and the CUDA toolkit); see
# scripts/install-deps.sh for how they get onto the machine. What is looked
# for follows the build options (CMakeLists.txt): the runtime alone needs
# FlatBuffers, nlohmann-json, OpenBLAS (runtime/backend/cpu) and, with
# CELL_ENABLE_CUDA, the CUDA toolkit; the compiler adds NVRTC (the CUDA
# toolkit), LLVM/MLIR 16, ONNX and protobuf; the tests
# GoogleTest; the server its own (tools/cellrun/CMakeLists.txt).

find_package(FlatBuffers REQUIRED CONFIG)
# Header-only: the runtime reads requests and writes JSON with it.
find_package(nlohmann_json 3 REQUIRED CONFIG)
find_package(Threads REQUIRED)
if(CELL_ENABLE_CUDA OR CELL_BUILD_COMPILER)
  find_package(CUDAToolkit REQUIRED)
endif()

if(CELL_BUILD_COMPILER)
  # LLVM/MLIR 16: the shared libMLIR.so and libLLVM.so (the static component
  # libraries crash at run time when mixed with g++ objects, see
  # docs/building.md).
  find_package(MLIR 16 REQUIRED CONFIG
    PATHS /usr/lib/llvm-16/lib/cmake/mlir NO_DEFAULT_PATH)
  find_package(LLVM 16 REQUIRED CONFIG
    PATHS /usr/lib/llvm-16/lib/cmake/llvm NO_DEFAULT_PATH)
  list(APPEND CMAKE_MODULE_PATH ${MLIR_CMAKE_DIR} ${LLVM_CMAKE_DIR})
  cmake_policy(SET CMP0116 OLD)
  include(TableGen)
  include(AddLLVM)
  include(AddMLIR)
  set(LLVM_TOOLS_DIR /usr/lib/llvm-16/bin)
  find_package(ONNX REQUIRED CONFIG)
endif()
set(LLVM_EXTERNAL_LIT /usr/lib/llvm-16/build/utils/lit/lit.py)

if(CELL_BUILD_COMPILER OR CELL_BUILD_SERVER)
  find_package(Protobuf REQUIRED)
endif()
# The server (server/), the load generator (loadgen/) and the cellrun tool:
# Debian's cpp-httplib (with OpenSSL, zlib and brotli, as Debian builds it),
# gRPC, spdlog and fmt; Boost.Beast and Asio (header-only), zlib and brotli
# for compressed request bodies; CLI11 (header-only) for command lines;
# simdjson to read request JSON fast (server/JsonReader.cpp).
if(CELL_BUILD_SERVER)
  find_package(CLI11 REQUIRED CONFIG)
  find_package(spdlog REQUIRED CONFIG)
  find_package(gRPC REQUIRED CONFIG)
  find_library(CPP_HTTPLIB_LIBRARY cpp-httplib REQUIRED)
  find_package(Boost 1.74 REQUIRED)
  find_package(ZLIB REQUIRED)
  find_library(CELL_BROTLI_DECODER brotlidec REQUIRED)
  find_package(simdjson REQUIRED CONFIG)
endif()
if(CELL_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
