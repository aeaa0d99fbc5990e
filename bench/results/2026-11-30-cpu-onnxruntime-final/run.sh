#!/usr/bin/env bash
# Issue 31's measurements on one build (see README.md), in order, on the
# otherwise idle 2-core Xeon VM (AVX-512), from the repository root after
# `scripts/build.sh` and `ninja -C build bench-artifacts`.
set -euo pipefail
out=bench/results/2026-11-30-cpu-onnxruntime-final
cellrun=build/tools/cellrun/cellrun
common=(--policy cellular --threads 2 --quiet --repeat 3 --pool-rows 16384
        --chain-order longest-first --peers onnxruntime --peer-buckets 10 --plot)
# The GRU fed 1024 features: offline 1000 (longest first), online (taking turns).
$cellrun bench build/examples/gru/bench-fp32.cellpack --workload bench/workloads/wmt15.csv \
  --offline 1000 --sweep 100,207,300 --duration 10 "${common[@]}" \
  --peer-weights build/examples/gru/h1024-bench/gru.pt --peer-max-batch 16 \
  --out $out/gru > $out/gru.txt
# The token-fed LSTM language model, likewise.
$cellrun bench build/examples/lstm/bench-fp32.cellpack --workload bench/workloads/wmt15.csv \
  --offline 2000 --sweep 100,200,300 --duration 10 "${common[@]}" \
  --peer-weights build/examples/lstm/h1024-bench/lstm.pt --peer-max-batch 64 \
  --out $out/lstm > $out/lstm.txt
# Attention seq2seq offline against ONNX Runtime's step loop around the decoder.
$cellrun bench build/examples/attention/bench-fp32.cellpack \
  --workload bench/workloads/wmt15-pairs-max50.csv --offline 200 --policy cellular \
  --threads 2 --quiet --repeat 3 --peer-weights build/examples/attention/h1024-bench \
  --peers onnxruntime --peer-max-batch 64 --out $out/attention > $out/attention.txt
# The step against OpenBLAS (AVX-512 and AVX2 kernels) and MLAS's GEMM.
OPENBLAS_CORETYPE=SkylakeX build/bench/task_bench build/examples/lstm/bench-fp32.cellpack \
  --threads 2 --csv $out/task-avx512.csv > $out/task-avx512.txt
CELLRUN_CPU_ISA=avx2 OPENBLAS_CORETYPE=SkylakeX build/bench/task_bench \
  build/examples/lstm/bench-fp32.cellpack --threads 2 --csv $out/task-avx2.csv > $out/task-avx2.txt
build/venv/bin/python bench/peers/onnxruntime_gemm.py --k 1024 --n 4096 --threads 2 \
  --csv $out/onnxruntime-gemm-k1024.csv > $out/onnxruntime-gemm-k1024.txt
build/venv/bin/python bench/peers/onnxruntime_gemm.py --k 2048 --n 4096 --threads 2 \
  --csv $out/onnxruntime-gemm-k2048.csv > $out/onnxruntime-gemm-k2048.txt
# The large per-run traces are not kept.
rm -f $out/*/trace-*.jsonl $out/*/peer-*.jsonl $out/*/reference.jsonl
