#!/usr/bin/env bash
# N `cellrun serve` replicas of one model on loopback, behind HAProxy
# (deploy/haproxy: consistent hashing on x-sequence-id for sessions, least
# connections for the rest, HTTP and gRPC) with Prometheus scraping every
# replica (deploy/prometheus, with the recording rules). For trying the
# deployment on one machine (docs/deploy.md) and for the deploy test.
#
#   scripts/replicas.sh start RUN_DIR MODEL.cellpack [--replicas N] [--port BASE]
#                       [--cellrun PATH] [--scrape-interval 5s] [-- SERVE ARGS...]
#   scripts/replicas.sh stop RUN_DIR
#
# Ports: BASE (HAProxy, HTTP), BASE+1 (HAProxy, gRPC), BASE+2 (Prometheus);
# replica i (1..N) at BASE+10i (HTTP), +1 (gRPC), +2 (/metrics). `start`
# returns once every replica is ready and HAProxy and Prometheus answer; it
# writes RUN_DIR/ports.env (the ports as shell variables), the generated
# configurations, one log per process and their pids. `stop` ends them all.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() { sed -n '8,10p' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
action="$1" run="$2"
shift 2

wait_for() { # URL, what: polls until it answers 200 (60 s at most)
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys, time, urllib.request
url, what = sys.argv[1:3]
for _ in range(600):
    try:
        if urllib.request.urlopen(url, timeout=1).status == 200:
            sys.exit(0)
    except Exception:
        pass
    time.sleep(0.1)
sys.exit(f"replicas.sh: {what} did not answer {url}")
PY
}

stop_all() {
  [ -f "$run/pids" ] || return 0
  local pid
  while read -r pid; do kill -TERM "$pid" 2>/dev/null || true; done < "$run/pids"
  for _ in $(seq 1 100); do
    local alive=0
    while read -r pid; do kill -0 "$pid" 2>/dev/null && alive=1; done < "$run/pids"
    [ $alive = 0 ] && break
    sleep 0.1
  done
  while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done < "$run/pids"
  rm -f "$run/pids"
}

if [ "$action" = stop ]; then
  stop_all
  exit 0
fi
[ "$action" = start ] || usage
model="${1:?replicas.sh start RUN_DIR MODEL.cellpack ...}"
shift
replicas=3 base=8500 cellrun="$root/build/tools/cellrun/cellrun" interval=5s
while [ $# -gt 0 ]; do
  case "$1" in
    --replicas) replicas="$2"; shift 2 ;;
    --port) base="$2"; shift 2 ;;
    --cellrun) cellrun="$2"; shift 2 ;;
    --scrape-interval) interval="$2"; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
for tool in haproxy prometheus; do
  command -v "$tool" > /dev/null || {
    echo "replicas.sh: $tool is missing (scripts/install-deps.sh installs it)" >&2; exit 2; }
done
mkdir -p "$run"
stop_all
trap 'stop_all' ERR
: > "$run/pids"
http_servers="" grpc_servers="" targets=""
for i in $(seq 1 "$replicas"); do
  port=$((base + 10 * i))
  "$cellrun" serve "$model" --host 127.0.0.1 --http-port "$port" \
    --grpc-port $((port + 1)) --metrics-port $((port + 2)) "$@" \
    > "$run/replica$i.log" 2>&1 &
  echo $! >> "$run/pids"
  http_servers+="    server replica$i 127.0.0.1:$port check\n"
  grpc_servers+="    server replica$i 127.0.0.1:$((port + 1)) proto h2 check port $port check-proto h1\n"
  targets+="${targets:+, }'127.0.0.1:$((port + 2))'"
  echo "REPLICA${i}_HTTP=$port REPLICA${i}_GRPC=$((port + 1)) REPLICA${i}_METRICS=$((port + 2))"
done > "$run/ports.env"
echo "REPLICAS=$replicas HTTP=$base GRPC=$((base + 1)) PROMETHEUS=$((base + 2))" >> "$run/ports.env"
for i in $(seq 1 "$replicas"); do
  wait_for "http://127.0.0.1:$((base + 10 * i))/v2/health/ready" "replica $i"
done

sed -e "s|@RUN_DIR@|$run|; s|@LISTEN@|127.0.0.1|g" \
    -e "s|@HTTP_PORT@|$base|; s|@GRPC_PORT@|$((base + 1))|" \
    -e "s|    # @HTTP_SERVERS@|$http_servers|; s|    # @GRPC_SERVERS@|$grpc_servers|" \
    "$root/deploy/haproxy/haproxy.cfg.template" > "$run/haproxy.cfg"
haproxy -c -q -f "$run/haproxy.cfg"
haproxy -db -f "$run/haproxy.cfg" > "$run/haproxy.log" 2>&1 &
echo $! >> "$run/pids"

sed -e "s|@SCRAPE_INTERVAL@|$interval|g; s|@TARGETS@|$targets|" \
    "$root/deploy/prometheus/prometheus.yml.template" > "$run/prometheus.yml"
cp "$root/deploy/prometheus/cellrun-rules.yml" "$run/"
prometheus --config.file="$run/prometheus.yml" --storage.tsdb.path="$run/prometheus-data" \
  --web.listen-address="127.0.0.1:$((base + 2))" > "$run/prometheus.log" 2>&1 &
echo $! >> "$run/pids"

wait_for "http://127.0.0.1:$base/v2/health/ready" "HAProxy"
wait_for "http://127.0.0.1:$((base + 2))/-/ready" "Prometheus"
echo "replicas.sh: $replicas replicas of $model; HTTP 127.0.0.1:$base, gRPC 127.0.0.1:$((base + 1)), Prometheus http://127.0.0.1:$((base + 2)) (stop: scripts/replicas.sh stop $run)"
