#!/usr/bin/env bash
# The GPU tests and benchmarks in one go, for a GPU machine that has only the
# CUDA toolkit and PyTorch (see docs/runtime.md). Here:
#   scripts/build.sh && ninja -C build bench-artifacts && scripts/gpu-pack.sh
#   && scripts/gpu-pack-models.sh
# then carry gpu-models/part-1, part-2, ... one a device call, each copied to
# /tmp/gpu-models there (the hidden-1024 artifacts: 247 MB against 64 MiB a
# call; the machine keeps its /tmp while it is held), and last the checkout
# with gpu-pack/ (under 64 MiB), and run there:
#   GPU_CHECK_MODELS=/tmp/gpu-models scripts/gpu-check.sh OUTDIR --pack gpu-pack
#   (or OUTDIR [BUILD_DIR] with a whole build tree)
# Steps: the CUDA backend, example and engine tests (logs and XML);
# `cellrun run` of every example on the GPU against the CPU backend;
# `cellrun serve` on the GPU answering over HTTP (serve_device_check.py); the
# CUDA microbenchmark of the hidden-1024 LSTM (fp32, tf32, bf16; fp32 again
# with every GEMM and the step after it launched apart); the tests
# and the fp32 microbenchmark again without programmatic dependent launch (pdl, on by default);
# `cellrun bench --device cuda`
# on the same LSTM with the PyTorch peer on cuDNN in fp32 (weights
# regenerated there and checked against the digest of the ones the artifact
# was built from); the host path against the GPU's busy time; one to four
# engine threads (workers) sharing the GPU (workers); the hidden-1024 seq2seq, attention, TreeLSTM and GRU against their peers, and each
# of their cells' task time (cells); the CPU backend's microbenchmark on the
# same machine; Nsight Compute on the skinny GEMM and on the hidden-1024
# attention decoder's kernels; with the time left, compute-sanitizer
# memcheck and racecheck. Without GPU_CHECK_MODELS the
# hidden-1024 steps are skipped (with a failure that says so).
# OUTDIR gets two files (the device tool brings back 8 at most):
# gpu-check.txt (what was printed) and gpu-check-logs.tgz (every log, XML and
# CSV). The whole run stops taking new steps after GPU_CHECK_SECONDS
# (default 480); exits non-zero when a step failed or was cut.
# GPU_CHECK_STEPS picks steps by name (default: all, in this order): tests
# runs serve kernels pdl bench busy workers models cells cpu ncu sanitizer; e.g.
# GPU_CHECK_STEPS="tests kernels" for a quick look at the kernels.
# GPU_CHECK_SWEEP: the offered rates of the bench step (default 1000,8000);
# GPU_CHECK_BENCH_PRECISIONS its LSTM artifacts (default fp32; e.g.
# "fp32 tf32 bf16": the peer then computes in the same precision);
# GPU_CHECK_BENCH_FLAGS more `cellrun bench` flags for our side there (e.g.
# --workers 3 --workers-per-device 3: online with several engine threads);
# GPU_CHECK_POLICIES its policies (default cellular,graph; the peer runs
# beside them). GPU_CHECK_TEST_FILTER: a gtest filter for the tests step.
# GPU_CHECK_BUSY_REQUESTS: the busy step's requests (default 20000);
# GPU_CHECK_BUSY_LENGTHS their lengths' workload (default
# bench/workloads/wmt15.csv; fixed24.csv for the fixed-length goal);
# GPU_CHECK_BUSY_CHECK_REQUESTS: the first of them whose results are
# written and compared across --pinned-results, --cuda-graphs and the
# staged way (default 300: at hidden 1024 each is about 300 KB of JSON).
# GPU_CHECK_WORKERS and GPU_CHECK_WORKERS_POOL_ROWS: the workers step's
# workers on the device (default "1 2 3 4") and pool rows (default 6144:
# two full batch-512 tasks a worker); GPU_CHECK_WORKERS_REQUESTS its
# requests a trace (default 200000: with 100000 the ramp up and down is a
# larger share of the run), GPU_CHECK_WORKERS_TRACES its traces (default
# "fixed24 wmt": every request 24 steps, or WMT-like lengths),
# GPU_CHECK_WORKERS_FLAGS more `cellrun run` flags (e.g. --copy-threads 3).
# GPU_CHECK_MODELS_FLAGS: more `cellrun bench` flags for our side in the
# models step (e.g. --workers 2 --workers-per-device 2).
# GPU_CHECK_MODELS: the parts of scripts/gpu-pack-models.sh (the hidden-1024
# seq2seq, attention, TreeLSTM and GRU artifacts, carried in earlier calls)
# for the models step; GPU_CHECK_SEQ2SEQ_SWEEP, GPU_CHECK_TREE_SWEEP and
# GPU_CHECK_GRU_SWEEP its rates (default 4000,8000, 1000,4000 and 1000:
# PyTorch served the attention model 14.5k/s offline on an H200 and kept up
# at 4000/s, the TreeLSTM saturated near 2.5k/s; each pair brackets half its
# peak and the peak; the GRU's requests carry 1024 features a step, about
# 210 KB of JSON each in the peer's trace, so it runs 2 s a rate and 1000
# offline).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: gpu-check.sh OUTDIR [BUILD_DIR | --pack PACK_DIR]}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
logs="$work/gpu-check"
mkdir -p "$logs"
deadline=$((SECONDS + ${GPU_CHECK_SECONDS:-480}))
python="${PYTHON:-python3}"
status=0
wanted() { [ -z "${GPU_CHECK_STEPS:-}" ] || [[ " $GPU_CHECK_STEPS " == *" $1 "* ]]; }
step() { echo "== $* ($((deadline - SECONDS)) s left)"; }
fail() { echo "gpu-check: $*" | tee -a "$logs/failures.txt"; status=1; }
# Seconds a step may take: its own limit, or what is left of the run.
limit() { # $1 seconds, or what is left (at least 1: `timeout 0` never stops)
  local left=$((deadline - SECONDS))
  [ "$left" -lt 1 ] && left=1
  [ "$left" -lt "$1" ] && echo "$left" || echo "$1"
}
enough() { # enough time left for a step that needs $1 seconds?
  [ $((deadline - SECONDS)) -ge "$1" ] && return 0
  fail "out of time: skipped $2"
  return 1
}
serve_seconds() { # the serving time `cellrun run` printed in file $1
  awk '/^time:/ {for (i = 1; i <= NF; ++i) if ($i == "serve") print $(i + 1)}' "$1"
}
# nvidia-smi's utilization every 100 ms into file $1 until stop_sampling.
start_sampling() {
  nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 100 \
    >"$1" 2>/dev/null &
  sampler=$!
}
stop_sampling() {
  kill "$sampler" 2>/dev/null
  wait "$sampler" 2>/dev/null
}
utilization() { # the samples of file $1 in one line
  awk '$1 + 0 > 0 {busy += $1; n++} {all++} END {printf "GPU utilization: %d samples, %d nonzero, mean of nonzero %.0f%%\n", all, n, n ? busy / n : 0}' "$1"
}
finish() {
  tar -C "$work" -czf "$out/gpu-check-logs.tgz" --exclude='*.jsonl' gpu-check
  rm -rf "$work"
}
trap finish EXIT
exec > >(tee "$out/gpu-check.txt") 2>&1

