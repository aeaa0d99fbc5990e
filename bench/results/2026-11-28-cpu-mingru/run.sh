#!/usr/bin/env bash
# minGRU (examples/mingru: two stacked layers) against PyTorch running the
# same weights over padded batches, each layer's Linear over all steps at
# once and its recurrence as a step loop (bench/peers/mingru_peer.py), on
# the 2-core VM; from the
# repository root after scripts/build.sh. Hidden 64 (the example) and 1024
# (model-paper.yaml, compiled here).
set -euo pipefail
out=bench/results/2026-11-28-cpu-mingru
cellrun=build/tools/cellrun/cellrun
/usr/bin/python3 examples/mingru/generate.py --size paper --out build/examples/mingru/h1024 > /dev/null
build/tools/cellc/cellc examples/mingru/model-paper.yaml --onnx-dir build/examples/mingru \
  --precision=fp32 -o build/examples/mingru/paper-fp32.cellpack --quiet
# The peer at its best here: batches of at most 64, online grouped by length
# buckets of 10 (sorted batches of 512 pad to the longest request: 66.7/s
# offline at hidden 1024 in a first run).
common=(--workload bench/workloads/wmt15.csv --policy cellular --threads 2 --repeat 3 --quiet --plot
        --peer-max-batch 64 --peer-buckets 10)
$cellrun bench build/examples/mingru/model.cellpack "${common[@]}" --offline 2000 \
  --sweep 1000,2000,4000 --duration 6 --peer-weights build/examples/mingru/h64 \
  --out $out/h64 > $out/h64.txt
$cellrun bench build/examples/mingru/paper-fp32.cellpack "${common[@]}" --offline 1000 \
  --sweep 100,200,400 --duration 6 --peer-weights build/examples/mingru/h1024 \
  --out $out/h1024 > $out/h1024.txt
rm -f $out/*/trace-*.jsonl $out/*/peer-*.jsonl $out/*/reference.jsonl
