#!/usr/bin/env bash
# The seq2seq and TreeLSTM PyTorch peers end to end: `cellrun bench
# --offline` with each example, the peer checks its outputs against ours
# (decoded tokens exactly, the root's h and c within tolerance) before it is
# timed, and the JSON has its row.
#   bench_peers_test.sh CELLRUN EXAMPLES_BUILD_DIR WORKLOADS_DIR OUT_DIR
set -euo pipefail
cellrun=$1 examples=$2 workloads=$3 out=$4
rm -rf "$out" && mkdir -p "$out"
for model in seq2seq:wmt15-pairs:8 treelstm:treebank:16; do
  IFS=: read -r name workload outputs <<< "$model"
  "$cellrun" bench "$examples/$name/model.cellpack" --workload "$workloads/$workload.csv" \
    --offline 40 --policy cellular --device cpu --quiet \
    --peer-weights "$examples/$name/h64" --out "$out/$name" > "$out/$name.log" 2>&1 \
    || { cat "$out/$name.log"; echo "FAIL: $name"; exit 1; }
  /usr/bin/python3 - "$out/$name/bench.json" "$outputs" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
systems = [row["system"] for row in result["rows"]]
assert systems == ["cellular", "pytorch"], systems
assert result["peer"]["checked_outputs"] == int(sys.argv[2]), result["peer"]
assert result["peer"]["device"] == "cpu", result["peer"]  # where we ran
for row in result["rows"]:
    assert row["completed"] == 40 and row["failed"] == 0, row
print(sys.argv[1], "peer checked", result["peer"]["checked_outputs"], "outputs")
PY
done
echo "bench peers: OK"