unxz() { # unxz FILE DIR: xz, or Python's lzma where xz is missing
  if command -v xz >/dev/null; then
    xz -dc "$1" | tar -C "$2" -xf -
  else
    "$python" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' \
      "$1" | tar -C "$2" -xf -
  fi
}
build="$root/build"
weights_digest=""
if [ "${2:-}" = "--pack" ]; then
  pack="$(cd "${3:?--pack PACK_DIR}" && pwd)"
  build="$work/build"
  mkdir -p "$build/examples/lstm"
  unxz "$pack/binaries.tar.xz" "$build" && unxz "$pack/examples.tar.xz" "$build" ||
    { echo "gpu-check: cannot unpack $pack"; exit 1; }
  echo "unpacked $pack (commit $(cat "$pack/commit.txt" 2>/dev/null)) into $build"
elif [ -n "${2:-}" ]; then
  build="$2"
fi
# The hidden-1024 benchmark artifacts (GPU_CHECK_MODELS: the directory of
# scripts/gpu-pack-models.sh's parts, carried one a call before this one;
# relative paths from the repository root): put back together, checked
# against the manifest's SHA-256 and unpacked into the build; the digests of
# the PyTorch weights they were compiled from stay for the peers' checks.
models_dir="${GPU_CHECK_MODELS:-}"
models_manifest=""
if [ -n "$models_dir" ]; then
  case "$models_dir" in /*) ;; *) models_dir="$root/$models_dir" ;; esac
  manifest="$(ls "$models_dir"/part-*/manifest.txt 2>/dev/null | head -n 1)"
  parts="$(awk '$1 == "parts" {print $2}' "$manifest" 2>/dev/null)"
  missing=""
  for k in $(seq 1 "${parts:-0}"); do
    ls "$models_dir/part-$k"/models.tar.* >/dev/null 2>&1 || missing="$missing part-$k"
  done
  if [ -z "$manifest" ] || [ -z "$parts" ]; then
    fail "no part of $models_dir is here: no hidden-1024 artifacts"
  elif [ -n "$missing" ]; then
    fail "$models_dir lacks$missing (the machine was not kept between the calls?): no hidden-1024 artifacts"
  else
    for k in $(seq 1 "$parts"); do cat "$models_dir/part-$k"/models.tar.*; done >"$work/models.tar"
    want="$(awk '$1 == "sha256" {print $2}' "$manifest")"
    have="$("$python" -c 'import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
print(h.hexdigest())' "$work/models.tar")"
    if [ "$have" != "$want" ]; then
      fail "the hidden-1024 artifacts put back together differ from the pack ($have, not $want)"
    elif tar -C "$build" -xf "$work/models.tar"; then
      models_manifest="$manifest"
      echo "hidden-1024 artifacts from $parts parts: $(awk '$1 == "models" {$1 = ""; print}' "$manifest")"
    else
      fail "cannot unpack the hidden-1024 artifacts"
    fi
    rm -f "$work/models.tar"
  fi
fi
# The digest of the weights the hidden-1024 LSTM was compiled from.
if [ -n "$models_manifest" ]; then
  weights_digest="$(awk '$1 == "lstm" {print $2; exit}' "$(dirname "$models_manifest")/weights.sha256")"
fi
lstm1024="$build/examples/lstm/bench-fp32.cellpack"
if [ ! -f "$lstm1024" ]; then
  fail "no hidden-1024 LSTM artifact (scripts/gpu-pack-models.sh, GPU_CHECK_MODELS): its steps are skipped"
fi
# The test binaries find the example artifacts and references here.
export CELL_EXAMPLES_BUILD_DIR="$build/examples"
cellrun="$build/tools/cellrun/cellrun"
# The peer's Python without the libraries cellrun brought (gpu-pack.sh).
cat >"$work/python" <<EOF
#!/bin/sh
unset LD_LIBRARY_PATH
exec "$python" "\$@"
EOF
chmod +x "$work/python"

{ date -u; uname -a; nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
  "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"cudnn", torch.backends.cudnn.version(), "gpu", torch.cuda.is_available())' 2>&1
} | tee "$logs/device.txt"

# Preflight: every program finds its libraries (cuBLAS from the toolkit, or
# from PyTorch's wheels), before any minute goes to a step. The runtime opens
# cuBLASLt with dlopen (ldd does not show it): cellrun says whether it could
# (the exact version it was built for); cuda_task_bench links cuBLAS.
usable() { "$build/tools/cellrun/cellrun" devices --device cuda >/dev/null 2>&1; }
if ! usable || ldd "$build/bench/cuda_task_bench" 2>/dev/null | grep -q "libcublas.* not found"; then
  extra="$("$python" -c 'import glob, os, nvidia; print(":".join(sorted({os.path.dirname(p)
