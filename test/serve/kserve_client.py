"""Helpers of the server tests: start `cellrun serve` on free loopback ports,
turn `cellrun run` request lines into KServe v2 tensors, send them over
HTTP (JSON or binary tensor data, with the standard library only) and
compare results with `cellrun run`'s."""
import http.client
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time

import numpy as np

ABS_TOL, REL_TOL = 1e-6, 1e-5


def free_ports(count):
    sockets, ports = [], []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        ports.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return ports


class Server:
    """`cellrun serve` on free ports; stop() sends SIGTERM and returns the
    exit code and the log."""

    def __init__(self, cellrun, model, *extra, device="cpu"):
        self.http, self.grpc, self.metrics = free_ports(3)
        self.log_path = f"/tmp/cellrun-serve-{os.getpid()}-{self.http}.log"
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [cellrun, "serve", model, "--host", "127.0.0.1",
             "--http-port", str(self.http), "--grpc-port", str(self.grpc),
             "--metrics-port", str(self.metrics), "--device", device, *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("cellrun serve exited: " + self.read_log())
            try:
                status, _, _ = self.request("GET", "/v2/health/ready")
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("cellrun serve did not become ready: " + self.read_log())

    def read_log(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def request(self, method, path, body=None, headers=None, port=None,
                timeout=60):
        connection = http.client.HTTPConnection(
            "127.0.0.1", port or self.http, timeout=timeout)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=timeout)
        return code, self.read_log()


def load_lines(path, count):
    lines = []
    with open(path) as f:
        for line in f:
            if line.strip():
                lines.append(json.loads(line))
            if len(lines) == count:
                break
    return lines


def reference_results(cellrun, model, requests, workdir):
    """`cellrun run`'s results for `requests` (the offline path, itself
    checked against PyTorch), by id."""
    source = os.path.join(workdir, "requests.jsonl")
    target = os.path.join(workdir, "results.jsonl")
    with open(source, "w") as f:
        for request in requests:
            f.write(json.dumps(request) + "\n")
    subprocess.run([cellrun, "run", model, "--input", source, "--output",
                    target, "--device", "cpu", "--quiet"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = {}
    with open(target) as f:
        for line in f:
            result = json.loads(line)
            results[result["id"]] = result
    return results


def to_tensors(request, metadata):
    """A `cellrun run` request line as KServe inputs: [(name, datatype,
    numpy array)] and parameters."""
    inputs = {i["name"]: i for i in metadata["inputs"]}
    tensors, parameters = [], {}
    if "nodes" in request:
        nodes = request["nodes"]
        arity = inputs["children"]["shape"][1]
        children = [n.get("children", [-1] * arity) for n in nodes]
        tensors.append(("children", "INT64", np.array(children, np.int64)))
        leaves = [n for n in nodes if "children" not in n]
        internals = [n for n in nodes if "children" in n]
        for name in inputs:
            if name == "children":
                continue
            # The internal cell's inputs are "internal_<name>", one row per
            # internal node in node order; the leaf's, one row per leaf.
            owners, key = ((internals, name[len("internal_"):])
                           if name.startswith("internal_") else (leaves, name))
            values = [n["token"] if "token" in n else n[key] for n in owners]
            tensors.append(tensor_of(name, inputs[name], values))
    else:
        if "tokens" in request:
            (name,) = inputs
            tensors.append(tensor_of(name, inputs[name], request["tokens"]))
        else:
            for name in inputs:
                values = [step[name] for step in request["steps"]]
                tensors.append(tensor_of(name, inputs[name], values))
    if "max_decode_length" in request:
        parameters["max_decode_length"] = request["max_decode_length"]
    return tensors, parameters


def tensor_of(name, description, values):
    datatype = description["datatype"]
    dtype = {"INT64": np.int64, "INT32": np.int32, "FP32": np.float32}[datatype]
    return (name, datatype, np.array(values, dtype))


def json_body(request_id, tensors, parameters, binary_inputs=False,
              binary_outputs=False):
    """An infer body: JSON, or JSON followed by binary tensor data. Returns
    (body bytes, headers)."""
    inputs, blobs = [], []
    for name, datatype, array in tensors:
        entry = {"name": name, "datatype": datatype, "shape": list(array.shape)}
        if binary_inputs:
            blob = array.tobytes()
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            entry["data"] = array.flatten().tolist()
        inputs.append(entry)
    header = {"id": request_id, "inputs": inputs}
    parameters = dict(parameters)
    if binary_outputs:
        parameters["binary_data_output"] = True
    if parameters:
        header["parameters"] = parameters
    text = json.dumps(header).encode()
    headers = {"Content-Type": "application/json"}
    if binary_inputs:
        headers["Inference-Header-Content-Length"] = str(len(text))
        headers["Content-Type"] = "application/octet-stream"
    return text + b"".join(blobs), headers


def decode_reply(headers, body):
    """(JSON header, {output name: numpy array})."""
    length = headers.get("Inference-Header-Content-Length")
    if length is None:
        header = json.loads(body)
        binary = b""
    else:
        header = json.loads(body[:int(length)])
        binary = body[int(length):]
    arrays, offset = {}, 0
    for output in header.get("outputs", []):
        dtype = {"FP32": np.float32, "INT64": np.int64}[output["datatype"]]
        size = output.get("parameters", {}).get("binary_data_size")
        if size is not None:
            array = np.frombuffer(binary[offset:offset + size], dtype)
            offset += size
        else:
            array = np.array(output["data"], dtype)
        arrays[output["name"]] = array.reshape(output["shape"])
    assert offset == len(binary), "binary data left over"
    return header, arrays


def check_outputs(arrays, reference, what):
    """`arrays` equal the `cellrun run` reference (tokens exactly)."""
    expected = reference["outputs"]
    assert set(arrays) == set(expected), (
        f"{what}: outputs {sorted(arrays)} != {sorted(expected)}")
    for name, tensor in expected.items():
        got = arrays[name]
        want = np.array(tensor["data"], got.dtype).reshape(tensor["shape"])
        assert got.shape == want.shape, f"{what}: {name} shape {got.shape} != {want.shape}"
        if got.dtype == np.int64:
            assert np.array_equal(got, want), f"{what}: {name} {got} != {want}"
        else:
            error = np.abs(got - want) - (ABS_TOL + REL_TOL * np.abs(want))
            assert (error <= 0).all(), (
                f"{what}: {name} differs by up to {np.abs(got - want).max()}")


class Checks:
    """Failed checks are printed at once and counted; finish() exits 1 if
    any failed, so that one run reports every failure."""

    def __init__(self):
        self.failures = []

    def __call__(self, condition, message):
        if not condition:
            self.failures.append(message)
            print("FAIL:", message)

    def finish(self, passed_message):
        if self.failures:
            print(f"{len(self.failures)} failures")
            sys.exit(1)
        print(passed_message)
