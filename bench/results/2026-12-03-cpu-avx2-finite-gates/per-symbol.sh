#!/usr/bin/env bash
# The gates' and the GEMM's ns a row-step on the engine's thread, under
# perf (cpu-clock), the two builds alternating: 100000 WMT-like requests of
# the hidden-16 LSTM, one thread, as in scripts/profile-host.sh.
#   per-symbol.sh BASE_CELLRUN NEW_CELLRUN ROUNDS REQUESTS.jsonl
set -euo pipefail
model=build/examples/lstm/tiny-fp32.cellpack
steps=$(/usr/bin/python3 -c 'import json,sys
print(sum(len(json.loads(l)["tokens"]) for l in open(sys.argv[1]) if l.strip()))' "$4")
for round in $(seq 1 "$3"); do
  for who in base new; do
    binary="$1"; [ "$who" = new ] && binary="$2"
    perf record -q -F 4999 -o /tmp/per-symbol.data -- "$binary" run "$model" \
      --input "$4" --threads 1 --pool-rows 16384 --device cpu --quiet 2>&1 |
      grep -o "[0-9]* ns a row-step" | tr '\n' ' '
    perf script -i /tmp/per-symbol.data -F tid,ip,sym --no-inline 2>/dev/null |
      /usr/bin/python3 -c '
import collections, sys
who, steps = sys.argv[1], int(sys.argv[2])
per = collections.defaultdict(collections.Counter)
for line in sys.stdin:
    fields = line.split(None, 2)  # TID ADDRESS SYMBOL
    if len(fields) == 3:
        per[fields[0]][fields[2].strip()] += 1
gates = "cellrun::cpu::detail::lstmGateRowsAvx2"
engine = per[max(per, key=lambda t: per[t][gates])]
ns = lambda n: n / 4999 / steps * 1e9
gemm = sum(n for s, n in engine.items() if "gemmPanelAvx2" in s or "gemmPartAvx2" in s)
print(f"{who}: gates {ns(engine[gates]):.1f} GEMM {ns(gemm):.1f} engine thread {ns(sum(engine.values())):.1f} ns a row-step")
' "$who" "$steps"
  done
done
