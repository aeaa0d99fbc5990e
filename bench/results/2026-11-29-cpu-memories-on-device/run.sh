#!/usr/bin/env bash
# A/B of the seq2seq memories filled on the device (ec981a4) against the
# build before it (5791200), alternating, on the attention example (hidden 64,
# 4000 WMT-like pairs) and the hidden-1024 bench artifact (400 pairs):
#   bench/results/2026-11-29-cpu-memories-on-device/run.sh BASE_CELLRUN NEW_CELLRUN
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
base="$1" new="$2"
pairs="$root/bench/workloads/wmt15-pairs-max50.csv"
python3 "$root/examples/common/make_requests.py" seq2seq 4000 /tmp/a4k.jsonl --lengths "$pairs"
python3 "$root/examples/common/make_requests.py" seq2seq 400 /tmp/a400.jsonl --lengths "$pairs"
for model in "model.cellpack /tmp/a4k.jsonl" "bench-fp32.cellpack /tmp/a400.jsonl"; do
  set -- $model
  for i in 1 2; do
    for v in base new; do
      binary=$base; [ "$v" = new ] && binary=$new
      echo "$v $1: $( /usr/bin/time -f '%M KB' "$binary" run "$root/build/examples/attention/$1" \
        --input "$2" --quiet 2>&1 | grep -E '^requests|^engine|KB' | tr '\n' ' ')"
    done
  done
done
