#!/usr/bin/env bash
# The CPU against ONNX Runtime on a machine without AVX-512 (a 2-vCPU AMD
# EPYC VM, AVX2 and FMA): the offline LSTM and GRU of
# ../2026-11-30-cpu-onnxruntime-final/ with the same flags, and the LSTM's
# step against MLAS's GEMM. From the repository root after
# `scripts/build.sh` and `ninja -C build bench-artifacts`.
set -euo pipefail
out=bench/results/2026-12-03-cpu-avx2-onnxruntime
cellrun=build/tools/cellrun/cellrun
common=(--policy cellular --threads 2 --quiet --repeat 3 --pool-rows 16384
        --chain-order longest-first --peers onnxruntime --peer-buckets 10)
$cellrun bench build/examples/lstm/bench-fp32.cellpack --workload bench/workloads/wmt15.csv \
  --offline 2000 "${common[@]}" \
  --peer-weights build/examples/lstm/h1024-bench/lstm.pt --peer-max-batch 64 \
  --out $out/lstm > $out/lstm.txt
$cellrun bench build/examples/gru/bench-fp32.cellpack --workload bench/workloads/wmt15.csv \
  --offline 1000 "${common[@]}" \
  --peer-weights build/examples/gru/h1024-bench/gru.pt --peer-max-batch 16 \
  --out $out/gru > $out/gru.txt
build/bench/task_bench build/examples/lstm/bench-fp32.cellpack --threads 2 \
  --csv $out/task-avx2.csv > $out/task-avx2.txt
build/venv/bin/python bench/peers/onnxruntime_gemm.py --k 1024 --n 4096 --threads 2 \
  --csv $out/onnxruntime-gemm-k1024.csv > $out/onnxruntime-gemm-k1024.txt
rm -f $out/*/trace-*.jsonl $out/*/peer-*.jsonl $out/*/reference.jsonl
