#!/usr/bin/env bash
# The hidden-1024 GRU (1024 features a step) with its input projection in
# the step (cellc's default) and hoisted into a cell the runtime runs at
# admission (cellc --hoist-input-projections), on the 2-core VM, 2 threads,
# cellular batching: offline (1000 WMT-length requests) and online (Poisson
# arrivals), each --repeat 3, the two artifacts back to back. From the
# repository root after scripts/build.sh.
set -euo pipefail
out=bench/results/2026-11-26-cpu-hoisted-projection
cellrun=build/tools/cellrun/cellrun
/usr/bin/python3 examples/gru/generate.py --size paper --out build/examples/gru/h1024 > /dev/null
for variant in instep hoisted; do
  flag=--hoist-input-projections=false
  [ $variant = hoisted ] && flag=--hoist-input-projections
  build/tools/cellc/cellc examples/gru/model-paper.yaml --onnx-dir build/examples/gru \
    --precision=fp32 $flag -o build/examples/gru/paper-$variant.cellpack --quiet
done
export OPENBLAS_CORETYPE=SkylakeX
for round in 1 2; do
  for variant in instep hoisted; do
    $cellrun bench build/examples/gru/paper-$variant.cellpack --workload bench/workloads/wmt15.csv \
      --offline 1000 --policy cellular --threads 2 --quiet --repeat 3 \
      --out $out/offline-$variant-$round > $out/offline-$variant-$round.txt
  done
done
for variant in instep hoisted; do
  $cellrun bench build/examples/gru/paper-$variant.cellpack --workload bench/workloads/wmt15.csv \
    --sweep 50,200,400,550 --duration 6 --policy cellular --threads 2 --quiet --repeat 3 \
    --out $out/online-$variant > $out/online-$variant.txt
done