for d in nvidia.__path__ for p in glob.glob(d + "/**/libcublas*.so*", recursive=True)})))' 2>/dev/null)"
  [ -n "$extra" ] && export LD_LIBRARY_PATH="$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "cuBLAS from PyTorch's wheels: $extra"
fi
for program in test/cuda-backend-tests test/backend-examples-cuda-tests test/engine-cuda-tests \
  bench/cuda_task_bench bench/task_bench tools/cellrun/cellrun.bin; do
  [ -f "$build/$program" ] || continue
  missing="$(LD_LIBRARY_PATH="$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$build/$program" | grep "not found")"
  [ -z "$missing" ] || { fail "$program cannot start: $missing"; exit 1; }
done
# A device the runtime can use: the GPU, and cuBLASLt opened (the reason
# when not, e.g. cuBLASLt missing).
"$build/tools/cellrun/cellrun" devices --device cuda 2>&1 | tee -a "$logs/device.txt" ||
  { fail "cellrun finds no usable CUDA device"; exit 1; }

for test in cuda-backend-tests engine-cuda-tests backend-examples-cuda-tests; do
  wanted tests || break
  enough 30 "$test" || continue
  step "$test"
  # Each binary's limit, a few times what it took on the H200 (2026-11-30:
  # cuda-backend 2 s, engine-cuda 3, backend-examples-cuda 40, before the
  # graph, pinned and timed cases about doubled the last two), so that a
  # hung case costs the call a part of its time.
  case "$test" in
  backend-examples-cuda-tests) seconds=200 ;;
  engine-cuda-tests) seconds=120 ;;
  *) seconds=60 ;;
  esac
  timeout "$(limit "$seconds")" "$build/test/$test" --gtest_output="xml:$logs/$test.xml" \
    ${GPU_CHECK_TEST_FILTER:+--gtest_filter="$GPU_CHECK_TEST_FILTER"} >"$logs/$test.log" 2>&1
  code=$?
  grep -E "^\[  (PASSED|FAILED) |^\[  SKIPPED \] [0-9]+ test" "$logs/$test.log" | head -n 20
  [ "$code" -eq 0 ] || fail "$test exited with $code (log: $test.log)"
done

# `cellrun run` end to end on the GPU, each example against the CPU backend.
for model in lstm gru seq2seq treelstm attention bahdanau; do
  wanted runs || break
  artifact="$build/examples/$model/model.cellpack"
  requests="$root/examples/$model/requests.jsonl"
  [ -f "$artifact" ] && [ -f "$requests" ] || { fail "$model: artifact or requests missing"; continue; }
  enough 20 "cellrun run $model" || continue
  step "cellrun run $model (cuda against cpu)"
  ran=0
  for device in cuda cpu; do
    if timeout "$(limit 60)" "$cellrun" run "$artifact" --input "$requests" \
      --device "$device" --output "$logs/run-$model-$device.jsonl" \
      >"$logs/run-$model-$device.log" 2>&1; then
      ran=$((ran + 1))
    else
      fail "cellrun run $model --device $device failed: $(tail -n 1 "$logs/run-$model-$device.log")"
    fi
  done
  [ "$ran" -eq 2 ] || continue
  "$python" "$root/scripts/compare-results.py" --across-devices "$logs/run-$model-cuda.jsonl" \
    "$logs/run-$model-cpu.jsonl" 2>&1 | tee "$logs/run-$model-compare.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || fail "$model: the GPU's results differ from the CPU's"
done

# `cellrun serve` on the GPU: answers over HTTP against `cellrun run` on the CPU.
for model in lstm seq2seq treelstm attention; do
  wanted serve || break
  enough 20 "cellrun serve $model" || continue
  step "cellrun serve $model --device cuda"
  timeout "$(limit 90)" "$python" "$root/test/serve/serve_device_check.py" "$cellrun" \
    "$build/examples/$model/model.cellpack" "$root/examples/$model/requests.jsonl" cuda 128 \
    >"$logs/serve-$model-cuda.txt" 2>&1 || fail "cellrun serve $model --device cuda (log: serve-$model-cuda.txt)"
  head -n 1 "$logs/serve-$model-cuda.txt"
done

for precision in fp32 tf32 bf16; do
  wanted kernels || break
  artifact="$build/examples/lstm/bench-$precision.cellpack"
  [ -f "$artifact" ] || { echo "(no $artifact: skipped)"; continue; }
  enough 30 "cuda_task_bench $precision" || continue
  step "cuda_task_bench ($precision)"
  timeout "$(limit 90)" "$build/bench/cuda_task_bench" "$artifact" \
    --csv "$logs/cuda-lstm1024-$precision.csv" >"$logs/cuda-lstm1024-$precision.txt" 2>&1 ||
    fail "cuda_task_bench $precision failed"
  cat "$logs/cuda-lstm1024-$precision.txt"
  # The GEMM and the gates apart at 1-16 rows (the table above: the
  # GEMM-and-epilogue kernel where its timing won), for the difference.
  if [ "$precision" = fp32 ] && enough 30 "cuda_task_bench fp32, epilogues apart"; then
    step "cuda_task_bench (fp32, CELL_CUDA_EPILOGUE=separate)"
    CELL_CUDA_EPILOGUE=separate timeout "$(limit 90)" "$build/bench/cuda_task_bench" "$artifact" \
      --csv "$logs/cuda-lstm1024-fp32-separate.csv" >"$logs/cuda-lstm1024-fp32-separate.txt" 2>&1 ||
      fail "cuda_task_bench fp32 with CELL_CUDA_EPILOGUE=separate failed"
    cat "$logs/cuda-lstm1024-fp32-separate.txt"
  fi
  # The backend launching each plan as a CUDA graph (--cuda-graphs): its
  # host column against the table above's.
  if [ "$precision" = fp32 ] && enough 30 "cuda_task_bench fp32 --graphs"; then
    step "cuda_task_bench (fp32, --graphs)"
    timeout "$(limit 90)" "$build/bench/cuda_task_bench" "$artifact" --graphs \
      --csv "$logs/cuda-lstm1024-fp32-graphs.csv" >"$logs/cuda-lstm1024-fp32-graphs.txt" 2>&1 ||
      fail "cuda_task_bench fp32 --graphs failed"
    cat "$logs/cuda-lstm1024-fp32-graphs.txt"
  fi
