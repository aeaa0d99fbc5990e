#!/usr/bin/env bash
# The CPU backend's GEMM alone ([m, 1024] x [1024, 4096], the hidden-1024
# LSTM step's) against ONNX Runtime's MatMul (MLAS) on a 2-vCPU AMD EPYC VM
# without AVX-512, 1 and 2 threads, the two taking turns three times. From
# the repository root after `scripts/build.sh all`:
#   run.sh LABEL   (files LABEL-ours-t<threads>-<round>.*, LABEL-mlas-...)
# "before" ran at 81b1b41, "after" with the 2- and 3-row kernels' fix.
set -euo pipefail
label="${1:?usage: run.sh LABEL}"
out=bench/results/2026-12-03-cpu-avx2-gemm
rows=1,2,3,4,6,8,12,16,24,32,64,128,256,512
for round in 1 2 3; do
  for threads in 1 2; do
    build/bench/gemm_bench --threads $threads --rows $rows --min-seconds 0.5 \
      --csv "$out/$label-ours-t$threads-$round.csv" > "$out/$label-ours-t$threads-$round.txt"
    build/venv/bin/python bench/peers/onnxruntime_gemm.py --k 1024 --n 4096 \
      --batches $rows --threads $threads --min-seconds 0.5 \
      --csv "$out/$label-mlas-t$threads-$round.csv" > "$out/$label-mlas-t$threads-$round.txt"
  done
done
