"""End-to-end test of `cellrun serve` on one example model: every endpoint,
valid requests over HTTP (JSON and binary tensor data, raw and through
tritonclient) and gRPC (tritonclient) equal to `cellrun run`'s results,
bad requests answered with the right 4xx and a precise message while valid
requests run concurrently, and /metrics parsed by prometheus_client with
counters equal to what was sent.

  serve_protocol_test.py CELLRUN MODEL.cellpack REQUESTS.jsonl [MODEL_NAME]"""
import json
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from prometheus_client.parser import text_string_to_metric_families

from kserve_client import (Server, check_outputs, decode_reply, json_body,
                           load_lines, reference_results, to_tensors)

cellrun, model, requests_path = sys.argv[1:4]
requests = load_lines(requests_path, 24)
workdir = tempfile.mkdtemp()
reference = reference_results(cellrun, model, requests, workdir)
server = Server(cellrun, model, "--max-body-bytes", "1MB")
sent = {"success": 0, "invalid": 0, "not_found": 0}
lock = threading.Lock()


def count(outcome):
    with lock:
        sent[outcome] += 1


def check(condition, message):
    if not condition:
        print("FAIL:", message)
        print(server.read_log())
        server.stop()
        sys.exit(1)


# Endpoints.
status, _, body = server.request("GET", "/v2")
meta = json.loads(body)
check(status == 200 and meta["name"] == "cellrun"
      and "binary_tensor_data" in meta["extensions"], f"/v2: {body}")
for path in ("/v2/health/live", "/v2/health/ready"):
    status, _, body = server.request("GET", path)
    check(status == 200, f"{path}: {status} {body}")
status, _, body = server.request("GET", "/v2/models/nope")
check(status == 404, f"unknown model metadata: {status}")
status, _, body = server.request("GET", "/v2/health/ready")
model_name = None
# The model's name: given (argument 4), or one of the examples'.
names = sys.argv[4:5] or ["lstm_lm", "gru", "seq2seq", "treelstm", "attention",
                            "bahdanau"]
for candidate in names:
    status, _, body = server.request("GET", f"/v2/models/{candidate}")
    if status == 200:
        model_name = candidate
        metadata = json.loads(body)
check(model_name is not None, "no example model name answered")
check(metadata["versions"] == ["1"] and metadata["inputs"] and metadata["outputs"],
      f"metadata: {metadata}")
for path in (f"/v2/models/{model_name}/versions/1",
             f"/v2/models/{model_name}/ready",
             f"/v2/models/{model_name}/versions/1/ready"):
    status, _, body = server.request("GET", path)
    check(status == 200, f"{path}: {status} {body}")
for path in (f"/v2/models/{model_name}/versions/2",
             f"/v2/models/{model_name}/versions/2/ready",
             "/v2/models/nope/ready"):
    status, _, body = server.request("GET", path)
    check(status == 404 and b"error" in body, f"{path}: {status} {body}")
status, _, body = server.request("GET", "/metrics", port=server.metrics)
check(status == 200, "/metrics")
infer_path = f"/v2/models/{model_name}/infer"


def infer_raw(request, binary):
    tensors, parameters = to_tensors(request, metadata)
    body, headers = json_body(request["id"], tensors, parameters,
                              binary_inputs=binary, binary_outputs=binary)
    status, reply_headers, reply = server.request("POST", infer_path, body, headers)
    check(status == 200, f"{request['id']} ({'binary' if binary else 'json'}): "
          f"{status} {reply[:300]}")
    header, arrays = decode_reply(reply_headers, reply)
    check(header["id"] == request["id"] and header["model_name"] == model_name,
          f"reply header {header}")
    check_outputs(arrays, reference[request["id"]], request["id"])
    if "max_decode_length" in request or "tokens" in arrays:
        stop = header["parameters"].get("stop_reason")
        check(stop == reference[request["id"]].get("stop"),
              f"{request['id']}: stop {stop}")
    count("success")


