#!/usr/bin/env python3
"""Three `cellrun serve` replicas behind HAProxy with Prometheus scraping
them (scripts/replicas.sh, deploy/), on loopback:

1. 300 streaming sessions of 5 chunks each (250 over HTTP with the
   x-sequence-id header only, 50 over gRPC with the metadata key and the
   parameter) and 300 plain requests, all at once through HAProxy: every
   session's final state equals the same tokens sent to one replica in one
   request, every HTTP chunk of a session was answered by one replica, plain
   requests equal their direct answers.
2. Each replica's /metrics counts exactly the sessions it held (the HTTP
   sessions HAProxy sent it, plus its share of the gRPC ones: 300 in all).
3. Prometheus has scraped all three and the recording rules answer;
   promtool accepts the rules and the generated configuration.
4. 60 sessions that had started continue and 600 plain requests run, and one
   replica is killed while they do: HAProxy marks it down within seconds;
   the chunks of its sessions get errors that name the session (or, for a
   chunk being answered at the moment it died, the connection closes with no
   answer: at most one a client thread); every other
   session and every plain request (retried by HAProxy when its replica
   died under it) is answered correctly.

    replicas_test.py REPO_ROOT CELLRUN MODEL.cellpack
"""
import atexit
import concurrent.futures
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import numpy as np
import tritonclient.grpc as grpcclient
from http.client import RemoteDisconnected

root, cellrun, model = sys.argv[1:4]
run_dir = tempfile.mkdtemp(prefix="cellrun-replicas-")


