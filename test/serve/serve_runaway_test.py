"""`cellrun serve` with runaway decodes (issue: the server under hostile and
heavy traffic), on a seq2seq whose EOS is outside its vocabulary, so every
decode runs to max_decode_length (65536 tokens; 96 such requests take about
16 s on two cores):

- HTTP clients that close their connections mid-decode: their requests are
  cancelled and every row comes back within a second (running requests and
  reserved pool bytes back to 0, the cancelled counter up by as many);
- gRPC calls whose deadline passes: the same;
- --max-steps: a decode stops at the server's step limit (stop reason
  "limit"), a longer max_decode_length or source gets 400 naming the limit;
- SIGTERM with runaway requests in flight: the server exits within its
  --drain-timeout (plus a margin), answering each with 503 that names the
  drain deadline.

  serve_runaway_test.py CELLRUN MODEL"""
import json
import signal
import socket
import sys
import threading
import time

import grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc

from kserve_client import Checks, Server

cellrun, model = sys.argv[1:3]
check = Checks()
NAME = "seq2seq_runaway"
CLIENTS = 96


def body(tokens, **parameters):
    request = {"inputs": [{"name": "token", "shape": [len(tokens)],
                           "datatype": "INT64", "data": tokens}]}
    if parameters:
        request["parameters"] = parameters
    return json.dumps(request).encode()


def raw_request(port, payload):
    """An infer request written on a new socket, not read."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST /v2/models/" + NAME.encode() + b"/infer HTTP/1.1\r\n"
              b"Host: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(payload)).encode() +
              b"\r\n\r\n" + payload)
    return s


def gauges(server):
    text = server.request("GET", "/metrics", port=server.metrics)[2].decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("cellrun_") and " " in line:
            key, value = line.rsplit(" ", 1)
            values[key] = float(value)
    return values


def cancelled(server):
    return gauges(server)['cellrun_requests_total{outcome="cancelled"}']


def wait_running(server, count, within=20):
    deadline = time.time() + within
    while time.time() < deadline:
        if gauges(server)["cellrun_running_requests"] >= count:
            return True
        time.sleep(0.05)
    return False


def seconds_until_idle(server, within=10):
    """Seconds until no request runs and no pool row is reserved."""
    start = time.time()
    while time.time() - start < within:
        g = gauges(server)
        if (g["cellrun_running_requests"] == 0 and
                g["cellrun_pool_bytes_reserved"] == 0):
            return time.time() - start
        time.sleep(0.01)
    return None


server = Server(cellrun, model, "--max-steps", "65536")
try:
    # HTTP: the clients go away mid-decode.
    sockets = [raw_request(server.http, body([5, 17, 3 + i % 7]))
               for i in range(CLIENTS)]
    check(wait_running(server, CLIENTS),
          f"{CLIENTS} runaway requests were not all running")
    before = cancelled(server)
    time.sleep(0.3)
    for s in sockets:
        s.close()
    idle = seconds_until_idle(server)
    check(idle is not None and idle <= 1.0,
          f"rows of disconnected clients came back after {idle} s (limit 1 s)")
    check(cancelled(server) - before == CLIENTS,
          f"{cancelled(server) - before} of {CLIENTS} disconnected clients' "
          f"requests were cancelled")
    print(f"HTTP: {CLIENTS} disconnected clients' rows back in {idle:.3f} s")

    # gRPC: the calls' deadline passes.
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc}")
    stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
    before = cancelled(server)
    calls = []
    for i in range(32):
        request = service_pb2.ModelInferRequest(model_name=NAME, id=f"g{i}")
        tensor = request.inputs.add(name="token", datatype="INT64", shape=[2])
        tensor.contents.int64_contents.extend([4, 9 + i])
        calls.append(stub.ModelInfer.future(request, timeout=1.0))
    codes = []
    for call in calls:
        try:
            call.result()
            codes.append(grpc.StatusCode.OK)
        except grpc.RpcError as error:
            codes.append(error.code())
    ended = time.time()
    check(all(c == grpc.StatusCode.DEADLINE_EXCEEDED for c in codes),
          f"gRPC calls past their deadline ended with {set(codes)}")
    # From the moment the last call ended on the client.
    idle = seconds_until_idle(server)
    idle = None if idle is None else time.time() - ended
    check(idle is not None and idle <= 1.0,
          f"rows of timed-out gRPC calls came back after {idle} s (limit 1 s)")
    check(cancelled(server) - before == 32,
          f"{cancelled(server) - before} of 32 timed-out gRPC calls were "
          f"cancelled")
    channel.close()
    print(f"gRPC: 32 calls past their deadline, rows back in {idle:.3f} s")
finally:
    code, log = server.stop()
    check(code == 0, f"serve exited with {code}")

# The server's step limit.
server = Server(cellrun, model, "--max-steps", "50")
try:
    status, _, reply = server.request(
        "POST", f"/v2/models/{NAME}/infer", body([5, 6]))
    reply = json.loads(reply)
    check(status == 200 and reply["outputs"][0]["shape"] == [50] and
          reply["parameters"]["stop_reason"] == "limit",
          f"a decode under --max-steps 50: {status} {str(reply)[:200]}")
    status, _, reply = server.request(
        "POST", f"/v2/models/{NAME}/infer", body([5], max_decode_length=51))
    check(status == 400 and b"50, the server's step limit" in reply,
          f"max_decode_length past --max-steps: {status} {reply[:200]}")
    status, _, reply = server.request(
        "POST", f"/v2/models/{NAME}/infer", body([3] * 51))
    check(status == 400 and b"51 steps, longer than the limit of 50" in reply,
          f"a source past --max-steps: {status} {reply[:200]}")
finally:
    code, log = server.stop()
    check(code == 0, f"serve exited with {code}")

# SIGTERM with runaway requests in flight.
server = Server(cellrun, model, "--max-steps", "65536", "--drain-timeout", "1")
answers = [None] * CLIENTS


def client(index):
    s = raw_request(server.http, body([7, 2 + index % 5]))
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if b"\r\n\r\n" in data:
                head, rest = data.split(b"\r\n\r\n", 1)
                length = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
                          if l.lower().startswith(b"content-length")]
                if length and len(rest) >= length[0]:
                    break
    except OSError:
        pass
    answers[index] = data


threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
for t in threads:
    t.start()
check(wait_running(server, CLIENTS), "the runaway requests were not running")
start = time.time()
server.process.send_signal(signal.SIGTERM)
try:
    code = server.process.wait(timeout=30)
except Exception:
    code = None
took = time.time() - start
for t in threads:
    t.join(timeout=10)
log = server.read_log()
check(code == 0, f"serve exited with {code} after SIGTERM")
check(took <= 1.0 + 3.0,
      f"SIGTERM with --drain-timeout 1 took {took:.2f} s to exit")
check("drain deadline passed: cancelling the" in log,
      "the log does not say the drain deadline passed")
drained = sum(1 for a in answers
              if a and a.startswith(b"HTTP/1.1 503") and b"drain deadline" in a)
check(drained == CLIENTS,
      f"{drained} of {CLIENTS} runaway requests were answered 503 naming the "
      f"drain deadline")
print(f"SIGTERM: exited in {took:.2f} s, {drained} requests answered 503")

check.finish("serve runaway: all checks passed")
