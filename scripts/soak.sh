#!/usr/bin/env bash
# The soak (tools/cellrun/soak/): one `cellrun serve` per small example
# model (LSTM chain, seq2seq, TreeLSTM, Luong attention) on loopback, under
# an open-loop load at 70% of the peak it measures first, 10% invalid
# requests of every class, streaming sessions (some abandoned), clients that
# disconnect mid-request and bursts past the queue, for SECONDS (default
# 1800). Every answer is checked against the request's answer alone; the
# report, the outcomes and the servers' memory over time go to OUT
# (default bench/results/DATE-cpu-soak). Run it on an otherwise idle
# machine; it exits non-zero when a check failed.
#   scripts/soak.sh [SECONDS] [OUT] [cellrun-soak options...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
seconds="${1:-1800}"
out="${2:-$root/bench/results/$(date -u +%Y-%m-%d)-cpu-soak}"
shift $(($# > 2 ? 2 : $#))
"$root/scripts/build.sh" cellrun cellrun-soak example-artifacts >/dev/null
models=()
for model in lstm seq2seq treelstm attention; do
  models+=(--model "$model=$build/examples/$model/model.cellpack")
done
machine="$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
exec "$build/tools/cellrun/cellrun-soak" --cellrun "$build/tools/cellrun/cellrun" \
  "${models[@]}" --duration "$seconds" --out "$out" --machine "$machine" "$@"
