#!/usr/bin/env bash
# The GPU tests and benchmarks in one go, for a GPU machine that has only the
# CUDA toolkit and PyTorch (see docs/building.md). Here:
#   scripts/build.sh && ninja -C build bench-artifacts && scripts/gpu-pack.sh
# then carry the checkout with gpu-pack/ (under 64 MiB) and run there:
#   scripts/gpu-check.sh LOGDIR --pack gpu-pack     (or LOGDIR [BUILD_DIR]
#                                                   with a whole build tree)
# Writes into LOGDIR: device.txt; the CUDA backend, example and engine tests'
# logs and XML (and the CPU example tests on that machine); `cellrun run` of
# every example on the GPU against the CPU backend; `cellrun serve` on the
# GPU answering over HTTP (test/serve/serve_device_check.py); the CUDA microbenchmark
# of the hidden-1024 LSTM (table + CSV); `cellrun bench --device cuda` on the
# same LSTM with the PyTorch peer on cuDNN (weights regenerated there and
# checked against the digest of the ones the artifact was built from); the
# CPU backend's microbenchmark on the same machine. Exits non-zero when a
# test fails or a step is missing; without a GPU the tests skip and the
# benchmarks say so. Each step has a time limit, so the whole run ends in
# about 9 minutes at most.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
logs="${1:?usage: gpu-check.sh LOGDIR [BUILD_DIR | --pack PACK_DIR]}"
mkdir -p "$logs"
logs="$(cd "$logs" && pwd)"
build="$root/build"
weights_digest=""
if [ "${2:-}" = "--pack" ]; then
  pack="$(cd "${3:?--pack PACK_DIR}" && pwd)"
  build="${TMPDIR:-/tmp}/cellrun-gpu-build"
  rm -rf "$build" && mkdir -p "$build/examples/lstm"
  xz -dc "$pack/binaries.tar.xz" | tar -C "$build" -xf - &&
    xz -dc "$pack/examples.tar.xz" | tar -C "$build" -xf - &&
    cp "$pack/bench-fp32.cellpack" "$build/examples/lstm/" ||
    { echo "gpu-check: cannot unpack $pack" >&2; exit 1; }
  weights_digest="$(cut -d' ' -f1 "$pack/bench-weights.sha256")"
  echo "unpacked $pack (commit $(cat "$pack/commit.txt" 2>/dev/null)) into $build"
elif [ -n "${2:-}" ]; then
  build="$2"
fi
python="${PYTHON:-python3}"
status=0
# The test binaries find the example artifacts and references here.
export CELL_EXAMPLES_BUILD_DIR="$build/examples"
step() { echo "== $*"; }
fail() { echo "gpu-check: $*" | tee -a "$logs/failures.txt"; status=1; }

{ date -u; uname -a; nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
  "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"cudnn", torch.backends.cudnn.version(), "gpu", torch.cuda.is_available())' 2>&1
} >"$logs/device.txt"
cat "$logs/device.txt"

for test in cuda-backend-tests backend-examples-cuda-tests engine-cuda-tests \
  backend-examples-cpu-tests; do
  step "$test"
  timeout 240 "$build/test/$test" --gtest_output="xml:$logs/$test.xml" >"$logs/$test.log" 2>&1
  code=$?
  grep -E "^\[  (PASSED|FAILED) |^\[  SKIPPED \] [0-9]+ test" "$logs/$test.log" | head -n 20
  [ "$code" -eq 0 ] || fail "$test exited with $code (log: $test.log)"
done

