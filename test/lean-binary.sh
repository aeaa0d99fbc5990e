#!/usr/bin/env bash
# Checks that a runtime binary is lean: its shared libraries are glibc's and
# the CUDA libraries only (no LLVM, MLIR, protobuf, libstdc++, OpenBLAS), so
# it can be copied to a GPU machine that has nothing but the CUDA toolkit.
set -euo pipefail
binary="$1"
allowed='^(linux-vdso\.so|libc\.so|libm\.so|ld-linux-x86-64\.so|libpthread\.so|libdl\.so|librt\.so|libcudart\.so|libcublas\.so|libcublasLt\.so|libnvrtc\.so)'
status=0
while read -r library _; do
  [ -n "$library" ] || continue
  name="$(basename "$library")"
  if [[ ! "$name" =~ $allowed ]]; then
    echo "lean-binary: $binary depends on $name" >&2
    status=1
  fi
done < <(ldd "$binary" | sed 's/^[[:space:]]*//')
[ "$status" -eq 0 ] && echo "lean-binary: $(basename "$binary") depends on glibc (and CUDA) only"
exit "$status"
