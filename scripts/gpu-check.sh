#!/usr/bin/env bash
# The GPU tests and benchmarks in one go, for a GPU machine that has only the
# CUDA toolkit (see docs/building.md). Build everything here first:
#   scripts/build.sh && ninja -C build bench-artifacts
# then copy the build tree (or carry it) to the GPU machine and run there:
#   scripts/gpu-check.sh LOGDIR [BUILD_DIR]
# Writes into LOGDIR: device.txt, the cuda backend and engine tests' logs and
# XML, the
# CUDA microbenchmark of the hidden-1024 LSTM (fp32 and tf32: table + CSV) and
# the CPU backend's numbers on the same machine. Exits non-zero when a test
# fails; a missing GPU makes the tests skip and the benchmarks say so.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
logs="${1:?usage: gpu-check.sh LOGDIR [BUILD_DIR]}"
build="${2:-$root/build}"
mkdir -p "$logs"
status=0
# The test binaries find the example artifacts and references here.
export CELL_EXAMPLES_BUILD_DIR="$build/examples"

{ date -u; uname -a; nvidia-smi -L 2>&1; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1; } \
  >"$logs/device.txt"
cat "$logs/device.txt"

for test in cuda-backend-tests backend-examples-cuda-tests engine-cuda-tests \
  backend-examples-cpu-tests; do
  echo "== $test"
  "$build/test/$test" --gtest_output="xml:$logs/$test.xml" 2>&1 | tee "$logs/$test.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done

for precision in fp32 tf32; do
  artifact="$build/examples/lstm/bench-$precision.cellpack"
  if [ ! -f "$artifact" ]; then
    echo "gpu-check: $artifact is missing (ninja -C build bench-artifacts)" | tee -a "$logs/missing.txt"
    status=1
    continue
  fi
  echo "== cuda_task_bench ($precision)"
  "$build/bench/cuda_task_bench" "$artifact" --csv "$logs/cuda-lstm1024-$precision.csv" 2>&1 \
    | tee "$logs/cuda-lstm1024-$precision.txt"
done
echo "== task_bench (cpu backend on this machine)"
"$build/bench/task_bench" "$build/examples/lstm/bench-fp32.cellpack" \
  --csv "$logs/cpu-lstm1024.csv" --min-seconds 0.2 2>&1 | tee "$logs/cpu-lstm1024.txt"
exit "$status"
