# Helpers that give every target of the project the same flags.
#
# Code that includes LLVM/MLIR headers is built like LLVM itself (no RTTI, since
# libLLVM/libMLIR are built without it). Code that includes ONNX/protobuf headers needs
# RTTI and exceptions and stays in its own targets with a plain C++ interface.

separate_arguments(CELL_LLVM_DEFINITIONS NATIVE_COMMAND "${LLVM_DEFINITIONS}")

# Include paths: `cell/IR/...` headers live under dialects/, generated ones under
# the build tree's dialects/; compiler headers are included as `compiler/...`.
include_directories(
  ${CELL_SOURCE_DIR}
  ${CELL_SOURCE_DIR}/dialects
  ${CELL_BINARY_DIR}/dialects)
if(CELL_BUILD_COMPILER)
  include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
endif()

function(cell_llvm_style_target target)
  target_compile_options(${target} PRIVATE -fno-rtti -Wall -Wno-unused-parameter)
  target_compile_definitions(${target} PUBLIC ${CELL_LLVM_DEFINITIONS})
endfunction()

function(cell_plain_target target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
endfunction()

# Binaries that are copied to the GPU machine (cellrun, the GPU tests and
# benchmarks): libstdc++ and libgcc linked statically, so their shared
# dependencies are glibc and the CUDA libraries only.
function(cell_lean_binary target)
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
endfunction()
