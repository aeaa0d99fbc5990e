#!/usr/bin/env bash
# The activations with fused multiply-adds (7b3c922) against the commit
# before (f3c1209), alternating: the hidden-16 LSTM served by `cellrun run`
# (20000 WMT-like requests, one thread, pools for batch 512) and one task of
# the hidden-64 LSTM by batch size (task_bench, one thread). OLD_CELLRUN and
# OLD_TASK_BENCH are binaries built at f3c1209. From the repository root
# after `ninja -C build all bench-artifacts`.
set -euo pipefail
out=bench/results/2026-11-29-cpu-fma-activations
old_cellrun="${1:?usage: run.sh OLD_CELLRUN OLD_TASK_BENCH}"
old_task_bench="${2:?usage: run.sh OLD_CELLRUN OLD_TASK_BENCH}"
requests=$(mktemp)
/usr/bin/python3 examples/common/make_requests.py lstm 20000 "$requests" \
  --lengths bench/workloads/wmt15.csv >/dev/null
run() {
  "$1" run build/examples/lstm/tiny-fp32.cellpack --input "$requests" --threads 1 \
    --pool-rows 16384 --device cpu --quiet 2>&1 | grep -E "^(time|engine):"
}
for r in 1 2 3 4 5; do
  run "$old_cellrun" >$out/tiny-baseline-$r.txt
  run build/tools/cellrun/cellrun >$out/tiny-current-$r.txt
done
for r in 1 2 3; do
  "$old_task_bench" build/examples/lstm/model.cellpack --threads 1 >$out/task-h64-baseline-$r.txt 2>&1
  build/bench/task_bench build/examples/lstm/model.cellpack --threads 1 >$out/task-h64-current-$r.txt 2>&1
done
rm -f "$requests"
