#!/usr/bin/env bash
# The main job on its embedded default: installs dependencies, builds cellc and
# cellrun, exports the example LSTM language-model cell with PyTorch, compiles
# it with cellc into a .cellpack (kernels for sm_80/sm_90 + PTX, one plan per
# batch size), prints the artifact's summary, then serves the example's
# request file through cellular batching with `cellrun run` (on the GPU when
# there is one, else on the CPU backend) and prints the run's summary; then a
# short open-loop benchmark (`cellrun bench`: Poisson arrivals at four rates,
# 2 s each, past the PyTorch peer's knee on the CPU; one rate for seq2seq and
# treelstm): cellular, padded and graph batching and, on the CPU, the
# PyTorch peer on the same traces, with the tables printed and the
# latency-throughput charts drawn under build/bench-example/.
# Pass another example name (gru, seq2seq, treelstm) to run that one instead.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
model="${1:-lstm}"

"$root/scripts/build.sh" cellc cellrun examples
artifact="$build/examples/$model/model.cellpack"
echo "== cellc examples/$model/model.yaml -o $artifact" >&2
"$build/tools/cellc/cellc" "$root/examples/$model/model.yaml" \
  --onnx-dir "$build/examples/$model" -o "$artifact"
echo "== cellrun inspect --summary $artifact" >&2
"$build/tools/cellrun/cellrun" inspect --summary "$artifact"
results="$build/examples/$model/results.jsonl"
echo "== cellrun run $artifact --input examples/$model/requests.jsonl --output $results" >&2
"$build/tools/cellrun/cellrun" run "$artifact" \
  --input "$root/examples/$model/requests.jsonl" --output "$results" --device auto

bench_out="$build/bench-example/$model"
peer=()
# The PyTorch peers run on the CPU only: on a GPU the bench runs without one.
if "$build/tools/cellrun/cellrun" devices --device cuda > /dev/null 2>&1; then
  model_peer=none
else
  model_peer=$model
fi
case "$model_peer" in
  lstm) peer=(--peer-weights "$build/examples/lstm/h64/lstm.pt") ;;
  gru) peer=(--peer-weights "$build/examples/gru/h64/gru.pt") ;;
  seq2seq | treelstm) peer=(--peer-weights "$build/examples/$model/h64") ;;
esac
workload="$root/bench/workloads/wmt15-max50.csv"
[ "$model" = treelstm ] && workload="$root/bench/workloads/treebank.csv"
[ "$model" = seq2seq ] && workload="$root/bench/workloads/wmt15-pairs.csv"
# A short sweep draws a curve: on the CPU the LSTM's PyTorch peer falls
# behind between 2000 and 4000 requests/s (2 s a rate, about 40 s in all).
load=(--sweep 500,1000,2000,4000 --duration 2)
case "$model" in
  seq2seq | treelstm) load=(--rate 500 --duration 5) ;;
esac
echo "== cellrun bench $artifact --workload ${workload#$root/} ${load[*]} --plot" >&2
"$build/tools/cellrun/cellrun" bench "$artifact" --workload "$workload" \
  "${load[@]}" --device auto --plot --out "$bench_out" "${peer[@]}"
