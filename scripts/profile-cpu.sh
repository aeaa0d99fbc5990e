#!/usr/bin/env bash
# Where the CPU backend's time goes: runs `cellrun bench --offline N` (the
# cellular policy, 2 threads) under `perf record` and prints the split
# (GEMM, element-wise work, row copies, engine, kernel...) as a markdown
# table (bench/profile/profile_report.py). Installs Debian's linux-perf when
# perf is missing; the kernel must allow perf events (perf_event_paranoid).
#   scripts/profile-cpu.sh MODEL.cellpack [REQUESTS] [WORKLOAD] [THREADS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
model="${1:?usage: profile-cpu.sh MODEL.cellpack [REQUESTS] [WORKLOAD] [THREADS]}"
requests="${2:-3000}"
workload="${3:-$root/bench/workloads/wmt15.csv}"
threads="${4:-2}"
frequency=499
source "$root/scripts/ensure-perf.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "perf record -F $frequency -g -- cellrun bench $model --workload $workload" \
  "--offline $requests --policy cellular --threads $threads ($(nproc) cores, $(date -u +%F))"
perf record -q -F "$frequency" -g -o "$work/perf.data" -- \
  "$build/tools/cellrun/cellrun" bench "$model" --workload "$workload" --rate 1 \
  --duration 1 --offline "$requests" --policy cellular --threads "$threads" \
  --out "$work/bench" --quiet | grep -E "^system|offline"
python3 "$root/bench/profile/profile_report.py" "$work/perf.data" \
  "$work/bench/bench.json" "$workload" "$requests" "$frequency"