# `cellrun run` end to end on the GPU, each example against the CPU backend.
for model in lstm gru seq2seq treelstm attention bahdanau; do
  artifact="$build/examples/$model/model.cellpack"
  requests="$root/examples/$model/requests.jsonl"
  [ -f "$artifact" ] && [ -f "$requests" ] || { fail "$model: artifact or requests missing"; continue; }
  step "cellrun run $model (cuda against cpu)"
  ran=0
  for device in cuda cpu; do
    if timeout 60 "$build/tools/cellrun/cellrun" run "$artifact" --input "$requests" \
      --device "$device" --output "$logs/run-$model-$device.jsonl" \
      >"$logs/run-$model-$device.log" 2>&1; then
      ran=$((ran + 1))
    else
      fail "cellrun run $model --device $device failed: $(tail -n 1 "$logs/run-$model-$device.log")"
    fi
  done
  [ "$ran" -eq 2 ] || continue
  "$python" "$root/scripts/compare-results.py" "$logs/run-$model-cuda.jsonl" \
    "$logs/run-$model-cpu.jsonl" 2>&1 | tee "$logs/run-$model-compare.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || fail "$model: the GPU's results differ from the CPU's"
done

# `cellrun serve` on the GPU: answers over HTTP against `cellrun run` on the CPU.
for model in lstm seq2seq treelstm attention; do
  step "cellrun serve $model --device cuda"
  timeout 120 "$python" "$root/test/serve/serve_device_check.py" "$build/tools/cellrun/cellrun" \
    "$build/examples/$model/model.cellpack" "$root/examples/$model/requests.jsonl" cuda 128 \
    >"$logs/serve-$model-cuda.txt" 2>&1 || fail "cellrun serve $model --device cuda (log: serve-$model-cuda.txt)"
  tail -n 1 "$logs/serve-$model-cuda.txt"
done

for precision in fp32 tf32; do
  artifact="$build/examples/lstm/bench-$precision.cellpack"
  [ -f "$artifact" ] || { echo "(no $artifact: skipped)"; continue; }
  step "cuda_task_bench ($precision)"
  timeout 120 "$build/bench/cuda_task_bench" "$artifact" \
    --csv "$logs/cuda-lstm1024-$precision.csv" >"$logs/cuda-lstm1024-$precision.txt" 2>&1 ||
    fail "cuda_task_bench $precision failed"
  cat "$logs/cuda-lstm1024-$precision.txt"
done

# The system against PyTorch on cuDNN, same trace and weights.
step "cellrun bench --device cuda with the PyTorch peer (hidden-1024 LSTM)"
peer_weights="$build/examples/lstm/h1024-bench/lstm.pt"
if [ ! -f "$peer_weights" ]; then
  peer_weights="$logs/h1024/lstm.pt"
  timeout 120 "$python" "$root/examples/lstm/generate.py" --size bench \
    --out "$logs/h1024" --weights-only >"$logs/h1024-generate.log" 2>&1 ||
    fail "regenerating the peer's weights failed (log: h1024-generate.log)"
fi
have="$("$python" "$root/examples/common/weights_digest.py" "$peer_weights" 2>&1 | cut -d' ' -f1)"
if [ -n "$weights_digest" ] && [ "$have" != "$weights_digest" ]; then
  fail "the regenerated weights differ from the artifact's ($have, not $weights_digest)"
else
  timeout 300 "$build/tools/cellrun/cellrun" bench "$build/examples/lstm/bench-fp32.cellpack" \
    --device cuda --workload "$root/bench/workloads/wmt15.csv" --sweep 1000,8000 \
    --duration 5 --offline 4000 --policy cellular,graph --peer-weights "$peer_weights" \
    --python "$python" --peers-dir "$root/bench/peers" --out "$logs/bench-lstm1024" \
    --quiet >"$logs/bench-lstm1024.txt" 2>&1 || fail "cellrun bench --device cuda failed"
  cat "$logs/bench-lstm1024.txt"
fi
rm -rf "$logs/h1024"

step "task_bench (the CPU backend on this machine)"
timeout 120 "$build/bench/task_bench" "$build/examples/lstm/bench-fp32.cellpack" \
  --csv "$logs/cpu-lstm1024.csv" --min-seconds 0.1 --threads 4 >"$logs/cpu-lstm1024.txt" 2>&1 ||
  fail "task_bench failed"
cat "$logs/cpu-lstm1024.txt"
[ "$status" -eq 0 ] && echo "gpu-check: every step passed" || cat "$logs/failures.txt"
exit "$status"
