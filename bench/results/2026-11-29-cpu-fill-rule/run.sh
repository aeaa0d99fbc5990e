#!/usr/bin/env bash
# The fill rule (cellular: a decoder or a tree's internal nodes with fewer
# ready nodes than --fill-rows wait up to 4 rounds while their encoders or
# leaves have that many ready) on and off, same build, same traces, on the
# 2-core CPU VM: offline against graph batching, then online. From the
# repository root after `scripts/build.sh` and `ninja -C build bench-artifacts`.
set -euo pipefail
out=bench/results/2026-11-29-cpu-fill-rule
cellrun=build/tools/cellrun/cellrun
pairs=bench/workloads/wmt15-pairs-max50.csv
for model in seq2seq attention; do
  for fill in 0 32; do
    $cellrun bench build/examples/$model/bench-fp32.cellpack --workload $pairs \
      --offline 200 --policy cellular,graph --threads 2 --quiet --repeat 3 \
      --fill-rows $fill --out $out/$model-offline-fill$fill > $out/$model-offline-fill$fill.txt
    $cellrun bench build/examples/$model/bench-fp32.cellpack --workload $pairs \
      --sweep 100,200,300 --duration 6 --policy cellular --threads 2 --quiet \
      --repeat 3 --fill-rows $fill --out $out/$model-online-fill$fill > $out/$model-online-fill$fill.txt
  done
done
for fill in 0 32; do
  $cellrun bench build/examples/treelstm/bench-fp32.cellpack --workload bench/workloads/treebank.csv \
    --offline 400 --policy cellular,graph --threads 2 --quiet --repeat 3 \
    --fill-rows $fill --out $out/treelstm-offline-fill$fill > $out/treelstm-offline-fill$fill.txt
done
rm -f $out/*/trace-*.jsonl $out/*/peer-*.jsonl $out/*/reference.jsonl
# Past the knee, cellular against graph batching (the 2026-11-26 figures had
# graph ahead there: seq2seq at 427/s offered served 425 against 345).
$cellrun bench build/examples/seq2seq/bench-fp32.cellpack --workload $pairs \
  --sweep 350,425,500 --duration 6 --policy cellular,graph --threads 2 --quiet \
  --repeat 3 --out $out/seq2seq-knee > $out/seq2seq-knee.txt
$cellrun bench build/examples/attention/bench-fp32.cellpack --workload $pairs \
  --sweep 175,225,275 --duration 6 --policy cellular,graph --threads 2 --quiet \
  --repeat 3 --out $out/attention-knee > $out/attention-knee.txt
$cellrun bench build/examples/treelstm/bench-fp32.cellpack --workload bench/workloads/treebank.csv \
  --sweep 450,550,650 --duration 6 --policy cellular,graph --threads 2 --quiet \
  --repeat 3 --out $out/treelstm-knee > $out/treelstm-knee.txt
rm -f $out/*/trace-*.jsonl $out/*/peer-*.jsonl $out/*/reference.jsonl
# After `cellrun bench --offline` submits the whole trace before the engine's
# worker starts (Engine::startWorkers): graph batching's first batch is the
# whole trace, not the half that won the race with the submitting thread.
for model in seq2seq attention; do
  $cellrun bench build/examples/$model/bench-fp32.cellpack --workload $pairs \
    --offline 200 --policy cellular,graph,padded --threads 2 --quiet --repeat 3 \
    --out $out/$model-offline-whole-trace > $out/$model-offline-whole-trace.txt
done
$cellrun bench build/examples/treelstm/bench-fp32.cellpack --workload bench/workloads/treebank.csv \
  --offline 400 --policy cellular,graph --threads 2 --quiet --repeat 3 \
  --out $out/treelstm-offline-whole-trace > $out/treelstm-offline-whole-trace.txt
rm -f $out/*/trace-*.jsonl $out/*/peer-*.jsonl $out/*/reference.jsonl
