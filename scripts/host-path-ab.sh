#!/usr/bin/env bash
# Same-run A/B of the runtime's host path: this build's cellrun against
# another (the commit before a change), alternating, on this machine.
#  1. `cellrun run` of the hidden-16 LSTM (almost no arithmetic: the host's
#     cost shows) on 20000 WMT-like requests, one thread, pools for batch
#     512, REPEAT times each, with and without writing results;
#  2. `cellrun bench --offline` of the hidden-1024 LSTM (the arithmetic
#     dominates: throughput must not drop), 2 threads, REPEAT runs each,
#     the builds alternating;
#  3. host_bench (this build only: the engine over tasks that compute
#     nothing), every batch size 1..512.
# Needs `ninja -C build bench-artifacts host_bench`. Writes the raw outputs
# and a summary to OUTDIR.
#   scripts/host-path-ab.sh BASELINE_CELLRUN OUTDIR [REPEAT]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
baseline="${1:?usage: host-path-ab.sh BASELINE_CELLRUN OUTDIR [REPEAT]}"
out="${2:?usage: host-path-ab.sh BASELINE_CELLRUN OUTDIR [REPEAT]}"
repeat="${3:-3}"
current="$build/tools/cellrun/cellrun"
tiny="$build/examples/lstm/tiny-fp32.cellpack"
big="$build/examples/lstm/bench-fp32.cellpack"
for file in "$baseline" "$current" "$tiny" "$big" "$build/bench/host_bench"; do
  [ -e "$file" ] || { echo "host-path-ab: $file is missing" >&2; exit 2; }
done
mkdir -p "$out"
requests="$out/wmt15-20000.jsonl"
/usr/bin/python3 "$root/examples/common/make_requests.py" lstm 20000 "$requests" \
  --lengths "$root/bench/workloads/wmt15.csv"

{
  echo "host-path A/B, $(date -u +%F), $(nproc) cores: $(lscpu | sed -n 's/^Model name: *//p')"
  echo "baseline: $baseline ($("$baseline" --version))"
  echo "current:  $current ($("$current" --version))"
} > "$out/machine.txt"

# 1. The tiny model, alternating; the whole command timed too.
for r in $(seq 1 "$repeat"); do
  for who in baseline current; do
    binary="$baseline"; [ "$who" = current ] && binary="$current"
    for output in with without; do
      args=(run "$tiny" --input "$requests" --threads 1 --pool-rows 16384
            --device cpu --quiet)
      [ "$output" = with ] && args+=(--output "$out/results-$who.jsonl")
      start=$(date +%s.%N)
      "$binary" "${args[@]}" > "$out/tiny-$who-$output-$r.txt"
      end=$(date +%s.%N)
      awk -v s="$start" -v e="$end" 'BEGIN { printf "command: %.3f s\n", e - s }' \
        >> "$out/tiny-$who-$output-$r.txt"
    done
  done
done
# The two builds give the same results (times aside).
strip() { sed 's/,"queue_us".*//' "$1"; }
if cmp -s <(strip "$out/results-baseline.jsonl") <(strip "$out/results-current.jsonl"); then
  echo "results: identical outputs from both builds" >> "$out/machine.txt"
else
  echo "results: THE OUTPUTS DIFFER" >> "$out/machine.txt"
fi
rm -f "$out/results-baseline.jsonl" "$out/results-current.jsonl" "$requests"

# 2. The hidden-1024 LSTM offline, the builds alternating, REPEAT runs each.
for r in $(seq 1 "$repeat"); do
  for who in baseline current; do
    binary="$baseline"; [ "$who" = current ] && binary="$current"
    "$binary" bench "$big" --workload "$root/bench/workloads/wmt15.csv" --rate 1 \
      --duration 1 --offline 1000 --policy cellular --threads 2 \
      --out "$out/bench-$who-$r" --quiet > "$out/bench1024-$who-$r.txt"
  done
done

# 3. This build's host path alone.
"$build/bench/host_bench" "$tiny" --repeat 5 --csv "$out/host_bench.csv" \
  > "$out/host_bench.txt"
"$build/bench/host_bench" "$tiny" --repeat 5 --workload \
  "$root/bench/workloads/wmt15.csv" > "$out/host_bench-wmt15.txt"
# 4. A summary: medians of the alternating runs.
/usr/bin/python3 - "$out" "$repeat" > "$out/summary.txt" <<'PY'
import glob, re, statistics, sys
out, repeat = sys.argv[1], int(sys.argv[2])
def median_of(pattern, regex, group):
    values = []
    for path in glob.glob(f"{out}/{pattern}"):
        match = re.search(regex, open(path).read())
        if match:
            values.append(float(match.group(group)))
    return (statistics.median(values), min(values), max(values), len(values)) if values else None
print(f"host-path A/B, {repeat} alternating runs each (median, min-max)")
for output in ("without", "with"):
    for who in ("baseline", "current"):
        step = median_of(f"tiny-{who}-{output}-*.txt", r"(\d+) ns a row-step \(tasks (\d+) ns, host (\d+)", 1)
        host = median_of(f"tiny-{who}-{output}-*.txt", r"(\d+) ns a row-step \(tasks (\d+) ns, host (\d+)", 3)
        serve = median_of(f"tiny-{who}-{output}-*.txt", r"serve ([0-9.]+) s", 1)
        command = median_of(f"tiny-{who}-{output}-*.txt", r"command: ([0-9.]+) s", 1)
        if step:
            print(f"hidden-16 LSTM, {output} results file, {who}: {step[0]:.0f} ns a row-step "
                  f"({step[1]:.0f}-{step[2]:.0f}), host {host[0]:.0f} ns, serve {serve[0]:.3f} s, "
                  f"command {command[0]:.3f} s")
for who in ("baseline", "current"):
    served = median_of(f"bench1024-{who}-*.txt", r"cellular\s+offline\s+\S+\s+([0-9.]+)", 1)
    if served:
        print(f"hidden-1024 LSTM offline, {who}: {served[0]:.1f} requests/s ({served[1]:.1f}-{served[2]:.1f})")
PY
cat "$out/summary.txt"
echo "host-path-ab: wrote $out"
