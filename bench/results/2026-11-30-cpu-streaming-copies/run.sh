#!/usr/bin/env bash
# Streaming stores for the rows copied into the results (StreamingCopy.h):
# host_bench --gpu-path (the engine as it runs for the cuda backend, over
# null tasks) of the hidden-1024 LSTM, WMT-like lengths, with
# CELLRUN_CPU_STREAMING=off and on, alternating, three times. From the
# repository root after `ninja -C build bench-artifacts host_bench`.
set -euo pipefail
out=bench/results/2026-11-30-cpu-streaming-copies
for r in 1 2 3; do
  for mode in off on; do
    CELLRUN_CPU_STREAMING=$mode build/bench/host_bench \
      build/examples/lstm/bench-fp32.cellpack --workload bench/workloads/wmt15.csv \
      --batches 64 128 256 512 --row-steps 300000 --gpu-path > "$out/lstm1024-$mode-$r.txt"
  done
done
