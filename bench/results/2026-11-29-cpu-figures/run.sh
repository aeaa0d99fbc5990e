#!/usr/bin/env bash
# The paper's latency-throughput figures for seq2seq, attention seq2seq and
# TreeLSTM at hidden 1024 on the 2-core VM: every policy and the PyTorch peer
# (OpenBLAS AVX-512 kernels), rates raised by half until each system's
# latency diverges, --repeat 3, plus an offline run; from the repository
# root after scripts/build.sh and `ninja -C build bench-artifacts`.
set -euo pipefail
out=bench/results/2026-11-29-cpu-figures
cellrun=build/tools/cellrun/cellrun
common=(--saturate --duration 6 --threads 2 --repeat 3 --quiet --plot)
$cellrun bench build/examples/seq2seq/bench-fp32.cellpack \
  --workload bench/workloads/wmt15-pairs-max50.csv --rate 25 --offline 200 "${common[@]}" \
  --peer-weights build/examples/seq2seq/h1024-bench --out $out/seq2seq > $out/seq2seq.txt
$cellrun bench build/examples/attention/bench-fp32.cellpack \
  --workload bench/workloads/wmt15-pairs-max50.csv --rate 25 --offline 200 "${common[@]}" \
  --peer-weights build/examples/attention/h1024-bench --out $out/attention > $out/attention.txt
$cellrun bench build/examples/treelstm/bench-fp32.cellpack \
  --workload bench/workloads/treebank.csv --rate 50 --offline 400 "${common[@]}" \
  --peer-weights build/examples/treelstm/h1024-bench --out $out/treelstm > $out/treelstm.txt
rm -f $out/*/trace-*.jsonl $out/*/peer-*.jsonl $out/*/reference.jsonl