done

# Programmatic dependent launch (runtime/schema/GridDependency.h) is on by
# default: every other step runs with it. This one runs the example cells
# against PyTorch and the engine without it (CELLRUN_CUDA_PDL=0), then the
# fp32 kernel table without it, beside the kernels step's with it.
if wanted pdl && enough 60 "programmatic dependent launch off"; then
  step "programmatic dependent launch off (CELLRUN_CUDA_PDL=0)"
  for test in backend-examples-cuda-tests engine-cuda-tests; do
    enough 30 "$test without PDL" || break
    CELLRUN_CUDA_PDL=0 timeout "$(limit 200)" "$build/test/$test" \
      --gtest_output="xml:$logs/$test-nopdl.xml" \
      ${GPU_CHECK_TEST_FILTER:+--gtest_filter="$GPU_CHECK_TEST_FILTER"} >"$logs/$test-nopdl.log" 2>&1
    code=$?
    grep -E "^\[  (PASSED|FAILED) |^\[  SKIPPED \] [0-9]+ test" "$logs/$test-nopdl.log" | head -n 20
    [ "$code" -eq 0 ] || fail "$test with CELLRUN_CUDA_PDL=0 exited with $code (log: $test-nopdl.log)"
  done
  if [ -f "$lstm1024" ] && enough 30 "cuda_task_bench fp32 without PDL"; then
    CELLRUN_CUDA_PDL=0 timeout "$(limit 90)" "$build/bench/cuda_task_bench" "$lstm1024" \
      --csv "$logs/cuda-lstm1024-fp32-nopdl.csv" >"$logs/cuda-lstm1024-fp32-nopdl.txt" 2>&1 ||
      fail "cuda_task_bench fp32 with CELLRUN_CUDA_PDL=0 failed"
    cat "$logs/cuda-lstm1024-fp32-nopdl.txt"
  fi
fi

# The system against PyTorch on cuDNN, same trace and weights.
if wanted bench && [ -f "$lstm1024" ] && enough 120 "cellrun bench --device cuda"; then
  step "cellrun bench --device cuda with the PyTorch peer (hidden-1024 LSTM)"
  peer_weights="$build/examples/lstm/h1024-bench/lstm.pt"
  if [ ! -f "$peer_weights" ]; then
    peer_weights="$work/h1024/lstm.pt"
    timeout "$(limit 60)" "$python" "$root/examples/lstm/generate.py" --size bench \
      --out "$work/h1024" --weights-only >"$logs/h1024-generate.log" 2>&1 ||
      fail "regenerating the peer's weights failed (log: h1024-generate.log)"
  fi
  have="$("$python" "$root/examples/common/weights_digest.py" "$peer_weights" 2>"$logs/digest.log" | tail -n 1 | cut -d' ' -f1)"
  peer=(--peer-weights "$peer_weights" --python "$work/python" --peers-dir "$root/bench/peers")
  if [ -n "$weights_digest" ] && [ "$have" != "$weights_digest" ]; then
    fail "the regenerated weights differ from the artifact's ($have, not $weights_digest): bench without the peer"
    peer=()
  fi
  # fp32, then any other precision asked for (the peer computes in the
  # artifact's precision: TF32 in cuDNN, or the model in bfloat16).
  for precision in ${GPU_CHECK_BENCH_PRECISIONS:-fp32}; do
    artifact="$build/examples/lstm/bench-$precision.cellpack"
    name=bench-lstm1024
    [ "$precision" = fp32 ] || name="bench-lstm1024-$precision"
    [ -f "$artifact" ] || { fail "no $artifact: its bench is skipped"; continue; }
    enough 60 "cellrun bench --device cuda ($precision)" || break
    echo "-- $precision"
    timeout "$(limit 240)" "$cellrun" bench "$artifact" \
      --device cuda --workload "$root/bench/workloads/wmt15.csv" --sweep "${GPU_CHECK_SWEEP:-1000,8000}" \
      --duration 5 --offline 4000 --policy "${GPU_CHECK_POLICIES:-cellular,graph}" \
      ${GPU_CHECK_BENCH_FLAGS:-} "${peer[@]}" \
      --out "$logs/$name" --quiet >"$logs/$name.txt" 2>&1 ||
      fail "cellrun bench --device cuda ($precision) failed"
    cat "$logs/$name.txt"
  done
fi