# Bad requests, each with its status and a piece of its message.
first = requests[0]
tensors, parameters = to_tensors(first, metadata)
good_body, good_headers = json_body("bad", tensors, parameters)
bad_cases = []


def bad_case(name, body, headers, status, fragment, path=None, outcome="invalid"):
    bad_cases.append((name, body, headers, status, fragment, path or infer_path,
                      outcome))


def edited(edit):
    header = json.loads(good_body)
    edit(header)
    return json.dumps(header).encode()


bad_case("malformed JSON", good_body[:-5], good_headers, 400, "not valid JSON")
bad_case("not an object", b"[1, 2]", good_headers, 400, "JSON object")
bad_case("duplicate member", b'{"id": "a", "id": "b", "inputs": []}', good_headers,
         400, 'duplicate member "id"')
bad_case("nested too deep", b'{"id": ' + b"[" * 300 + b"]" * 300 + b"}",
         good_headers, 400, "nesting deeper than 256")
bad_case("wrong datatype",
         edited(lambda h: h["inputs"][-1].update(datatype="FP64")),
         good_headers, 400, "datatype FP64 is not accepted")
bad_case("unknown datatype",
         edited(lambda h: h["inputs"][-1].update(datatype="FLOAT")),
         good_headers, 400, "unknown datatype")
bad_case("wrong shape",
         edited(lambda h: h["inputs"][-1].update(
             shape=h["inputs"][-1]["shape"] + [1, 2])),
         good_headers, 400, "shape")
bad_case("data count",
         edited(lambda h: h["inputs"][-1].update(data=h["inputs"][-1]["data"][:-1])),
         good_headers, 400, "values; the shape needs")
bad_case("missing input", edited(lambda h: h.update(inputs=h["inputs"][:-1])),
         good_headers, 400, "is missing")
bad_case("unknown input",
         edited(lambda h: h["inputs"].append(dict(h["inputs"][-1], name="zzz"))),
         good_headers, 400, "unknown input 'zzz'")
bad_case("unknown output",
         edited(lambda h: h.update(outputs=[{"name": "zzz"}])),
         good_headers, 400, "output 'zzz'")
bad_case("unknown model", good_body, good_headers, 404, "unknown model 'nope'",
         path="/v2/models/nope/infer", outcome="not_found")
bad_case("unknown version", good_body, good_headers, 404, "unknown version '7'",
         path=f"/v2/models/{model_name}/versions/7/infer", outcome="not_found")
bad_case("bad binary header", good_body,
         dict(good_headers, **{"Inference-Header-Content-Length": "99999999"}),
         400, "Inference-Header-Content-Length")
bad_case("binary size past the end",
         edited(lambda h: h["inputs"][-1].update(
             data=None, parameters={"binary_data_size": 4096}) or
             h["inputs"][-1].pop("data")),
         good_headers, 400, "past the end of the binary data")
bad_case("body not UTF-8", good_body.replace(b'"bad"', b'"b\xffd"', 1),
         good_headers, 400, "not valid JSON")
bad_case("model name not UTF-8", good_body, good_headers, 404, "unknown model",
         path="/v2/models/%FF/infer", outcome="not_found")
bad_case("deadline past a day",
         edited(lambda h: h.setdefault("parameters", {}).update(deadline_ms=1e300)),
         good_headers, 400, "deadline_ms must be a number from 0")
bad_case("oversize body", b"{" + b" " * (2 << 20) + b"}", good_headers, 413,
         "larger than the server's limit", outcome=None)
bad_case("unknown sequence_id",
         edited(lambda h: h.update(parameters={"sequence_id": 12345})),
         good_headers, 400,
         "sequence_id 12345 is not an open session"
         if metadata["parameters"]["structure"] == "chain"
         else "streaming sessions (sequence_id) need a chain model")
token_inputs = [i for i in metadata["inputs"] if i["datatype"] == "INT64"
                and i["name"] != "children"]
