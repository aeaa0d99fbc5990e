#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh runs on a GPU machine into PACK_DIR
# (default gpu-pack/, ignored by git), small enough to carry there (the
# device tool carries at most 64 MiB): the stripped test binaries, cellrun
# and the benchmarks in one xz tarball (about 5 MB: they share most of their
# code) and the example artifacts with their reference data. The hidden-1024
# benchmark artifacts do not fit beside them: scripts/gpu-pack-models.sh
# packs those in parts carried in calls of their own (GPU_CHECK_MODELS).
#   scripts/gpu-pack.sh [PACK_DIR]      after scripts/build.sh and
#                                       ninja -C build bench-artifacts
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
pack="${1:-$root/gpu-pack}"
# The device tool carries 64 MiB a call, the checkout included.
tree_bytes=$(git -C "$root" ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | cut -f1)
limit_bytes=$((64 * 1048576 - tree_bytes - 1048576))
binaries=(test/cuda-backend-tests test/backend-examples-cuda-tests
  test/engine-cuda-tests test/backend-examples-cpu-tests tools/cellrun/cellrun
  bench/cuda_task_bench bench/task_bench)
missing=0
for binary in "${binaries[@]}"; do
  [ -f "$build/$binary" ] || { echo "gpu-pack: $build/$binary is missing" >&2; missing=1; }
done
[ "$missing" -eq 0 ] || { echo "gpu-pack: build first (scripts/build.sh; ninja -C build bench-artifacts)" >&2; exit 1; }
# A pack must be what the checkout builds now.
if ! ninja -C "$build" -n all bench-artifacts 2>/dev/null | grep -q "no work to do"; then
  echo "gpu-pack: $build is out of date: run scripts/build.sh and ninja -C build bench-artifacts" >&2
  exit 1
fi

rm -rf "$pack" && mkdir -p "$pack"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
for binary in "${binaries[@]}"; do
  mkdir -p "$stage/bin/$(dirname "$binary")"
  strip -o "$stage/bin/$binary" "$build/$binary"
done
# cellrun's front ends link Debian's gRPC, protobuf, abseil, spdlog, fmt,
# cpp-httplib, OpenSSL...: the GPU machine has none of them. They travel in
# lib/ (all but glibc and the CUDA libraries), and cellrun becomes a wrapper
# that sets LD_LIBRARY_PATH for itself alone (cellrun.bin is the program).
mkdir -p "$stage/bin/lib"
ldd "$build/tools/cellrun/cellrun" | awk '/=> \// {print $3}' |
  grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libcublas|libcublasLt|libcudart|libcuda|libnvrtc)\.so' |
  while read -r library; do cp -L "$library" "$stage/bin/lib/"; done
mv "$stage/bin/tools/cellrun/cellrun" "$stage/bin/tools/cellrun/cellrun.bin"
cat >"$stage/bin/tools/cellrun/cellrun" <<'WRAP'
#!/bin/sh
# cellrun with the libraries it brought (scripts/gpu-pack.sh).
here="$(cd "$(dirname "$0")" && pwd)"
LD_LIBRARY_PATH="$here/../../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/cellrun.bin" "$@"
WRAP
chmod +x "$stage/bin/tools/cellrun/cellrun"
tar -C "$stage/bin" -cf - . | xz -9 -T2 >"$pack/binaries.tar.xz"
# The example artifacts (fp32 and tf32), their reference cases and PyTorch
# weights (h64), and the test artifacts the engine tests load.
(cd "$build" && tar -cf - examples/*/model*.cellpack examples/*/h64/*.ref \
  examples/*/h64/*.pt test/*.cellpack) | xz -6 -T2 >"$pack/examples.tar.xz"
git -C "$root" describe --always --dirty >"$pack/commit.txt" 2>/dev/null || true
size=$(du -sb "$pack" | cut -f1)
echo "gpu-pack: $pack holds $((size / 1048576)) MiB:"
ls -l "$pack"
if [ "$size" -gt "$limit_bytes" ]; then
  echo "gpu-pack: with the checkout ($((tree_bytes / 1048576)) MiB) more than 63 MiB: it cannot be carried in one call" >&2
  exit 1
fi
