#!/usr/bin/env bash
# The runs of this directory, in order, on an otherwise idle machine (the
# 2-core Xeon VM with AVX-512), from the repository root after
# `scripts/build.sh` and `ninja -C build bench-artifacts`. The GRU at hidden
# 1024 (feature inputs) is compiled here: it is not a bench artifact.
set -euo pipefail
out=bench/results/2026-11-26-cpu-onnxruntime
cellrun=build/tools/cellrun/cellrun
/usr/bin/python3 examples/gru/generate.py --size paper --out build/examples/gru/h1024 > /dev/null
build/tools/cellc/cellc examples/gru/model-paper.yaml --onnx-dir build/examples/gru \
  --precision=fp32 -o build/examples/gru/paper-fp32.cellpack --quiet
# The step against OpenBLAS and its weight read, AVX-512 and AVX2 kernels; MLAS's GEMM.
OPENBLAS_CORETYPE=SkylakeX build/bench/task_bench build/examples/lstm/bench-fp32.cellpack --threads 2 \
  --csv $out/task-avx512.csv > $out/task-avx512.txt
CELLRUN_CPU_ISA=avx2 OPENBLAS_CORETYPE=SkylakeX build/bench/task_bench build/examples/lstm/bench-fp32.cellpack \
  --threads 2 --csv $out/task-avx2.csv > $out/task-avx2.txt
build/venv/bin/python bench/peers/onnxruntime_gemm.py --k 1024 --n 4096 --threads 2 \
  --csv $out/onnxruntime-gemm-k1024.csv > $out/onnxruntime-gemm-k1024.txt
build/venv/bin/python bench/peers/onnxruntime_gemm.py --k 2048 --n 4096 --threads 2 \
  --csv $out/onnxruntime-gemm-k2048.csv > $out/onnxruntime-gemm-k2048.txt
# Offline, --repeat 3: the LSTM (tokens), the GRU (features), attention seq2seq.
$cellrun bench build/examples/lstm/bench-fp32.cellpack --workload bench/workloads/wmt15.csv \
  --offline 2000 --policy cellular --threads 2 --quiet --repeat 3 \
  --peer-weights build/examples/lstm/h1024-bench/lstm.pt --peers onnxruntime \
  --peer-max-batch 64 --out $out/lstm-offline > $out/lstm-offline.txt
$cellrun bench build/examples/gru/paper-fp32.cellpack --workload bench/workloads/wmt15.csv \
  --offline 1000 --policy cellular --threads 2 --quiet --repeat 3 \
  --peer-weights build/examples/gru/h1024/gru.pt --peers onnxruntime \
  --peer-max-batch 16 --out $out/gru-offline > $out/gru-offline.txt
$cellrun bench build/examples/attention/bench-fp32.cellpack \
  --workload bench/workloads/wmt15-pairs-max50.csv --offline 200 --policy cellular \
  --threads 2 --quiet --repeat 3 --peer-weights build/examples/attention/h1024-bench \
  --peers onnxruntime --peer-max-batch 64 --out $out/attention-offline > $out/attention-offline.txt
# Online: the same Poisson traces, ONNX Runtime batching by length buckets of 10.
$cellrun bench build/examples/lstm/bench-fp32.cellpack --workload bench/workloads/wmt15.csv \
  --sweep 100,150,200,250 --duration 10 --policy cellular --threads 2 --quiet \
  --peer-weights build/examples/lstm/h1024-bench/lstm.pt --peers onnxruntime \
  --peer-max-batch 64 --peer-buckets 10 --plot --out $out/lstm-online > $out/lstm-online.txt
# The large per-run traces are not kept.
rm -f $out/*/trace-*.jsonl $out/*/peer-*.jsonl $out/*/reference.jsonl
