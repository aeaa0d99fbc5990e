#!/usr/bin/env bash
# Where a row-step's host time goes: `cellrun run` of a request file (one
# thread, no output file) under `perf record`, the engine's thread split by
# bench/profile/host_profile.py (compute, row copies, binding, completing,
# requests, scheduler, allocator, kernel) in ns per row-step. The request
# file is a chain model's token requests ({"tokens": [...]}), so the
# row-steps are its tokens. Installs Debian's linux-perf when missing.
#   scripts/profile-host.sh CELLRUN MODEL.cellpack REQUESTS.jsonl [LABEL]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cellrun="${1:?usage: profile-host.sh CELLRUN MODEL REQUESTS [LABEL]}"
model="${2:?usage: profile-host.sh CELLRUN MODEL REQUESTS [LABEL]}"
requests="${3:?usage: profile-host.sh CELLRUN MODEL REQUESTS [LABEL]}"
label="${4:-$cellrun}"
frequency=4999
source "$root/scripts/ensure-perf.sh"
steps=$(/usr/bin/python3 -c 'import json,sys
print(sum(len(json.loads(l)["tokens"]) for l in open(sys.argv[1]) if l.strip()))' "$requests")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
perf record -q -F "$frequency" -o "$work/perf.data" -- "$cellrun" run "$model" \
  --input "$requests" --threads 1 --pool-rows 16384 --device cpu --quiet >&2
/usr/bin/python3 "$root/bench/profile/host_profile.py" "$work/perf.data" \
  "$frequency" "$steps" "$label"
