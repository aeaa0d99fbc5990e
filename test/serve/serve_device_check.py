"""`cellrun serve` on a device, end to end: starts the server with
`--device DEVICE` (cuda on a GPU machine: scripts/gpu-check.sh), sends the
first COUNT requests of REQUESTS over HTTP with JSON tensors from 16
concurrent clients, and checks every answer against `cellrun run` on the CPU
backend: on the CPU with the serve tests' tolerance and tokens exactly; on
another device floats within 1e-3 relative + 1e-4 absolute and at most 2% of
the requests decoding other tokens (near ties of two logits flip the argmax
when fp32 rounds differently, as EngineCudaTest allows). Needs only Python's
standard library and numpy.

  serve_device_check.py CELLRUN MODEL.cellpack REQUESTS.jsonl DEVICE [COUNT]"""
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import kserve_client
from kserve_client import (Server, check_outputs, decode_reply, json_body,
                           load_lines, reference_results, to_tensors)


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    cellrun, model, requests_path, device = sys.argv[1:5]
    count = int(sys.argv[5]) if len(sys.argv) > 5 else 64
    requests = load_lines(requests_path, count)
    reference = reference_results(cellrun, model, requests, tempfile.mkdtemp())
    name = json.loads(subprocess.run([cellrun, "inspect", model], check=True,
                                     capture_output=True, text=True).stdout)["model_name"]
    if device != "cpu":
        kserve_client.REL_TOL, kserve_client.ABS_TOL = 1e-3, 1e-4
    decoded_otherwise = []
    server = Server(cellrun, model, device=device)
    try:
        status, _, body = server.request("GET", f"/v2/models/{name}")
        if status != 200:
            raise AssertionError(f"metadata: {status} {body[:200]}")
        metadata = json.loads(body)

        def send(request):
            tensors, parameters = to_tensors(request, metadata)
            body, headers = json_body(request["id"], tensors, parameters)
            status, reply_headers, reply = server.request(
                "POST", f"/v2/models/{name}/infer", body, headers)
            if status != 200:
                raise AssertionError(f"{request['id']}: {status} {reply[:300]}")
            arrays = decode_reply(reply_headers, reply)[1]
            tokens = {name for name, array in arrays.items() if array.dtype.kind == "i"}
            wanted = reference[request["id"]]["outputs"]
            if device != "cpu" and any(
                    arrays[name].flatten().tolist() != wanted[name]["data"]
                    for name in tokens if name in wanted):
                decoded_otherwise.append(request["id"])
                return
            check_outputs(arrays, reference[request["id"]], request["id"])

        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(send, requests))
        allowed = int(0.02 * len(requests)) if device != "cpu" else 0
        if len(decoded_otherwise) > allowed:
            raise AssertionError(f"{len(decoded_otherwise)} requests decoded other "
                                 f"tokens (at most {allowed}): {decoded_otherwise[:5]}")
    except Exception as error:  # noqa: BLE001 (any failure: stop the server)
        code, log = stop(server)
        print(f"FAIL ({device}): {type(error).__name__}: {error}\n{log[-2000:]}")
        sys.exit(1)
    code, log = stop(server)
    if code != 0:
        print(f"FAIL ({device}): the server exited with {code}\n{log[-2000:]}")
        sys.exit(1)
    print(f"serve --device {device}: {len(requests)} answers over HTTP equal to "
          f"cellrun run on the CPU" + (f" ({len(decoded_otherwise)} decoded other "
                                       f"tokens: near ties)" if decoded_otherwise else "")
          + "; clean exit")


def stop(server):
    """SIGTERM, then SIGKILL if it has not exited in 30 s: never left running."""
    try:
        return server.stop(timeout=30)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
        return -9, server.read_log()


if __name__ == "__main__":
    main()
