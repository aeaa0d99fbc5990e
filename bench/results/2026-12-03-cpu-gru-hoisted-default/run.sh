#!/usr/bin/env bash
# The hidden-1024 GRU (1024 features in) offline, its input projection in
# the step (bench-fp32.cellpack, --hoist-input-projections=false) against
# hoisted (bench-hoisted-fp32.cellpack, cellc's default since this commit),
# at the default 4096-row pools and at 16384, taking turns, three rounds.
# Then `cellrun run` of 400 requests at 4096 and 16384 rows: how many kept
# their products in pool rows. From the repository root after
# `scripts/build.sh all bench-artifacts`.
set -euo pipefail
out=bench/results/2026-12-03-cpu-gru-hoisted-default
cellrun=build/tools/cellrun/cellrun
gru=(--workload bench/workloads/wmt15.csv --offline 1000 --policy cellular
     --threads 2 --quiet --chain-order longest-first)
for round in 1 2 3; do
  for rows in 4096 16384; do
    for form in step hoisted; do
      artifact=build/examples/gru/bench-fp32.cellpack
      [ "$form" = hoisted ] && artifact=build/examples/gru/bench-hoisted-fp32.cellpack
      $cellrun bench $artifact "${gru[@]}" --pool-rows $rows \
        --out $out/$form-$rows-$round > $out/$form-$rows-$round.txt
    done
  done
done
# 400 requests of the workload's first 400 lengths, 1024 random features a
# step (74 MB of JSON, not kept).
requests=$(mktemp --suffix=.jsonl)
/usr/bin/python3 - "$requests" <<'PY'
import csv, json, random, sys
random.seed(5)
lengths = [int(r["length"]) for r in csv.DictReader(open("bench/workloads/wmt15.csv"))]
with open(sys.argv[1], "w") as f:
    for i in range(400):
        steps = [{"x": [round(random.uniform(-1, 1), 3) for _ in range(1024)]}
                 for _ in range(lengths[i % len(lengths)])]
        f.write(json.dumps({"id": "r%d" % i, "steps": steps}) + "\n")
PY
for rows in 4096 16384; do
  $cellrun run build/examples/gru/bench-hoisted-fp32.cellpack --input "$requests" \
    --threads 2 --device cpu --pool-rows $rows > $out/run-hoisted-$rows.txt
done
$cellrun run build/examples/gru/bench-fp32.cellpack --input "$requests" \
  --threads 2 --device cpu > $out/run-step-4096.txt
rm -f "$requests"
# The tables are in the .txt files; the CSV and JSON beside them are not kept.
rm -rf "${out:?}"/*/