# How the engine's host time and the GPU's busy time compare while
# `cellrun run` serves 20000 WMT-length requests on the hidden-1024 LSTM
# (nvidia-smi's utilization sampled every 100 ms), then the same run
# through the scheduler instead of the persistent chain batch, and with
# the delivery copy on one thread (--copy-threads 1) and on eight, and
# with only the final states asked for, with the results written by the
# device (--pinned-results), and with plans as CUDA graphs (--cuda-graphs).
# The first run and the --pinned-results and --cuda-graphs runs time their
# tasks on the device (--time-device: the share of the wall time a task was
# on the stream, the rest the GPU waited for the engine; the others stay
# comparable with earlier calls' host times); the first also writes its
# task log, whose tasks priced at the kernels step's plan times give issue
# 33's GPU busy share (bench/profile/gpu_busy_estimate.py).
if wanted busy && [ -f "$lstm1024" ] && enough 120 "busy"; then
  step "cellrun run --device cuda: host time and GPU utilization (hidden-1024 LSTM)"
  "$python" "$root/examples/common/make_requests.py" lstm "${GPU_CHECK_BUSY_REQUESTS:-20000}" "$work/wmt20k.jsonl" \
    --lengths "${GPU_CHECK_BUSY_LENGTHS:-$root/bench/workloads/wmt15.csv}" >/dev/null 2>&1 ||
    fail "make_requests.py failed"
  start_sampling "$logs/busy-utilization.csv"
  timeout "$(limit 90)" "$cellrun" run "$lstm1024" --device cuda --time-device \
    --input "$work/wmt20k.jsonl" --quiet --task-log "$logs/busy-tasks.csv" \
    >"$logs/busy-run.txt" 2>&1 || fail "cellrun run (busy) failed"
  stop_sampling
  cat "$logs/busy-run.txt"
  utilization "$logs/busy-utilization.csv"
  # Issue 33's measure: the run's tasks priced at the plan times the
  # kernels step measured (when it ran in this call), over the wall time.
  serve="$(serve_seconds "$logs/busy-run.txt")"
  if [ -f "$logs/cuda-lstm1024-fp32.csv" ] && [ -n "$serve" ]; then
    "$python" "$root/bench/profile/gpu_busy_estimate.py" "$logs/busy-tasks.csv" \
      "$logs/cuda-lstm1024-fp32.csv" "$serve" 2>&1 | tee "$logs/busy-estimate.txt"
  else
    echo "(no GPU busy estimate: the kernels step did not run in this call)"
  fi
  # The same through the scheduler (no persistent chain batch): the A/B of
  # the host path on this GPU.
  timeout "$(limit 90)" "$cellrun" run "$lstm1024" --device cuda \
    --input "$work/wmt20k.jsonl" --quiet --no-chain-batch >"$logs/busy-run-scheduler.txt" 2>&1 \
    || fail "cellrun run --no-chain-batch (busy) failed"
  echo "-- the same with --no-chain-batch:"
  cat "$logs/busy-run-scheduler.txt"
  # The delivery copy on the engine's thread alone (the default splits it
  # among a quarter of the cores, at most 4): what the copy threads buy.
  timeout "$(limit 90)" "$cellrun" run "$lstm1024" --device cuda \
    --input "$work/wmt20k.jsonl" --quiet --copy-threads 1 >"$logs/busy-run-copy1.txt" 2>&1 \
    || fail "cellrun run --copy-threads 1 (busy) failed"
  echo "-- the same with --copy-threads 1:"
  cat "$logs/busy-run-copy1.txt"
  # And with twice the default's cap (on the H200's 16 cores, 4): whether
  # more copy threads would take more of the engine's time off it.
  timeout "$(limit 90)" "$cellrun" run "$lstm1024" --device cuda \
    --input "$work/wmt20k.jsonl" --quiet --copy-threads 8 >"$logs/busy-run-copy8.txt" 2>&1 \
    || fail "cellrun run --copy-threads 8 (busy) failed"
  echo "-- the same with --copy-threads 8:"
  cat "$logs/busy-run-copy8.txt"
  # Only the final states asked for: no per-step row leaves the device, so
  # what is left is the engine and the executor without the results' copy.
  timeout "$(limit 90)" "$cellrun" run "$lstm1024" --device cuda \
    --input "$work/wmt20k.jsonl" --quiet --outputs final_h_next,final_c_next >"$logs/busy-run-final.txt" 2>&1 \
    || fail "cellrun run --outputs final_h_next,final_c_next (busy) failed"
  echo "-- the same with only the final states asked for (--outputs final_h_next,final_c_next):"
  cat "$logs/busy-run-final.txt"
  # `cellrun run` of the same trace with the flags after NAME, its tasks
  # timed on the device and the utilization sampled again. No results file:
  # the results are made all the same (each emitted row copied or written
  # by the device), only not printed; at hidden 1024 the trace's results
  # are 6 GB of JSON, which would take minutes to write and compare.
  busy_sampled() {
    local name="$1"
    shift
    start_sampling "$logs/busy-utilization-$name.csv"
    timeout "$(limit 90)" "$cellrun" run "$lstm1024" --device cuda --time-device \
      --input "$work/wmt20k.jsonl" --quiet "$@" >"$logs/busy-run-$name.txt" 2>&1 ||
      fail "cellrun run $* (busy) failed"
    stop_sampling
    echo "-- the same with $*:"
    cat "$logs/busy-run-$name.txt"
    utilization "$logs/busy-utilization-$name.csv"
  }
  # Results in page-locked memory the device writes (--pinned-results): the
  # emitted rows leave the device by the task's own kernel, no host copy.
  busy_sampled pinned --pinned-results
  # Each task's plan launched as one CUDA graph (--cuda-graphs): the host's
  # launch calls against the first run's; its report counts the plans
  # each way.
  busy_sampled graphs --cuda-graphs
  # Their results against the staged way's, on the first
  # GPU_CHECK_BUSY_CHECK_REQUESTS requests of the trace (default 300, about
  # 90 MB of results a file; other batches may sum in other orders:
  # compare-results.py's tolerance).
  head -n "${GPU_CHECK_BUSY_CHECK_REQUESTS:-300}" "$work/wmt20k.jsonl" >"$work/busy-check.jsonl"
  busy_results() { # NAME FLAGS...: the check trace's results in busy-check-NAME.jsonl
    local name="$1"
    shift
    timeout "$(limit 60)" "$cellrun" run "$lstm1024" --device cuda --input "$work/busy-check.jsonl" \
      --quiet "$@" --output "$work/busy-check-$name.jsonl" >"$logs/busy-check-$name.txt" 2>&1 ||
      fail "cellrun run $* --output (busy, the results' check) failed"
  }
  busy_compare() { # NAME FLAG: busy-check-NAME.jsonl against the staged run's
    echo "-- the results with $2 against the staged way's ($(wc -l <"$work/busy-check.jsonl") requests):"
    "$python" "$root/scripts/compare-results.py" "$work/busy-check-$1.jsonl" \
      "$work/busy-check-staged.jsonl" 2>&1 | tee "$logs/busy-$1-compare.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || fail "results with $2 differ from the staged run's"
  }
  busy_results staged
  busy_results pinned --pinned-results
  busy_results graphs --cuda-graphs
  grep -h -E "^rows read back|^task plans" "$logs/busy-check-pinned.txt" "$logs/busy-check-graphs.txt"
  busy_compare pinned --pinned-results
  busy_compare graphs --cuda-graphs
