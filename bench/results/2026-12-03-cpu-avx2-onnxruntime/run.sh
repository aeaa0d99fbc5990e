#!/usr/bin/env bash
# The CPU against ONNX Runtime on a machine without AVX-512 (a 2-vCPU AMD
# EPYC VM, AVX2 and FMA): the offline LSTM and GRU of
# ../2026-11-30-cpu-onnxruntime-final/ with the same flags, the GRU with its
# input projection hoisted too, online at about a third and half of ONNX
# Runtime's offline rate here, and the LSTM's step against MLAS's GEMM. From
# the repository root after `scripts/build.sh` and
# `ninja -C build bench-artifacts`.
set -euo pipefail
out=bench/results/2026-12-03-cpu-avx2-onnxruntime
cellrun=build/tools/cellrun/cellrun
common=(--policy cellular --threads 2 --quiet --repeat 3 --pool-rows 16384
        --chain-order longest-first --peers onnxruntime --peer-buckets 10)
online=(--policy cellular --threads 2 --quiet --repeat 3 --pool-rows 16384
        --peers onnxruntime --peer-buckets 10 --duration 10)
lstm=(--workload bench/workloads/wmt15.csv
      --peer-weights build/examples/lstm/h1024-bench/lstm.pt --peer-max-batch 64)
gru=(--workload bench/workloads/wmt15.csv
     --peer-weights build/examples/gru/h1024-bench/gru.pt --peer-max-batch 16)
# Offline (ours longest first).
$cellrun bench build/examples/lstm/bench-fp32.cellpack --offline 2000 "${lstm[@]}" \
  "${common[@]}" --out $out/lstm > $out/lstm.txt
$cellrun bench build/examples/gru/bench-fp32.cellpack --offline 1000 "${gru[@]}" \
  "${common[@]}" --out $out/gru > $out/gru.txt
$cellrun bench build/examples/gru/bench-hoisted-fp32.cellpack --offline 1000 "${gru[@]}" \
  "${common[@]}" --out $out/gru-hoisted > $out/gru-hoisted.txt
# Online, taking turns (the default): light load, then half of ONNX
# Runtime's offline rate above.
$cellrun bench build/examples/lstm/bench-fp32.cellpack --sweep 70 "${lstm[@]}" \
  "${online[@]}" --out $out/lstm-online > $out/lstm-online.txt
$cellrun bench build/examples/gru/bench-fp32.cellpack --sweep 60 "${gru[@]}" \
  "${online[@]}" --out $out/gru-online > $out/gru-online.txt
$cellrun bench build/examples/gru/bench-hoisted-fp32.cellpack --sweep 60 "${gru[@]}" \
  "${online[@]}" --out $out/gru-hoisted-online > $out/gru-hoisted-online.txt
$cellrun bench build/examples/lstm/bench-fp32.cellpack --sweep 107 "${lstm[@]}" \
  "${online[@]}" --out $out/lstm-online-half > $out/lstm-online-half.txt
$cellrun bench build/examples/gru/bench-fp32.cellpack --sweep 156 "${gru[@]}" \
  "${online[@]}" --out $out/gru-online-half > $out/gru-online-half.txt
$cellrun bench build/examples/gru/bench-hoisted-fp32.cellpack --sweep 156 "${gru[@]}" \
  "${online[@]}" --out $out/gru-hoisted-online-half > $out/gru-hoisted-online-half.txt
# The step against OpenBLAS's sgemm and MLAS's MatMul.
build/bench/task_bench build/examples/lstm/bench-fp32.cellpack --threads 2 \
  --csv $out/task-avx2.csv > $out/task-avx2.txt
build/venv/bin/python bench/peers/onnxruntime_gemm.py --k 1024 --n 4096 --threads 2 \
  --csv $out/onnxruntime-gemm-k1024.csv > $out/onnxruntime-gemm-k1024.txt
rm -f $out/*/trace-*.jsonl $out/*/peer-*.jsonl $out/*/reference.jsonl