if token_inputs:
    name = token_inputs[0]["name"]
    bad_case("token outside the vocabulary",
             edited(lambda h: [t.update(data=[10 ** 9] * len(t["data"]))
                               for t in h["inputs"] if t["name"] == name]),
             good_headers, 400, "outside the vocabulary")
if "nodes" in first:
    def cycle(h):
        children = h["inputs"][0]
        flat = children["data"]
        # The root reads itself.
        arity = children["shape"][1]
        n = len(flat) // arity
        flat[arity * (n - 1)] = n - 1
    bad_case("broken tree (cycle)", edited(cycle), good_headers, 400, "cycle")

    def duplicate(h):
        flat = h["inputs"][0]["data"]
        n = len(flat) // 2
        flat[2 * (n - 1) + 1] = flat[2 * (n - 1)]
    bad_case("broken tree (duplicate child)", edited(duplicate), good_headers,
             400, "duplicate child")


def run_bad_case(case):
    name, body, headers, status, fragment, path, outcome = case
    got, _, reply = server.request("POST", path, body, headers)
    message = json.loads(reply).get("error", "") if reply.startswith(b"{") else ""
    check(got == status and fragment in message,
          f"{name}: expected {status} with '{fragment}', got {got}: {reply[:300]}")
    if outcome:
        count(outcome)


# Valid requests (JSON and binary) and the bad ones, all at once.
with ThreadPoolExecutor(max_workers=8) as pool:
    jobs = [pool.submit(infer_raw, r, b) for r in requests for b in (False, True)]
    jobs += [pool.submit(run_bad_case, case) for case in bad_cases]
    for job in jobs:
        job.result()

# tritonclient over HTTP (binary data) and gRPC.
http = httpclient.InferenceServerClient(f"127.0.0.1:{server.http}")
grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc}")
check(http.is_server_live() and http.is_server_ready()
      and http.is_model_ready(model_name), "tritonclient http health")
check(grpc.is_server_live() and grpc.is_server_ready()
      and grpc.is_model_ready(model_name), "tritonclient grpc health")
grpc_meta = grpc.get_model_metadata(model_name, as_json=True)
check([i["name"] for i in grpc_meta["inputs"]]
      == [i["name"] for i in metadata["inputs"]], f"grpc metadata {grpc_meta}")
try:
    grpc.get_model_metadata("nope")
    check(False, "grpc metadata of an unknown model")
except Exception as error:  # InferenceServerException
    check("unknown model" in str(error), f"grpc unknown model: {error}")
for client, module in ((http, httpclient), (grpc, grpcclient)):
    for request in requests[:12]:
        tensors, parameters = to_tensors(request, metadata)
        inputs = []
        for name, datatype, array in tensors:
            tensor = module.InferInput(name, list(array.shape), datatype)
            tensor.set_data_from_numpy(array)
            inputs.append(tensor)
        result = client.infer(model_name, inputs, request_id=request["id"],
                              parameters=parameters or None)
        arrays = {name: result.as_numpy(name)
                  for name in reference[request["id"]]["outputs"]}
        check_outputs(arrays, reference[request["id"]],
                      f"tritonclient {module.__name__} {request['id']}")
        count("success")
    try:
        tensors, parameters = to_tensors(first, metadata)
        name, datatype, array = tensors[-1]
        tensor = module.InferInput(name, list(array.shape), "FP64")
        tensor.set_data_from_numpy(array.astype(np.float64))
        client.infer(model_name, [tensor], request_id="bad-type")
        check(False, f"{module.__name__}: FP64 accepted")
    except Exception as error:
        check("not accepted" in str(error),
              f"{module.__name__} bad datatype: {error}")
        count("invalid")