def ephemeral_low():
    """The lowest port the kernel hands out to outgoing connections."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_base():
    """A port base whose HAProxy, Prometheus and replica ports are free,
    below the ports outgoing connections take (Prometheus' scrapes and the
    health checks, or another test's clients, could take one between the
    check here and a listener's bind: HAProxy once found its port so)."""
    rng = random.Random(os.getpid())
    high = min(ephemeral_low(), 60000) - 100
    low = 10000 if high > 12000 else 20000
    if high <= low:
        high = 60000
    for _ in range(200):
        base = rng.randrange(low, high, 100)
        ports = [base, base + 1, base + 2] + [base + 10 * i + k
                                              for i in (1, 2, 3) for k in (0, 1, 2)]
        try:
            for port in ports:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    sys.exit("no free port range")


def replicas(action, *args):
    return subprocess.run([os.path.join(root, "scripts", "replicas.sh"), action,
                           run_dir, *args], check=True, capture_output=True,
                          text=True)


def fail(message):
    print("FAIL:", message)
    for name in sorted(os.listdir(run_dir)):
        if name.endswith(".log"):
            with open(os.path.join(run_dir, name)) as f:
                print(f"--- {name}\n{f.read()[-3000:]}")
    replicas("stop")
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


base = free_base()
# Whatever happens, nothing is left running.
atexit.register(lambda: subprocess.run(
    [os.path.join(root, "scripts", "replicas.sh"), "stop", run_dir],
    capture_output=True))
try:
    replicas("start", model, "--replicas", "3", "--port", str(base), "--cellrun",
             cellrun, "--scrape-interval", "1s", "--", "--device", "cpu",
             "--threads", "1")
except subprocess.CalledProcessError as error:
    fail(f"replicas.sh start: {error.stderr}")
ports = {}
with open(os.path.join(run_dir, "ports.env")) as f:
    for word in f.read().split():
        key, value = word.split("=")
        ports[key] = int(value)
with open(os.path.join(run_dir, "pids")) as f:
    pids = [int(line) for line in f.read().split()]


def http(method, port, path, body=None, headers=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                     data=body, method=method,
                                     headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()
    except (RemoteDisconnected, ConnectionResetError) as error:
        # Status 0: the connection closed before any answer (HAProxy does so
        # when the replica dies while answering, too late for its 502).
        return 0, {}, f"no answer: {error}".encode()


status, _, body = http("GET", ports["HTTP"], "/v2/models/lstm_lm")
check(status == 200, f"metadata through HAProxy: {status} {body[:200]}")
metadata = json.loads(body)
token_input = metadata["inputs"][0]
# Per-step outputs ([steps, ...]: joined over a session's chunks) and final
# states (the last chunk's).
emitted = [o["name"] for o in metadata["outputs"] if o["shape"][:1] == [-1]]
finals = [o["name"] for o in metadata["outputs"] if o["name"] not in emitted]


def infer_body(tokens, parameters):
    body = {"inputs": [{"name": token_input["name"],
                        "datatype": token_input["datatype"],
                        "shape": [len(tokens)], "data": tokens}]}
    if parameters:
        body["parameters"] = parameters
    return json.dumps(body).encode()


def outputs_of(body):
    reply = json.loads(body)
    return {o["name"]: np.array(o["data"], np.float32) for o in reply["outputs"]}


def infer(port, tokens, parameters=None, session=None):
    headers = {"Content-Type": "application/json"}
    if session is not None:
        headers["x-sequence-id"] = str(session)
    status, reply_headers, body = http(
        "POST", port, "/v2/models/lstm_lm/infer",
        infer_body(tokens, parameters), headers)
    lowered = {k.lower(): v for k, v in reply_headers.items()}
    return status, lowered.get("x-cellrun-replica"), body


rng = random.Random(11)


def session_tokens():
    return [[rng.randrange(1, 1000) for _ in range(rng.randint(1, 6))]
            for _ in range(5)]


def expected_of(chunks):
    """The whole sequence sent to replica 1 in one plain request."""
    status, _, body = infer(ports["REPLICA1_HTTP"], sum(chunks, []))
    check(status == 200, f"direct request: {status} {body[:200]}")
    return outputs_of(body)


def same(got, want, what):
    for name in emitted + finals:
        check(np.array_equal(got[name], want[name]),
              f"{what}: {name} differs from the whole sequence on one replica")


def http_session(session, chunks, first=0, earlier=(), pause=0.0):
    """Chunks [first, 5) of a session over HTTP with the header alone (after
    `earlier`, the outputs of the chunks before); the replicas that answered
    and the session's outputs, or the first error (status, body)."""
    answered, steps = set(), list(earlier)
    for k in range(first, len(chunks)):
        time.sleep(pause)
        status, replica, body = infer(
            ports["HTTP"], chunks[k],
            {"sequence_start": k == 0, "sequence_end": k == len(chunks) - 1},
            session=session)
        if status != 200:
            return answered, None, (status, body.decode(errors="replace"))
        answered.add(replica)
        steps.append(outputs_of(body))
    outputs = dict(steps[-1])
    for name in emitted:
        outputs[name] = np.concatenate([step[name] for step in steps])
    return answered, outputs, None


def grpc_session(session, chunks):
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{ports['GRPC']}")
    steps = []
    for k, tokens in enumerate(chunks):
        tensor = grpcclient.InferInput(token_input["name"], [len(tokens)],
                                       token_input["datatype"])
        tensor.set_data_from_numpy(np.array(tokens, np.int64))
        result = client.infer("lstm_lm", [tensor], sequence_id=session,
                              sequence_start=k == 0,
                              sequence_end=k == len(chunks) - 1,
                              headers={"x-sequence-id": str(session)})
        steps.append(result)
    outputs = {name: steps[-1].as_numpy(name).flatten() for name in finals}
    for name in emitted:
        outputs[name] = np.concatenate(
            [step.as_numpy(name).flatten() for step in steps])
    return outputs


# 1. Sessions and plain requests at once.
http_ids = list(range(1000, 1250))
grpc_ids = list(range(5000, 5050))
chunks = {s: session_tokens() for s in http_ids + grpc_ids}
plain = [[rng.randrange(1, 1000) for _ in range(rng.randint(1, 30))]
         for _ in range(300)]
expected = {s: expected_of(chunks[s]) for s in chunks}
plain_expected = [expected_of([tokens]) for tokens in plain]
placed = {}
with concurrent.futures.ThreadPoolExecutor(24) as pool:
    http_runs = {s: pool.submit(http_session, s, chunks[s]) for s in http_ids}
    grpc_runs = {s: pool.submit(grpc_session, s, chunks[s]) for s in grpc_ids}
    plain_runs = [pool.submit(infer, ports["HTTP"], tokens) for tokens in plain]
    for s, run in http_runs.items():
        answered, outputs, error = run.result()
        check(error is None, f"session {s}: {error}")
        check(len(answered) == 1, f"session {s} was answered by {answered}")
        placed[s] = answered.pop()
        same(outputs, expected[s], f"HTTP session {s}")
    for s, run in grpc_runs.items():
        try:
            same(run.result(), expected[s], f"gRPC session {s}")
        except Exception as error:
            fail(f"gRPC session {s}: {error}")
    for k, run in enumerate(plain_runs):
        status, _, body = run.result()
        check(status == 200, f"plain request {k}: {status} {body[:200]}")
        same(outputs_of(body), plain_expected[k], f"plain request {k}")
counts = {name: list(placed.values()).count(name)
          for name in ("replica1", "replica2", "replica3")}
check(all(counts.values()), f"HTTP sessions by replica: {counts}")

# 2. Each replica counts the sessions it held.
started = {}
for i in (1, 2, 3):
    _, _, body = http("GET", ports[f"REPLICA{i}_METRICS"], "/metrics")
    for line in body.decode().splitlines():
        if line.startswith("cellrun_sessions_started_total"):
            started[f"replica{i}"] = int(float(line.split()[1]))
check(sum(started.values()) == 300, f"sessions started by replica: {started}")
for name, count in counts.items():
    check(started[name] >= count,
          f"{name} started {started[name]} sessions, HAProxy sent it {count}")

# 3. Prometheus: all three scraped, the recording rules answer.
prometheus = ports["PROMETHEUS"]


def query(expression):
    status, _, body = http("GET", prometheus, "/api/v1/query?query=" +
                           urllib.parse.quote(expression))
    check(status == 200, f"Prometheus query {expression}: {status}")
    return json.loads(body)["data"]["result"]


deadline = time.time() + 60
while time.time() < deadline:
    up = query("up")
    rule = query("job:cellrun_request_queue_seconds:mean1m")
    per_replica = query("instance:cellrun_request_queue_seconds:mean1m")
    if (len(up) == 3 and all(r["value"][1] == "1" for r in up) and rule
            and len(per_replica) == 3):
        break
    time.sleep(1)
else:
    fail(f"Prometheus: up {up}, rule {rule}, per replica {per_replica}")
for args in (["check", "rules", os.path.join(root, "deploy", "prometheus",
                                             "cellrun-rules.yml")],
             ["check", "config", os.path.join(run_dir, "prometheus.yml")]):
    checked = subprocess.run(["promtool", *args], capture_output=True, text=True)
    check(checked.returncode == 0, f"promtool {args}: {checked.stdout} {checked.stderr}")

# 4. A replica dies with sessions open.
later = list(range(2000, 2060))
for s in later:
    chunks[s] = session_tokens()
    expected[s] = expected_of(chunks[s])
more = [[rng.randrange(1, 1000) for _ in range(rng.randint(1, 30))]
        for _ in range(600)]
more_expected = [expected_of([tokens]) for tokens in more]
first_chunk, first_outputs = {}, {}
with concurrent.futures.ThreadPoolExecutor(24) as pool:
    runs = {s: pool.submit(infer, ports["HTTP"], chunks[s][0],
                           {"sequence_start": True}, s) for s in later}
    for s, run in runs.items():
        status, replica, body = run.result()
        check(status == 200, f"session {s} chunk 0: {status} {body[:200]}")
        first_chunk[s] = replica
        first_outputs[s] = outputs_of(body)
victim = max(("replica1", "replica2", "replica3"),
             key=lambda name: list(first_chunk.values()).count(name))
victim_index = int(victim[-1])


def victim_down():
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(os.path.join(run_dir, "haproxy.sock"))
        s.sendall(b"show stat\n")
        text = b""
        while chunk := s.recv(65536):
            text += chunk
    rows = [line.split(",") for line in text.decode().splitlines()
            if line.startswith("http_") and f",{victim}," in line]
    return rows and all(row[17].startswith("DOWN") for row in rows)


with concurrent.futures.ThreadPoolExecutor(24) as pool:
    # A pause before each chunk: the sessions are still going when the
    # replica dies.
    runs = {s: pool.submit(http_session, s, chunks[s], 1, [first_outputs[s]],
                           0.05) for s in later}
    plain_runs = [pool.submit(infer, ports["HTTP"], tokens) for tokens in more]
    # Killed under that load, with requests in flight.
    time.sleep(0.1)
    os.kill(pids[victim_index - 1], signal.SIGKILL)
    killed_at = time.time()
    down_after = None
    while time.time() - killed_at < 10:
        if victim_down():
            down_after = time.time() - killed_at
            break
        time.sleep(0.1)
    check(down_after is not None, f"HAProxy still sends to {victim} after 10 s")
    lost = cut = 0
    for s, run in runs.items():
        answered, outputs, error = run.result()
        if first_chunk[s] == victim and error is not None:
            lost += 1
            if error[0] == 0:
                # Its chunk was being answered when the replica died: the
                # connection closed with no answer to name the session in.
                cut += 1
            else:
                check(str(s) in error[1],
                      f"session {s} of the dead replica: {error}")
        elif first_chunk[s] == victim:
            # It ended before its replica died.
            check(answered == {victim}, f"session {s} answered by {answered}")
            same(outputs, expected[s], f"session {s} done before the kill")
        else:
            check(error is None, f"session {s} on {first_chunk[s]}: {error}")
            check(answered == {first_chunk[s]},
                  f"session {s} moved from {first_chunk[s]} to {answered}")
            same(outputs, expected[s], f"session {s} after the kill")
    check(lost > 0, f"no session of {victim} was still open when it died")
    # At most one chunk a client thread was in flight when it died.
    check(cut <= 24, f"{cut} sessions of {victim} cut off without an answer")
    for k, run in enumerate(plain_runs):
        status, replica, body = run.result()
        check(status == 200, f"plain request {k} after the kill: {status} {body[:200]}")
        same(outputs_of(body), more_expected[k], f"plain request {k} after the kill")

replicas("stop")
print(f"deploy test: 300 sessions ({counts} over HTTP, 50 over gRPC) and 300 "
      f"plain requests through HAProxy equal to one replica's answers; sessions "
      f"started per replica {started}; Prometheus scraped 3 and its rules answer; "
      f"{victim} killed: marked down after {down_after:.1f} s, its {lost} sessions "
      f"refused naming them ({cut} cut off while answered), the other "
      f"{len(later) - lost} and 600 plain requests answered correctly")
