#!/usr/bin/env bash
# Mamba-1 (examples/mamba, model-paper.yaml: 4 residual blocks, d_model 768,
# d_state 16, d_conv 4, expand 2) against PyTorch running the reference step
# over padded batches (bench/peers/mamba_peer.py), on the 2-core VM; from the
# repository root after scripts/build.sh.
set -euo pipefail
out=bench/results/2026-11-28-cpu-mamba
cellrun=build/tools/cellrun/cellrun
/usr/bin/python3 examples/mamba/generate.py --size paper --out build/examples/mamba/h1024 > /dev/null
build/tools/cellc/cellc examples/mamba/model-paper.yaml --onnx-dir build/examples/mamba \
  --precision=fp32 -o build/examples/mamba/paper-fp32.cellpack --quiet
# A row's state is 4 x 1536 x 20 floats (480 KB): pools of 1024 rows.
common=(--workload bench/workloads/wmt15.csv --policy cellular --pool-rows 1024 --quiet
        --peer-weights build/examples/mamba/h1024 --peer-max-batch 64)
# Two threads for both, every rate three times.
$cellrun bench build/examples/mamba/paper-fp32.cellpack "${common[@]}" --threads 2 \
  --offline 300 --sweep 4,8,16 --duration 10 --repeat 3 --plot --out $out/threads2 \
  > $out/threads2.txt
# One thread for both: the peer's small batches run 3x faster on one thread.
$cellrun bench build/examples/mamba/paper-fp32.cellpack "${common[@]}" --threads 1 \
  --offline 300 --sweep 4,8 --duration 10 --out $out/threads1 > $out/threads1.txt
rm -f $out/*/trace-*.jsonl $out/*/peer-*.jsonl $out/*/reference.jsonl
