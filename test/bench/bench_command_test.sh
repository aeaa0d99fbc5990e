#!/usr/bin/env bash
# `cellrun bench` end to end on the small LSTM: two rates, every policy and
# the PyTorch peer; the CSV and JSON have a row per system and rate, the
# peer checked its outputs against ours, --plot drew PNG and SVG charts; a
# peer with other weights is caught before any timing; the trace sent to a
# running `cellrun serve` over HTTP and gRPC gives serve-http and serve-grpc
# rows (and no server is an error); drops are reported; --chain-order
# longest-first serves an offline round whole, and `cellrun run` with it gives
# the outputs of taking turns; a command line without a rate is a usage
# error.
#   bench_command_test.sh CELLRUN EXAMPLE_DIR WORKLOAD OUT_DIR
set -euo pipefail
cellrun=$1 example=$2 workload=$3 out=$4
rm -rf "$out" && mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

"$cellrun" bench "$example/model.cellpack" --workload "$workload" \
  --sweep 100,300 --duration 2 --device cpu --quiet \
  --peer-weights "$example/h64/lstm.pt" --out "$out/run" --plot | tee "$out/run.log"
for image in latency.png batch.png; do
  [ -s "$out/run/$image" ] || fail "--plot wrote no $image"
  head -c 8 "$out/run/$image" | od -An -tx1 | grep -q "89 50 4e 47" || fail "$image is not a PNG"
done
for image in latency.svg batch.svg; do
  grep -q "<svg" "$out/run/$image" || fail "$image is not an SVG"
done
grep -q "cellular p90" "$out/run/latency.svg" || fail "latency.svg has no cellular p90 curve"
for system in cellular padded graph pytorch; do
  rows=$(grep -c "^$system," "$out/run/bench.csv" || true)
  [ "$rows" = 2 ] || fail "bench.csv has $rows rows for $system, not 2"
done
/usr/bin/python3 - "$out/run/bench.json" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
assert len(result["rows"]) == 8, result["rows"]
assert result["peers"]["pytorch"]["checked_outputs"] >= 8, result["peers"]["pytorch"]
for row in result["rows"]:
    assert row["completed"] > 0 and row["dropped"] == 0 and row["failed"] == 0, row
    assert 0 < row["p50_ms"] <= row["p90_ms"] <= row["p99_ms"] <= row["max_ms"], row
# One trace per rate: every system measured the same requests.
for rate in (100, 300):
    measured = {row["system"]: row["measured"] for row in result["rows"]
                if row["rate_per_s"] == rate}
    assert len(set(measured.values())) == 1, measured
assert result["rows"][-1]["mean_batch"]["requests"] >= 1, result["rows"][-1]
print("bench.json: 8 rows, the peer checked", result["peers"]["pytorch"]["checked_outputs"], "outputs")
PY

# A peer whose weights differ from ours must not be timed.
/usr/bin/python3 - "$example/h64/lstm.pt" "$out/other.pt" <<'PY'
import sys, torch
state = torch.load(sys.argv[1])
state["cell.weight_hh"][0, 0] += 0.5
torch.save(state, sys.argv[2])
PY
if "$cellrun" bench "$example/model.cellpack" --workload "$workload" \
    --rate 100 --duration 1 --device cpu --quiet --policy cellular \
    --peer-weights "$out/other.pt" --out "$out/other" > "$out/other.log" 2>&1; then
  fail "a peer with other weights was timed"
fi
grep -q "differs from ours" "$out/other.log" || { cat "$out/other.log"; fail "no mismatch message"; }

# The same trace against a running `cellrun serve` over HTTP and gRPC: the
# rows serve-http and serve-grpc measure the same requests, all answered.
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port=$(free_port) grpc_port=$(free_port)
"$cellrun" serve "$example/model.cellpack" --host 127.0.0.1 --http-port "$port" \
  --grpc-port "$grpc_port" --metrics-port 0 --device cpu > "$out/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  /usr/bin/python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v2/health/ready')" 2>/dev/null && break
  sleep 0.1
