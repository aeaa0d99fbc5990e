#!/usr/bin/env bash
# The seq2seq, attention, TreeLSTM, minGRU and Mamba peers end to end: `cellrun bench
# --offline` with each example, each peer (PyTorch; ONNX Runtime for the
# seq2seq models: its encoder LSTM and a step loop around decoder.onnx)
# checks its outputs against ours (decoded tokens exactly, the root's h and
# c within tolerance; minGRU's per-step h and both layers' final h; Mamba's
# per-step y and both layers' final conv and SSM states) before
# it is timed, and the JSON has its row. Then the
# ONNX Runtime peer beside
# PyTorch on the LSTM and the GRU (its gate order differs from PyTorch's:
# a wrong reordering fails the check), and the ONNX Runtime peer with other
# weights refused before any timing.
#   bench_peers_test.sh CELLRUN EXAMPLES_BUILD_DIR WORKLOADS_DIR OUT_DIR
set -euo pipefail
cellrun=$1 examples=$2 workloads=$3 out=$4
rm -rf "$out" && mkdir -p "$out"
for model in seq2seq:wmt15-pairs:8:pytorch,onnxruntime attention:wmt15-pairs-max50:8:pytorch,onnxruntime \
             treelstm:treebank:16:pytorch mingru:wmt15-max50:24:pytorch \
             mamba:wmt15-max50:40:pytorch; do
  IFS=: read -r name workload outputs peers <<< "$model"
  "$cellrun" bench "$examples/$name/model.cellpack" --workload "$workloads/$workload.csv" \
    --offline 40 --policy cellular --device cpu --quiet --peers "$peers" \
    --peer-weights "$examples/$name/h64" --out "$out/$name" > "$out/$name.log" 2>&1 \
    || { cat "$out/$name.log"; echo "FAIL: $name"; exit 1; }
  /usr/bin/python3 - "$out/$name/bench.json" "$outputs" "$peers" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
peers = sys.argv[3].split(",")
systems = [row["system"] for row in result["rows"]]
assert systems == ["cellular"] + peers, systems
for peer in peers:
    summary = result["peers"][peer]
    assert summary["checked_outputs"] == int(sys.argv[2]), summary
    assert summary["device"] == "cpu", summary  # where we ran
    print(sys.argv[1], peer, "peer checked", summary["checked_outputs"], "outputs")
for row in result["rows"]:
    assert row["completed"] == 40 and row["failed"] == 0, row
PY
done
for name in lstm gru; do
  "$cellrun" bench "$examples/$name/model.cellpack" --workload "$workloads/wmt15-max50.csv" \
    --offline 40 --policy cellular --device cpu --quiet --peers pytorch,onnxruntime \
    --peer-weights "$examples/$name/h64" --out "$out/ort-$name" > "$out/ort-$name.log" 2>&1 \
    || { cat "$out/ort-$name.log"; echo "FAIL: onnxruntime peer, $name"; exit 1; }
  /usr/bin/python3 - "$out/ort-$name/bench.json" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
systems = [row["system"] for row in result["rows"]]
assert systems == ["cellular", "pytorch", "onnxruntime"], systems
ort, torch = result["peers"]["onnxruntime"], result["peers"]["pytorch"]
# Every per-step output and final state of 8 requests, as PyTorch checks.
assert ort["checked_outputs"] == torch["checked_outputs"] >= 16, (ort, torch)
assert ort["peer"] == "onnxruntime" and ort["onnxruntime"], ort
for row in result["rows"]:
    assert row["completed"] == 40 and row["failed"] == 0, row
print(sys.argv[1], "onnxruntime peer checked", ort["checked_outputs"], "outputs")
PY
done
/usr/bin/python3 - "$examples/gru/h64" "$out/other-gru.pt" <<'PY'
import os, sys, torch
source = [f for f in os.listdir(sys.argv[1]) if f.endswith(".pt")][0]
state = torch.load(os.path.join(sys.argv[1], source))
state["cell.bias_hh"][5] += 0.5
torch.save(state, sys.argv[2])
PY
if "$cellrun" bench "$examples/gru/model.cellpack" --workload "$workloads/wmt15-max50.csv" \
    --offline 20 --policy cellular --device cpu --quiet --peers onnxruntime \
    --peer-weights "$out/other-gru.pt" --out "$out/ort-other" > "$out/ort-other.log" 2>&1; then
  echo "FAIL: the onnxruntime peer with other weights was timed"; exit 1
fi
grep -q "differs from ours" "$out/ort-other.log" || { cat "$out/ort-other.log"; echo "FAIL: no mismatch message"; exit 1; }
echo "bench peers: OK"