fi

# Engine threads sharing the GPU (--workers-per-device): `cellrun run` of
# 200000 fixed-length-24 requests and of 200000 WMT-like ones on the
# hidden-1024 LSTM with one to four workers on the device, at 6144 pool
# rows a worker (1024 running requests: two full tasks of 512; the default
# 4096 holds 682, tasks of 512 and 170 rows), each with nvidia-smi's
# utilization and, when the kernels step ran, its rate against the
# batch-512 task's and its tasks priced at the plan times over the wall
# (bench/profile/gpu_busy_estimate.py).
if wanted workers && [ -f "$lstm1024" ] && enough 60 "workers"; then
  step "cellrun run --device cuda with 1-4 workers on the device (hidden-1024 LSTM)"
  workers_flags="${GPU_CHECK_WORKERS_FLAGS:-}"
  # The traces by name: fixed24 (every request 24 steps), wmt (WMT-like).
  for trace in ${GPU_CHECK_WORKERS_TRACES:-fixed24 wmt}; do
    case "$trace" in
    fixed24) lengths=fixed24.csv ;;
    wmt) lengths=wmt15.csv ;;
    *) fail "workers step: no trace '$trace' (fixed24 or wmt)"; continue ;;
    esac
    "$python" "$root/examples/common/make_requests.py" lstm "${GPU_CHECK_WORKERS_REQUESTS:-200000}" \
      "$work/$trace.jsonl" --lengths "$root/bench/workloads/$lengths" >/dev/null 2>&1 ||
      { fail "make_requests.py failed (trace $trace)"; continue; }
    for rows in ${GPU_CHECK_WORKERS_POOL_ROWS:-6144}; do
      for workers in ${GPU_CHECK_WORKERS:-1 2 3 4}; do
        enough 15 "workers $trace $rows $workers" || break 3
        name="workers-$trace-rows$rows-w$workers"
        start_sampling "$logs/$name-utilization.csv"
        # With GPU_CHECK_WORKERS_FLAGS, and once more without them when that
        # failed (options not yet run on a GPU: the run still counts); the
        # later runs then go without them.
        flags="$workers_flags"
        while :; do
          # shellcheck disable=SC2086 # the flags are words
          timeout "$(limit 60)" "$cellrun" run "$lstm1024" --device cuda --input "$work/$trace.jsonl" \
            --quiet --pool-rows "$rows" --workers "$workers" --workers-per-device "$workers" $flags \
            --task-log "$logs/$name-tasks.csv" >"$logs/$name.txt" 2>&1 && break
          fail "cellrun run ($name${flags:+, $flags}) failed: $(tail -n 1 "$logs/$name.txt")"
          [ -n "$flags" ] && enough 15 "workers $trace $rows $workers without $flags" || break
          mv "$logs/$name.txt" "$logs/$name-failed-with-flags.txt"
          echo "-- again without $flags (and so the later runs of this step):"
          flags=""
          workers_flags=""
        done
        stop_sampling
        echo "-- $trace, --pool-rows $rows, $workers worker(s) on the device:"
        grep -E "^requests:|^cell |^engine:|^tasks a row-step|^workers:" "$logs/$name.txt"
        # Against the ideal of the batch-512 task when the kernels step
        # measured it in this call (issue 30's fixed-length goal: 90%).
        task512="$(awk -F, '$1 == 512 {print $6}' "$logs/cuda-lstm1024-fp32.csv" 2>/dev/null)"
        if [ -n "$task512" ]; then
          awk -v task="$task512" '/^engine:/ {rows = $2}
            /^time:/ {for (i = 1; i <= NF; ++i) if ($i == "serve") serve = $(i + 1)}
            END {if (rows && serve) printf "%.2fM row-steps/s: %.0f%% of the %.2fM/s of the batch-512 task (%.1f us)\n",
              rows / serve / 1e6, 100 * rows / serve / (512e6 / task), 512 / task, task}' "$logs/$name.txt"
          # The workers' tasks priced at the plan times, over the wall
          # (issue 33's GPU busy share; streams that overlap can pass 100%).
          serve="$(serve_seconds "$logs/$name.txt")"
          [ -n "$serve" ] && "$python" "$root/bench/profile/gpu_busy_estimate.py" \
            "$logs/$name-tasks.csv" "$logs/cuda-lstm1024-fp32.csv" "$serve" 2>&1
        fi
        utilization "$logs/$name-utilization.csv"
      done
    done
  done
fi

