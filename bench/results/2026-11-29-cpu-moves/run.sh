#!/usr/bin/env bash
# Two workers of one thread, requests moving between them (the default) and
# not (--no-move), against one worker of two threads; the same offline
# traces (cellular batching, hidden 1024, --repeat 3) on the 2-core VM; from
# the repository root after scripts/build.sh and
# `ninja -C build bench-artifacts`. No peer: this compares our layouts.
set -euo pipefail
out=bench/results/2026-11-29-cpu-moves
cellrun=build/tools/cellrun/cellrun
common=(--policy cellular --repeat 3 --quiet)
for layout in "1 2" "2 1" "2 1 --no-move"; do
  set -- $layout
  name="workers$1-threads$2${3:-}"
  $cellrun bench build/examples/lstm/bench-fp32.cellpack --workload bench/workloads/wmt15.csv \
    --offline 2000 --workers $1 --threads $2 ${3:-} "${common[@]}" --out $out/lstm-$name > $out/lstm-$name.txt
  $cellrun bench build/examples/seq2seq/bench-fp32.cellpack \
    --workload bench/workloads/wmt15-pairs-max50.csv --offline 200 --workers $1 --threads $2 ${3:-} \
    "${common[@]}" --out $out/seq2seq-$name > $out/seq2seq-$name.txt
  $cellrun bench build/examples/treelstm/bench-fp32.cellpack --workload bench/workloads/treebank.csv \
    --offline 400 --workers $1 --threads $2 ${3:-} "${common[@]}" --out $out/treelstm-$name > $out/treelstm-$name.txt
done
rm -f $out/*/trace-*.jsonl
