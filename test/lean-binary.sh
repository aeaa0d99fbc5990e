#!/usr/bin/env bash
# Checks that runtime binaries are lean: their shared libraries are glibc's
# and the CUDA libraries only (no LLVM, MLIR, protobuf, libstdc++, OpenBLAS),
# so they can be copied to a GPU machine that has nothing but the CUDA
# toolkit. libgcc_s may appear only because a CUDA library (cuBLASLt) needs
# it, never as a dependency of the binary itself.
#   lean-binary.sh BINARY...
# With --front-end, checks a front end (cellrun, which links HTTP/gRPC
# libraries, or libcellrun.so) instead: none of LLVM, MLIR, ONNX, a BLAS,
# the driver stub or cuBLASLt (the runtime opens it when it finds a GPU).
#   lean-binary.sh --front-end BINARY...
set -euo pipefail
if [ "${1:-}" = "--front-end" ]; then
  shift
  status=0
  for binary in "$@"; do
    if ldd "$binary" | grep -E 'libLLVM|libMLIR|libonnx|libopenblas|libblas|libcuda\.so|libcublas' >&2; then
      echo "lean-binary: $binary depends on the libraries above" >&2
      status=1
    else
      echo "lean-binary: $(basename "$binary") links no compiler, ONNX, BLAS, driver or cuBLAS library"
    fi
  done
  exit "$status"
fi
allowed='^(linux-vdso\.so|libc\.so|libm\.so|ld-linux-x86-64\.so|libpthread\.so|libdl\.so|librt\.so|libcudart\.so|libcublas\.so|libcublasLt\.so|libnvrtc\.so)'
status=0
for binary in "$@"; do
  failed=0
  needed="$(objdump -p "$binary" | awk '/NEEDED/ {print $2}')"
  while read -r library _; do
    [ -n "$library" ] || continue
    name="$(basename "$library")"
    if [[ "$name" =~ ^libgcc_s\.so ]] && ! grep -q '^libgcc_s' <<<"$needed"; then
      continue # pulled in by a CUDA library
    fi
    if [[ ! "$name" =~ $allowed ]]; then
      echo "lean-binary: $binary depends on $name" >&2
      failed=1
    fi
  done < <(ldd "$binary" | sed 's/^[[:space:]]*//')
  if [ "$failed" -eq 0 ]; then
    echo "lean-binary: $(basename "$binary") depends on glibc (and CUDA) only"
  else
    status=1
  fi
done
exit "$status"