# The hidden-1024 seq2seq, attention seq2seq, TreeLSTM and GRU against their
# PyTorch peers on cuDNN (from GPU_CHECK_MODELS); each model's peer weights
# are regenerated here and checked against the digests of the artifact's.
if wanted models && [ -n "$models_manifest" ] && enough 90 "the hidden-1024 models"; then
  step "hidden-1024 seq2seq, attention, TreeLSTM and GRU against PyTorch"
  for model in $(awk '$1 == "models" {$1 = ""; print}' "$models_manifest"); do
    case "$model" in
    lstm) continue ;; # the bench step
    treelstm) workload=treebank.csv offline=4000 rates="${GPU_CHECK_TREE_SWEEP:-1000,4000}" duration=4 ;;
    # 1024 features a step: about 210 KB of JSON a request in the traces the
    # peer reads, so fewer requests.
    gru) workload=wmt15.csv offline=1000 rates="${GPU_CHECK_GRU_SWEEP:-1000}" duration=2 ;;
    *) workload=wmt15-pairs-max50.csv offline=2000 rates="${GPU_CHECK_SEQ2SEQ_SWEEP:-4000,8000}" duration=4 ;;
    esac
    enough 60 "$model at hidden 1024" || break
    peer=()
    timeout "$(limit 60)" "$python" "$root/examples/$model/generate.py" --size bench \
      --out "$work/$model-h1024" --weights-only >"$logs/$model-h1024-generate.log" 2>&1 ||
      fail "regenerating $model's peer weights failed (log: $model-h1024-generate.log)"
    if "$python" "$root/examples/common/weights_digest.py" "$work/$model-h1024/"*.pt \
      2>>"$logs/digest.log" | awk -v m="$model" '{print m, $1, $2}' |
      cmp -s - <(grep "^$model " "$(dirname "$models_manifest")/weights.sha256"); then
      peer=(--peer-weights "$work/$model-h1024" --python "$work/python" --peers-dir "$root/bench/peers")
    else
      fail "$model's regenerated weights differ from the artifact's: bench without the peer"
    fi
    timeout "$(limit 150)" "$cellrun" bench "$build/examples/$model/bench-fp32.cellpack" \
      --device cuda --workload "$root/bench/workloads/$workload" --sweep "$rates" \
      --duration "$duration" --offline "$offline" --policy cellular ${GPU_CHECK_MODELS_FLAGS:-} "${peer[@]}" \
      --out "$logs/bench-$model-1024" --quiet >"$logs/bench-$model-1024.txt" 2>&1 ||
      fail "cellrun bench --device cuda of $model at hidden 1024 failed"
    rm -f "$logs/bench-$model-1024/"{trace-,peer-,reference}*.jsonl
    cat "$logs/bench-$model-1024.txt"
    # The same model with its input projection hoisted, where packed: its
    # products wait in pool rows, a row a request step (hence the pools).
    hoisted="$build/examples/$model/bench-hoisted-fp32.cellpack"
    if [ -f "$hoisted" ] && enough 60 "$model hoisted at hidden 1024"; then
      timeout "$(limit 150)" "$cellrun" bench "$hoisted" \
        --device cuda --workload "$root/bench/workloads/$workload" --sweep "$rates" \
        --duration "$duration" --offline "$offline" --policy cellular --pool-rows 65536 \
        ${GPU_CHECK_MODELS_FLAGS:-} "${peer[@]}" \
        --out "$logs/bench-$model-1024-hoisted" --quiet >"$logs/bench-$model-1024-hoisted.txt" 2>&1 ||
        fail "cellrun bench --device cuda of $model hoisted at hidden 1024 failed"
      rm -f "$logs/bench-$model-1024-hoisted/"{trace-,peer-,reference}*.jsonl
      cat "$logs/bench-$model-1024-hoisted.txt"
    fi
  done
fi

# Where the hidden-1024 models' time goes: each cell's task and step at
# every batch size against cuBLAS (cuda_task_bench --cell), then `cellrun
# run` of 4000 requests (WMT-like pairs, or random trees; for the GRU 1000
# WMT-like ones of 1024 features a step) with the engine's host time a
# row-step.
if wanted cells && [ -n "$models_manifest" ] && enough 60 "the hidden-1024 cells"; then
  step "hidden-1024 cells: cuda_task_bench per cell and cellrun run"
  for model in $(awk '$1 == "models" {$1 = ""; print}' "$models_manifest"); do
    case "$model" in
    lstm) continue ;; # the kernels and busy steps
    treelstm) cells="leaf internal" kind=treelstm lengths=() count=4000 ;;
    # 1024 features a step: 1000 requests are about 250 MB of JSON.
    gru) cells="gru" kind=gru lengths=(--lengths "$root/bench/workloads/wmt15.csv" --features 1024) count=1000 ;;
    *) cells="encoder decoder" kind=seq2seq lengths=(--lengths "$root/bench/workloads/wmt15-pairs-max50.csv") count=4000 ;;
    esac
    artifact="$build/examples/$model/bench-fp32.cellpack"
    for cell in $cells; do
      enough 20 "cuda_task_bench $model $cell" || break
      timeout "$(limit 60)" "$build/bench/cuda_task_bench" "$artifact" --cell "$cell" \
        --csv "$logs/cuda-$model-$cell.csv" >"$logs/cuda-$model-$cell.txt" 2>&1 ||
        fail "cuda_task_bench $model --cell $cell failed"
      cat "$logs/cuda-$model-$cell.txt"
    done
    # The GRU's requests (1024 features a step, about 210 MB of JSON) take
    # longer to write and read.
    needed=20
    [ "$model" != gru ] || needed=80
    enough "$needed" "cellrun run $model at hidden 1024" || break
    timeout "$(limit 60)" "$python" "$root/examples/common/make_requests.py" "$kind" "$count" \
      "$work/$model-requests.jsonl" "${lengths[@]}" >/dev/null 2>&1 ||
      { fail "make_requests.py $kind failed"; continue; }
    timeout "$(limit 60)" "$cellrun" run "$artifact" --device cuda --input "$work/$model-requests.jsonl" \
      --quiet >"$logs/run-$model-1024.txt" 2>&1 || fail "cellrun run $model at hidden 1024 failed"
    cat "$logs/run-$model-1024.txt"
  done
fi

if wanted cpu && [ -f "$lstm1024" ] && enough 30 "task_bench"; then
  step "task_bench (the CPU backend on this machine)"
  timeout "$(limit 60)" "$build/bench/task_bench" "$lstm1024" \
    --csv "$logs/cpu-lstm1024.csv" --min-seconds 0.1 --threads 4 >"$logs/cpu-lstm1024.txt" 2>&1 ||
    fail "task_bench failed"
  cat "$logs/cpu-lstm1024.txt"
