#!/usr/bin/env bash
# scripts/gpu-check.sh end to end without a GPU (scripts/gpu-check-dry-run.sh:
# the cpu backend and the hidden-16 LSTM in the GPU's and hidden-1024's
# place, a recorded kernel table): the steps a GPU call runs for issues 30
# and 33 (runs, kernels, busy, workers) go through, write their logs, and
# print what their readers look for. Small traces, about 20 s.
#   gpu_check_dry_run_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
source_dir="$1" build="$2" work="$3"
rm -rf "$work" && mkdir -p "$work"
code=0
GPU_CHECK_STEPS="runs kernels busy workers" GPU_CHECK_SECONDS=300 \
  GPU_CHECK_BUSY_REQUESTS=2000 GPU_CHECK_BUSY_CHECK_REQUESTS=100 \
  GPU_CHECK_WORKERS="1 2" GPU_CHECK_WORKERS_REQUESTS=2000 GPU_CHECK_WORKERS_TRACES=wmt \
  GPU_CHECK_WORKERS_FLAGS="--pinned-results --cuda-graphs" \
  "$source_dir/scripts/gpu-check-dry-run.sh" "$work/out" "$build" >"$work/dry-run.txt" 2>&1 || code=$?
fails=0
expect() { # PATTERN COUNT: the printed log holds PATTERN at least COUNT times
  local found
  found=$(grep -c -E -- "$1" "$work/dry-run.txt" || true)
  if [ "$found" -lt "$2" ]; then
    echo "FAIL: '$1' printed $found times, expected at least $2"
    fails=1
  fi
}
[ "$code" -eq 0 ] || { echo "FAIL: gpu-check-dry-run.sh exited with $code"; fails=1; }
expect "^gpu-check: every step passed$" 1
expect "^== cellrun run (lstm|gru|seq2seq|treelstm|attention|bahdanau) \(cuda against cpu\)" 6
expect "^== cuda_task_bench \(fp32, --graphs\)" 1
# The busy step: its runs, issue 33's estimate, the results compared.
expect "^-- the same with (--no-chain-batch|--copy-threads 1|--copy-threads 8|--pinned-results|--cuda-graphs):" 5
expect "^engine: [0-9]+ row-steps" 8
expect "^GPU busy \(estimate\): [0-9]+ tasks of .* over [0-9.]+ s of serving: [0-9]+%$" 3
expect "^-- the results with --(pinned-results|cuda-graphs) against the staged way's \(100 requests\):" 2
expect "^100 results, [0-9]+ values, worst difference .*: equal$" 2
# The workers step: one and two engine threads, each against the table.
expect "^-- wmt, --pool-rows 6144, [12] worker\(s\) on the device:" 2
expect "M row-steps/s: [0-9]+% of the .* of the batch-512 task" 2
# The logs a results directory keeps.
for log in busy-tasks.csv busy-estimate.txt cuda-lstm1024-fp32.csv busy-pinned-compare.txt \
  workers-wmt-rows6144-w2-tasks.csv run-lstm-compare.txt; do
  tar -tzf "$work/out/gpu-check-logs.tgz" "gpu-check/$log" >/dev/null 2>&1 ||
    { echo "FAIL: gpu-check-logs.tgz lacks $log"; fails=1; }
done
if [ "$fails" -ne 0 ]; then
  echo "--- the dry run printed:"
  cat "$work/dry-run.txt"
  exit 1
fi
echo "gpu-check dry run: every step went through ($(grep -c '^== ' "$work/dry-run.txt") steps)"
