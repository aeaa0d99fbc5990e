#!/usr/bin/env bash
# The hoisted GRU online against ONNX Runtime again, on the same kind of
# 2-vCPU AMD EPYC VM as ../2026-12-03-cpu-avx2-onnxruntime/ and with its
# flags: light load (60/s) and about half of ONNX Runtime's offline rate
# (156/s). From the repository root after `scripts/build.sh all
# bench-artifacts`.
set -euo pipefail
out=bench/results/2026-12-03-cpu-avx2-gru-online-again
cellrun=build/tools/cellrun/cellrun
online=(--policy cellular --threads 2 --quiet --repeat 3 --pool-rows 16384
        --peers onnxruntime --peer-buckets 10 --duration 10)
gru=(--workload bench/workloads/wmt15.csv
     --peer-weights build/examples/gru/h1024-bench/gru.pt --peer-max-batch 16)
$cellrun bench build/examples/gru/bench-hoisted-fp32.cellpack --sweep 60 "${gru[@]}" \
  "${online[@]}" --out $out/gru-hoisted-online > $out/gru-hoisted-online.txt
$cellrun bench build/examples/gru/bench-hoisted-fp32.cellpack --sweep 156 "${gru[@]}" \
  "${online[@]}" --out $out/gru-hoisted-online-half > $out/gru-hoisted-online-half.txt
rm -f $out/*/trace-*.jsonl $out/*/peer-*.jsonl $out/*/reference.jsonl
