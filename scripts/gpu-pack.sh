#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh runs on a GPU machine into PACK_DIR
# (default gpu-pack/, ignored by git), small enough to carry there (the
# device tool carries at most 64 MiB): the stripped test binaries, cellrun
# and the benchmarks in one xz tarball (about 5 MB: they share most of their
# code), the example artifacts with their reference data, and the hidden-1024
# benchmark artifact (38 MB of random weights, carried as it is) with the
# digest of its PyTorch weights, which gpu-check.sh regenerates there
# (generate.py --weights-only) rather than carrying them too.
#   scripts/gpu-pack.sh [PACK_DIR]      after scripts/build.sh and
#                                       ninja -C build bench-artifacts
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
pack="${1:-$root/gpu-pack}"
limit_mib=60
binaries=(test/cuda-backend-tests test/backend-examples-cuda-tests
  test/engine-cuda-tests test/backend-examples-cpu-tests tools/cellrun/cellrun
  bench/cuda_task_bench bench/task_bench)
missing=0
for binary in "${binaries[@]}" examples/lstm/bench-fp32.cellpack; do
  [ -f "$build/$binary" ] || { echo "gpu-pack: $build/$binary is missing" >&2; missing=1; }
done
[ "$missing" -eq 0 ] || { echo "gpu-pack: build first (scripts/build.sh; ninja -C build bench-artifacts)" >&2; exit 1; }

rm -rf "$pack" && mkdir -p "$pack"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
for binary in "${binaries[@]}"; do
  mkdir -p "$stage/bin/$(dirname "$binary")"
  strip -o "$stage/bin/$binary" "$build/$binary"
done
tar -C "$stage/bin" -cf - . | xz -9 -T2 >"$pack/binaries.tar.xz"
# The example artifacts (fp32 and tf32), their reference cases and PyTorch
# weights (h64), and the test artifacts the engine tests load.
(cd "$build" && tar -cf - examples/*/model*.cellpack examples/*/h64/*.ref \
  examples/*/h64/*.pt test/*.cellpack) | xz -6 -T2 >"$pack/examples.tar.xz"
cp "$build/examples/lstm/bench-fp32.cellpack" "$pack/"
/usr/bin/python3 "$root/examples/common/weights_digest.py" \
  "$build/examples/lstm/h1024-bench/lstm.pt" >"$pack/bench-weights.sha256"
git -C "$root" rev-parse HEAD >"$pack/commit.txt" 2>/dev/null || true
size=$(du -sb "$pack" | cut -f1)
echo "gpu-pack: $pack holds $((size / 1048576)) MiB:"
ls -l "$pack"
if [ "$size" -gt $((limit_mib * 1048576)) ]; then
  echo "gpu-pack: more than $limit_mib MiB: it cannot be carried in one call" >&2
  exit 1
fi
