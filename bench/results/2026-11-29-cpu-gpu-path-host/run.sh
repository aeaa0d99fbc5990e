#!/usr/bin/env bash
# The engine's host cost on the GPU's path (rounds overlapped, rows read back
# through each task's buffer and copied into the results), measured on the
# CPU over null tasks: the hidden-1024 LSTM (4 KB emitted a row-step) and the
# hidden-16 one, with the worker copying alone and with two copy threads,
# alternating; BASELINE is a host_bench built before the read buffer stopped
# being zeroed (541e58b). Run at 91261e6 (build/bench/host_bench had
# --copy-threads then; it went with the copy threads). From the repository root after
# `ninja -C build bench-artifacts host_bench`.
set -euo pipefail
out=bench/results/2026-11-29-cpu-gpu-path-host
baseline="${1:?usage: run.sh BASELINE_HOST_BENCH}"
current=build/bench/host_bench
common=(--workload bench/workloads/wmt15.csv --batches 64,256,512 --row-steps 300000 --gpu-path)
for r in 1 2 3; do
  "$baseline" build/examples/lstm/bench-fp32.cellpack "${common[@]}" > $out/lstm1024-baseline-$r.txt
  "$current" build/examples/lstm/bench-fp32.cellpack "${common[@]}" --copy-threads 1 > $out/lstm1024-copy1-$r.txt
  "$current" build/examples/lstm/bench-fp32.cellpack "${common[@]}" --copy-threads 2 > $out/lstm1024-copy2-$r.txt
done
"$current" build/examples/lstm/tiny-fp32.cellpack "${common[@]}" --copy-threads 1 > $out/tiny-copy1.txt
"$current" build/examples/lstm/bench-fp32.cellpack --workload bench/workloads/wmt15.csv \
  --batches 64,256,512 --row-steps 300000 > $out/lstm1024-cpu-path.txt