fi
# Nsight Compute on the small-batch GEMM: the skinny kernels with the most
# loads in flight (gather4 at 1 row, gather16 at 16) at every k-split count
# their contests try (55 launches each), on the hidden-1024 LSTM's shape.
ncu="$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)"
if wanted ncu && [ -n "$ncu" ] && enough 60 "ncu"; then
  step "ncu: the skinny GEMM's gather4 and gather16 kernels at 1 and 16 rows (n 4096, k 2048)"
  : >"$logs/ncu-skinny.txt"
  for profiled in "gather4 m1_n4096" "gather16 m16_n4096"; do
    read -r variant shape <<<"$profiled"
    enough 20 "ncu of cellrun_skinny_gemm_$variant" || break
    timeout "$(limit 60)" "$ncu" --kernel-name "cellrun_skinny_gemm_$variant" --launch-count 55 \
      --section SpeedOfLight --section LaunchStats \
      "$build/test/cuda-backend-tests" --gtest_filter="*${shape}*forced*" \
      >>"$logs/ncu-skinny.txt" 2>&1 || echo "(ncu exited with $?: see ncu-skinny.txt)"
  done
  # One line a profiled launch, then per kernel and grid: launches, the
  # fastest and the mean duration, DRAM throughput and registers.
  awk '/^ +cellrun_skinny_gemm/ {if (rec != "") print rec; rec = $1}
    /^ +Duration/ {rec = rec " " $(NF-1) "=" $NF}
    /DRAM Throughput/ {rec = rec " dram%=" $NF}
    /Grid Size/ {rec = rec " grid=" $NF}
    /Registers Per Thread/ {rec = rec " registers=" $NF}
    END {if (rec != "") print rec}' "$logs/ncu-skinny.txt" >"$logs/ncu-skinny-launches.txt"
  awk '{key = $1; us = ""; dram = ""; regs = ""
      for (i = 2; i <= NF; ++i) {
        split($i, kv, "=")
        if (kv[1] == "grid") key = key " grid=" kv[2]
        else if (kv[1] == "us") us = kv[2]
        else if (kv[1] == "dram%") dram = kv[2]
        else if (kv[1] == "registers") regs = kv[2]
      }
      if (us == "") next
      gsub(",", "", us)
      n[key]++; sum[key] += us; d[key] += dram; r[key] = regs
      if (!(key in best) || us < best[key]) best[key] = us}
    END {for (key in n) printf "%s launches=%d best_us=%.2f mean_us=%.2f dram%%=%.1f registers=%s\n",
      key, n[key], best[key], sum[key] / n[key], d[key] / n[key], r[key]}' \
    "$logs/ncu-skinny-launches.txt" | sort
fi
# Nsight Compute on the hidden-1024 attention decoder's kernels at batch 128
# (each of its kernels once: which of them keep the step at 4-5x its GEMMs).
attention1024="$build/examples/attention/bench-fp32.cellpack"
if wanted ncu && [ -n "$ncu" ] && [ -f "$attention1024" ] && enough 60 "ncu of the decoder"; then
  step "ncu: the hidden-1024 attention decoder's kernels at batch 128"
  timeout "$(limit 120)" "$ncu" --kernel-name regex:decoder_b128_k --launch-count 16 \
    --section SpeedOfLight --section LaunchStats \
    "$build/bench/cuda_task_bench" "$attention1024" --cell decoder \
    >"$logs/ncu-decoder.txt" 2>&1 || echo "(ncu exited with $?: see ncu-decoder.txt)"
  # One line a profiled kernel (its report's header line, not ncu's
  # "Profiling" progress lines): name, duration, DRAM share, grid.
  awk '/^ +decoder_b128_k[0-9]+ \(/ {if (rec != "") print rec; match($0, /decoder_b128_k[0-9]+/);
      rec = substr($0, RSTART, RLENGTH)}
    /^ +Duration/ {rec = rec " " $(NF-1) "=" $NF}
    /DRAM Throughput/ {rec = rec " dram%=" $NF}
    /Grid Size/ {rec = rec " grid=" $NF}
    END {if (rec != "") print rec}' "$logs/ncu-decoder.txt" | head -n 20
fi
# With what time is left: compute-sanitizer's memcheck and racecheck on the
# CUDA backend's tests (the skinny GEMM at its small shape only) and one
# engine case (slow: tens of times the run).
sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)"
if ! wanted sanitizer; then
  :
elif [ -z "$sanitizer" ]; then
  echo "(no compute-sanitizer on this machine: skipped)"
else
  for tool in memcheck racecheck; do
    enough 60 "compute-sanitizer $tool" || continue
    step "compute-sanitizer --tool $tool cuda-backend-tests, engine-cuda-tests (lstm)"
    timeout "$(limit 120)" "$sanitizer" --tool "$tool" --error-exitcode 3 \
      "$build/test/cuda-backend-tests" --gtest_filter='-*n4096*' >"$logs/sanitizer-$tool-backend.log" 2>&1 ||
      fail "compute-sanitizer $tool cuda-backend-tests (log: sanitizer-$tool-backend.log)"
    timeout "$(limit 120)" "$sanitizer" --tool "$tool" --error-exitcode 3 \
      "$build/test/engine-cuda-tests" --gtest_filter='*/0' >"$logs/sanitizer-$tool-engine.log" 2>&1 ||
      fail "compute-sanitizer $tool engine-cuda-tests (log: sanitizer-$tool-engine.log)"
    tail -n 2 "$logs/sanitizer-$tool-backend.log" "$logs/sanitizer-$tool-engine.log"
  done
fi
[ "$status" -eq 0 ] && echo "gpu-check: every step passed" || cat "$logs/failures.txt"
exit "$status"