# Streaming sessions (chain models): a sequence sent in chunks under one
# sequence_id gives exactly what it gives sent at once; over HTTP and over
# gRPC's ModelStreamInfer. Other models refuse sequence parameters.
structure = metadata["parameters"]["structure"]
whole = requests[1]
tensors, _ = to_tensors(whole, metadata)
steps = tensors[0][2].shape[0]
cuts = [0, 1, max(2, steps // 2), steps] if steps >= 3 else [0, steps]


def chunk_inputs(module, start, stop):
    inputs = []
    for name, datatype, array in tensors:
        tensor = module.InferInput(name, list(array[start:stop].shape), datatype)
        tensor.set_data_from_numpy(array[start:stop])
        inputs.append(tensor)
    return inputs


def check_session_header(emitted, alone):
    """The session id from the x-sequence-id header (what a proxy hashes
    on): alone it names the session, and comes back in the reply; a header
    that disagrees with the sequence_id parameter, or is not an id, is
    refused; gRPC metadata the same."""
    pieces = []
    for k in range(len(cuts) - 1):
        body, headers = json_body(
            f"h{k}", [(n, d, a[cuts[k]:cuts[k + 1]]) for n, d, a in tensors],
            {"sequence_start": k == 0, "sequence_end": k == len(cuts) - 2})
        headers["x-sequence-id"] = "4444"
        status, reply_headers, reply = server.request(
            "POST", f"/v2/models/{model_name}/infer", body, headers)
        check(status == 200, f"header session chunk {k}: {status} {reply[:200]}")
        lowered = {key.lower(): value for key, value in reply_headers.items()}
        check(lowered.get("x-sequence-id") == "4444",
              f"header session: reply headers {reply_headers}")
        pieces.append(decode_reply(reply_headers, reply)[1])
        count("success")
    for name in emitted:
        joined = np.concatenate([p[name] for p in pieces])
        check(np.array_equal(joined, alone.as_numpy(name)),
              f"header session: {name} differs from the whole sequence")
    for header, parameters, expected in [
            ("45", {"sequence_id": 46, "sequence_start": True},
             "the x-sequence-id header (45) and the sequence_id parameter (46) "
             "name different sessions"),
            ("4x", {"sequence_start": True},
             "the x-sequence-id header must be an integer >= 1, not '4x'"),
            ("0", {}, "must be an integer >= 1, not '0'")]:
        body, headers = json_body("bad-header", tensors, parameters)
        headers["X-Sequence-Id"] = header
        status, _, reply = server.request(
            "POST", f"/v2/models/{model_name}/infer", body, headers)
        check(status == 400 and expected in reply.decode(),
              f"header {header!r}: {status} {reply[:300]}")
        count("invalid")
    # gRPC: metadata against the parameter; the metadata alone names the
    # session (a chunk of one never started is refused, naming it).
    for stop, options, expected in [
            (steps, {"sequence_id": 77, "sequence_start": True,
                     "headers": {"x-sequence-id": "78"}},
             "(78) and the sequence_id parameter (77)"),
            (1, {"headers": {"x-sequence-id": "31337"}},
             "sequence_id 31337 is not an open session")]:
        try:
            grpc.infer(model_name, chunk_inputs(grpcclient, 0, stop), **options)
            check(False, f"gRPC {options} was accepted")
        except Exception as error:
            check(expected in str(error), f"gRPC {options}: {error}")
            count("invalid")

if structure == "chain":
    alone = http.infer(model_name, chunk_inputs(httpclient, 0, steps))
    emitted = [o["name"] for o in metadata["outputs"]
               if o["shape"] and o["shape"][0] == -1]
    finals = [o["name"] for o in metadata["outputs"] if o["name"] not in emitted]
    # HTTP: one chunk per call.
    pieces = []
    for k in range(len(cuts) - 1):
        result = http.infer(model_name, chunk_inputs(httpclient, cuts[k], cuts[k + 1]),
                            sequence_id=4242, sequence_start=k == 0,
                            sequence_end=k == len(cuts) - 2)
        pieces.append(result)
        count("success")
    for name in emitted:
        joined = np.concatenate([p.as_numpy(name) for p in pieces])
        check(np.array_equal(joined, alone.as_numpy(name)),
              f"HTTP session: {name} differs from the whole sequence")
    for name in finals:
        check(np.array_equal(pieces[-1].as_numpy(name), alone.as_numpy(name)),
              f"HTTP session: {name} differs from the whole sequence")
    # gRPC stream: every chunk sent at once, answered in order.
    answers, errors = [], []
    grpc.start_stream(callback=lambda result, error: (
        errors.append(error) if error else answers.append(result)))
    for k in range(len(cuts) - 1):
        grpc.async_stream_infer(model_name, chunk_inputs(grpcclient, cuts[k], cuts[k + 1]),
                                request_id=f"chunk{k}", sequence_id=4343,
                                sequence_start=k == 0,
                                sequence_end=k == len(cuts) - 2)
    grpc.async_stream_infer(model_name, chunk_inputs(grpcclient, 0, 1),
                            request_id="stray", sequence_id=999)
    grpc.stop_stream()
    check(len(answers) == len(cuts) - 1 and len(errors) == 1,
          f"gRPC stream: {len(answers)} answers, errors {errors}")
    check("sequence_id 999 is not an open session" in str(errors[0]),
          f"gRPC stream error: {errors[0]}")
    answers.sort(key=lambda r: r.get_response().id)
    for name in emitted:
        joined = np.concatenate([a.as_numpy(name) for a in answers])
        check(np.array_equal(joined, alone.as_numpy(name)),
              f"gRPC session: {name} differs from the whole sequence")
    count("success")  # the whole sequence
    sent["success"] += len(cuts) - 1
    sent["invalid"] += 1
    check_session_header(emitted, alone)
else:
    try:
        http.infer(model_name, chunk_inputs(httpclient, 0, steps),
                   sequence_id=7, sequence_start=True)
        check(False, "a session on a non-chain model was accepted")
    except Exception as error:
        check("need a chain model" in str(error), f"session refusal: {error}")
        count("invalid")

# /metrics: parsed by prometheus_client, counters equal to what was sent.
status, _, body = server.request("GET", "/metrics", port=server.metrics)
families = {f.name: f for f in text_string_to_metric_families(body.decode())}
outcomes = {s.labels["outcome"]: s.value
            for s in families["cellrun_requests"].samples
            if s.name == "cellrun_requests_total"}
for outcome, expected in sent.items():
    check(outcomes.get(outcome) == expected,
          f"metrics: {outcome} {outcomes.get(outcome)} != {expected} sent")
queue = [s for s in families["cellrun_request_queue_seconds"].samples
         if s.name.endswith("_count")]
check(queue and queue[0].value == sent["success"], f"queue histogram {queue}")
tasks = sum(s.value for s in families["cellrun_tasks"].samples)
check(tasks > 0, "no tasks counted")
# The workers' round seconds: some, and the executor's a part of them; no
# device time on the cpu backend (the counter is only there when measured).
rounds = sum(s.value for s in families["cellrun_worker_round_seconds"].samples
             if s.name.endswith("_total"))
executor = sum(s.value for s in families["cellrun_executor_seconds"].samples
               if s.name.endswith("_total"))
check(rounds > 0 and 0 < executor <= rounds,
      f"round seconds {rounds}, executor seconds {executor}")
check("cellrun_device_task_seconds" not in families,
      "device task seconds on the cpu backend")
# One worker: nothing can move (the counter is there, at 0).
moved = [s.value for s in families["cellrun_requests_moved"].samples
         if s.name == "cellrun_requests_moved_total"]
check(moved == [0.0], f"requests moved on one worker: {moved}")

code, log = server.stop()
check(code == 0 and "stopped" in log, f"exit code {code}: {log}")
print(f"serve protocol test: {model_name}: {sent['success']} valid, "
      f"{sent['invalid']} invalid, {sent['not_found']} unknown model/version: "
      f"all answered as expected")