done
for target in "http://127.0.0.1:$port:serve-http" "grpc://127.0.0.1:$grpc_port:serve-grpc"; do
  url=${target%:*} system=${target##*:}
  "$cellrun" bench "$example/model.cellpack" --workload "$workload" --rate 100 \
    --duration 2 --policy cellular --device cpu --quiet \
    --server "$url" --out "$out/$system" > "$out/$system.log" 2>&1 \
    || { cat "$out/$system.log" "$out/serve.log"; fail "bench --server $url"; }
  /usr/bin/python3 - "$out/$system/bench.json" "$system" <<'PY'
import json, sys
rows = {row["system"]: row for row in json.load(open(sys.argv[1]))["rows"]}
served = rows[sys.argv[2]]
assert served["measured"] == rows["cellular"]["measured"] > 0, rows
assert served["completed"] == served["measured"] and served["failed"] == 0, served
print(sys.argv[2] + ":", served["completed"], "requests answered")
PY
done
kill $server && wait $server || true
trap - EXIT
# The server itself answered every request of both traces.
sent=$(grep -ho "^[0-9]* requests at" "$out/serve-http.log" "$out/serve-grpc.log" | awk '{s += $1} END {print s}')
completed=$(grep -o "stopped: [0-9]* requests completed" "$out/serve.log" | awk '{print $2}')
[ "$completed" = "$sent" ] || { cat "$out/serve.log"; fail "the server completed ${completed:-none} of $sent requests"; }
# A server that is not there is an error, not a silent zero.
if "$cellrun" bench "$example/model.cellpack" --workload "$workload" --rate 50 \
    --duration 1 --policy cellular --device cpu --quiet \
    --server "http://127.0.0.1:$port" --out "$out/noserver" > "$out/noserver.log" 2>&1; then
  fail "bench --server with no server succeeded"
fi
grep -q "does not serve a ready model" "$out/noserver.log" || { cat "$out/noserver.log"; fail "no-server message"; }

# A queue of one at a high rate: drops are counted, not hidden.
"$cellrun" bench "$example/model.cellpack" --workload "$workload" --rate 3000 \
  --duration 1 --max-queue 1 --policy cellular --device cpu --quiet --out "$out/drops" > /dev/null
dropped=$(cut -d, -f5 "$out/drops/bench.csv" | tail -1)
[ "$dropped" -gt 0 ] || fail "no drops reported with a queue of one at 3000/s"

# A deadline no request can meet: every measured result is a miss; without
# one, none is (the last CSV column).
"$cellrun" bench "$example/model.cellpack" --workload "$workload" --rate 100 \
  --duration 1 --policy cellular --device cpu --quiet --deadline-ms 0.001 \
  --out "$out/deadline" > /dev/null
completed=$(cut -d, -f4 "$out/deadline/bench.csv" | tail -1)
# The deadline_misses column, found by its header name.
column() { awk -F, -v name="$1" 'NR == 1 {for (i = 1; i <= NF; ++i) if ($i == name) c = i} END {print $c}' "$2"; }
missed=$(column deadline_misses "$out/deadline/bench.csv")
[ "$completed" -gt 0 ] && [ "$missed" = "$completed" ] ||
  fail "with a 1 us deadline $missed of $completed results missed it"
missed=$(column deadline_misses "$out/drops/bench.csv")
[ "$missed" = 0 ] || fail "$missed deadline misses without a deadline"

# Longest first offline: the bench says so, and every request is served;
# online rows of the same command take turns (the line names the offline
# round). `cellrun run` of a file with it gives the outputs taking turns
# gives.
"$cellrun" bench "$example/model.cellpack" --workload "$workload" --offline 300 \
  --policy cellular --device cpu --quiet --chain-order longest-first \
  --out "$out/longest" > "$out/longest.log"
grep -q "cellular offline: a chain's tasks take the requests with the most steps left first" \
  "$out/longest.log" || { cat "$out/longest.log"; fail "no line for --chain-order"; }
completed=$(cut -d, -f4 "$out/longest/bench.csv" | tail -1)
[ "$completed" = 300 ] || fail "longest first offline completed $completed of 300"
/usr/bin/python3 "$(dirname "$0")/../../examples/common/make_requests.py" lstm 400 \
  "$out/requests.jsonl" --lengths "$workload" > /dev/null
for order in turns longest-first; do
  "$cellrun" run "$example/model.cellpack" --input "$out/requests.jsonl" --device cpu \
    --quiet --max-queue 128 --chain-order "$order" --output "$out/run-$order.jsonl" > /dev/null
done
/usr/bin/python3 - "$out/run-turns.jsonl" "$out/run-longest-first.jsonl" <<'PY'
import json, sys
turns = {}
for line in open(sys.argv[1]):
    result = json.loads(line)
    turns[result["id"]] = result["outputs"]
compared = 0
for line in open(sys.argv[2]):
    result = json.loads(line)
    assert result["outputs"] == turns[result["id"]], result["id"]
    compared += 1
assert compared == len(turns) == 400, (compared, len(turns))
print("run --chain-order longest-first: the outputs of turns for", compared, "requests")
PY

set +e
"$cellrun" bench "$example/model.cellpack" --workload "$workload" > "$out/usage.log" 2>&1
code=$?
set -e
[ "$code" = 2 ] || fail "no rate: exit $code, not 2"
grep -q "give --rate, --sweep, --saturate or --offline" "$out/usage.log" || fail "usage message"
echo "bench command: OK"
