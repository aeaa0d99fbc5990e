"""`cellrun serve` on a device, end to end: starts the server with
`--device DEVICE` (cuda on a GPU machine: scripts/gpu-check.sh), sends the
first COUNT requests of REQUESTS over HTTP with JSON tensors from 16
concurrent clients, and checks every answer against `cellrun run` on the CPU
backend (floats within the serve tests' tolerance, tokens exactly). Needs
only Python's standard library and numpy.

  serve_device_check.py CELLRUN MODEL.cellpack REQUESTS.jsonl DEVICE [COUNT]"""
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

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
            check_outputs(decode_reply(reply_headers, reply)[1],
                          reference[request["id"]], request["id"])

        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(send, requests))
    except (AssertionError, OSError) as error:
        code, log = server.stop()
        print(f"FAIL ({device}): {error}\n{log[-2000:]}")
        sys.exit(1)
    code, log = server.stop()
    if code != 0:
        print(f"FAIL ({device}): the server exited with {code}\n{log[-2000:]}")
        sys.exit(1)
    print(f"serve --device {device}: {len(requests)} answers over HTTP equal to "
          f"cellrun run on the CPU; clean exit")


if __name__ == "__main__":
    main()
