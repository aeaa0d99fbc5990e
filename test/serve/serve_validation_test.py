"""One strict reading of requests on HTTP and gRPC (issue: the server under
hostile traffic, items 5 and 6): shapes of the model's rank exactly, nested
JSON data exactly as the shape, exactly one of gRPC's raw or typed contents
(and the typed field of the datatype), NaN and infinite values refused
unless the server takes them (--allow-non-finite); each refused with 400 /
INVALID_ARGUMENT and its reason, and the server serves on.

  serve_validation_test.py CELLRUN LSTM.cellpack GRU.cellpack"""
import json
import struct
import sys

import grpc
import numpy as np
from tritonclient.grpc import service_pb2, service_pb2_grpc

from kserve_client import Checks, Server

cellrun, lstm, gru = sys.argv[1:4]
check = Checks()


def http_infer(server, model, inputs, binary=b"", headers=None):
    header = json.dumps({"inputs": inputs}).encode()
    all_headers = {"Content-Type": "application/json"}
    if binary:
        all_headers["Inference-Header-Content-Length"] = str(len(header))
    all_headers.update(headers or {})
    status, _, body = server.request("POST", f"/v2/models/{model}/infer",
                                     body=header + binary, headers=all_headers)
    return status, body.decode(errors="replace")


def grpc_infer(server, request):
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc}")
    stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
    try:
        stub.ModelInfer(request, timeout=30)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as error:
        return error.code(), error.details()
    finally:
        channel.close()


def refused_http(name, status_body, fragment):
    status, body = status_body
    check(status == 400 and fragment in body, f"HTTP {name}: {status} {body[:160]}")


def refused_grpc(name, code_details, fragment):
    code, details = code_details
    check(code == grpc.StatusCode.INVALID_ARGUMENT and fragment in details,
          f"gRPC {name}: {code} {details[:160]}")


# The LSTM: one INT64 token a step, [-1].
server = Server(cellrun, lstm)
tokens = [5, 17, 3]


def token_input(shape, data):
    return [{"name": "token", "datatype": "INT64", "shape": shape, "data": data}]


status, body = http_infer(server, "lstm_lm", token_input([3], tokens))
check(status == 200, f"HTTP valid tokens: {status} {body[:100]}")
status, body = http_infer(server, "lstm_lm", token_input([3], [[5], [17], [3]]))
refused_http("nested deeper than [3]", (status, body), "nested deeper")
refused_http("[3, 1] for [-1]", http_infer(server, "lstm_lm", token_input([3, 1], tokens)),
             "does not fit the model's [-1]")
refused_http("[3, 1, 1] for [-1]",
             http_infer(server, "lstm_lm", token_input([3, 1, 1], tokens)),
             "does not fit the model's [-1]")
refused_http("[1, 3] for [-1]", http_infer(server, "lstm_lm", token_input([1, 3], tokens)),
             "does not fit the model's [-1]")
refused_http("ragged [[5, 17], [3]]",
             http_infer(server, "lstm_lm", token_input([3], [[5, 17], [3]])), "ragged")
refused_http("arrays beside values",
             http_infer(server, "lstm_lm", token_input([3], [[], 5, 17, 3, []])),
             "ragged")


def grpc_tokens(shape, datatype="INT64", raw=None, int64=None, int32=None):
    request = service_pb2.ModelInferRequest(model_name="lstm_lm")
    tensor = request.inputs.add(name="token", datatype=datatype, shape=shape)
    if int64 is not None:
        tensor.contents.int64_contents.extend(int64)
    if int32 is not None:
        tensor.contents.int_contents.extend(int32)
    if raw is not None:
        request.raw_input_contents.append(raw)
    return request


raw = np.array(tokens, np.int64).tobytes()
check(grpc_infer(server, grpc_tokens([3], raw=raw))[0] == grpc.StatusCode.OK,
      "gRPC raw tokens")
check(grpc_infer(server, grpc_tokens([3], int64=tokens))[0] == grpc.StatusCode.OK,
      "gRPC typed tokens")
check(grpc_infer(server, grpc_tokens([3], "INT32", int32=tokens))[0]
      == grpc.StatusCode.OK, "gRPC INT32 tokens in int_contents")
refused_grpc("raw and typed", grpc_infer(server, grpc_tokens([3], raw=raw, int64=tokens)),
             "not both")
refused_grpc("INT32 in int64_contents",
             grpc_infer(server, grpc_tokens([3], "INT32", int64=tokens)),
             "values go in int_contents, not int64_contents")
refused_grpc("[3, 1] for [-1]", grpc_infer(server, grpc_tokens([3, 1], int64=tokens)),
             "does not fit the model's [-1]")
refused_grpc("[3, 1, 1] for [-1]",
             grpc_infer(server, grpc_tokens([3, 1, 1], int64=tokens)),
             "does not fit the model's [-1]")
status, body = http_infer(server, "lstm_lm", token_input([3], tokens))
check(status == 200, f"HTTP after the refusals: {status}")
code, log = server.stop()
check(code == 0, f"exit code {code}")

# The GRU: 64 FP32 features a step, [-1, 64].
for allow in (False, True):
    server = Server(cellrun, gru, *(["--allow-non-finite"] if allow else []))
    for bad, name in ((float("nan"), "a NaN"), (float("inf"), "an infinite value")):
        features = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
        features[1, 7] = bad
        binary = features.tobytes()
        inputs = [{"name": "x", "datatype": "FP32", "shape": [2, 64],
                   "parameters": {"binary_data_size": len(binary)}}]
        result = http_infer(server, "gru", inputs, binary)
        request = service_pb2.ModelInferRequest(model_name="gru")
        tensor = request.inputs.add(name="x", datatype="FP32", shape=[2, 64])
        tensor.contents.fp32_contents.extend(features.flatten().tolist())
        code = grpc_infer(server, request)
        if allow:
            check(result[0] == 200, f"HTTP {name} with --allow-non-finite: {result}")
            check(code[0] == grpc.StatusCode.OK,
                  f"gRPC {name} with --allow-non-finite: {code}")
        else:
            refused_http(name, result, f"input 'x' has {name} (element 7")
            refused_grpc(name, code, f"input 'x' has {name} (element 7")
    code, log = server.stop()
    check(code == 0, f"exit code {code}")

check.finish("serve_validation_test: all passed")
