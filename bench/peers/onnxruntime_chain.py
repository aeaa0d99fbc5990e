#!/usr/bin/env python3
"""The ONNX Runtime peer for chain models (LSTM, GRU): the fastest CPU
runtime a user would pick instead of cellrun, on the same trace and weights.

    onnxruntime_chain.py --weights CELL.pt|DIR --trace TRACE.jsonl --out RESULTS.jsonl
                         [--mode online|sorted] [options of pytorch_chain.py]

The generator's weights (CELL.pt, as pytorch_chain.py reads them) become
one ONNX graph: an optional embedding Gather, then ONNX's LSTM or GRU
operator over the whole batch with `sequence_lens`, so no step past a
request's end is computed (ONNX Runtime's CPU kernels compute the input
projection of all steps in one GEMM, then only the recurrent one per step).
The gates are reordered from PyTorch's (LSTM i,f,g,o to ONNX's i,o,f,c; GRU
r,z,n to z,r,h with linear_before_reset=1, PyTorch's GRU). One
InferenceSession with --threads intra-op threads runs every batch on the
CPU; schedules, check and results are those of pytorch_chain.py
(peer_common.py). Needs the `onnxruntime` package (PyPI; installed in the
build's virtual environment by scripts/python-test-env.sh).
"""
import os
import sys

import numpy as np
import torch

try:
    import onnx
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper
except ImportError as missing:
    sys.exit(f"{os.path.basename(sys.argv[0])}: {missing} in {sys.executable}: run it with "
             "the build's build/venv/bin/python (scripts/python-test-env.sh "
             "installs onnxruntime there)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402
from pytorch_chain import _Named, item  # noqa: E402

# PyTorch's gate blocks in ONNX's order.
GATE_ORDER = {4: [0, 3, 1, 2], 3: [1, 0, 2]}


def reorder(weight, gates):
    blocks = np.split(weight, gates, axis=0)
    return np.concatenate([blocks[g] for g in GATE_ORDER[gates]], axis=0)


def build_graph(state):
    """The ONNX model of the whole recurrence, from PyTorch's state_dict."""
    w_ih = state["cell.weight_ih"].numpy()
    w_hh = state["cell.weight_hh"].numpy()
    hidden = w_hh.shape[1]
    gates = w_ih.shape[0] // hidden
    if gates not in GATE_ORDER:
        sys.exit(f"a cell with {gates} gates is neither an LSTM nor a GRU")
    bias = np.concatenate([reorder(state["cell.bias_ih"].numpy(), gates),
                           reorder(state["cell.bias_hh"].numpy(), gates)])
    initializers = [
        numpy_helper.from_array(reorder(w_ih, gates)[None], "W"),
        numpy_helper.from_array(reorder(w_hh, gates)[None], "R"),
        numpy_helper.from_array(bias[None].astype(np.float32), "B"),
    ]
    nodes, inputs = [], []
    lengths = helper.make_tensor_value_info("sequence_lens", TensorProto.INT32, ["batch"])
    if "embedding.weight" in state:
        initializers.append(numpy_helper.from_array(state["embedding.weight"].numpy(),
                                                    "embedding"))
        inputs.append(helper.make_tensor_value_info("tokens", TensorProto.INT64,
                                                    ["steps", "batch"]))
        nodes.append(helper.make_node("Gather", ["embedding", "tokens"], ["X"]))
    else:
        inputs.append(helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                                    ["steps", "batch", w_ih.shape[1]]))
    outputs = ["Y", "Y_h"] + (["Y_c"] if gates == 4 else [])
    attributes = {"hidden_size": hidden}
    if gates == 3:
        attributes["linear_before_reset"] = 1
    nodes.append(helper.make_node("LSTM" if gates == 4 else "GRU",
                                  ["X", "W", "R", "B", "sequence_lens"], outputs,
                                  **attributes))
    graph = helper.make_graph(
        nodes, "chain", inputs + [lengths],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                       ["steps", 1, "batch", hidden] if name == "Y"
                                       else [1, "batch", hidden])
         for name in outputs],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    return model, gates


def make_session(model, threads):
    """An InferenceSession of `model` (an onnx ModelProto) on the CPU with
    `threads` intra-op threads (0: ONNX Runtime's default)."""
    options = onnxruntime.SessionOptions()
    if threads > 0:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    SESSION["threads"] = threads
    return onnxruntime.InferenceSession(model.SerializeToString(), options,
                                        providers=["CPUExecutionProvider"])


def load(weights, threads):
    state = torch.load(peer_common.single_weight_file(weights))
    model, gates = build_graph(state)
    return {"session": make_session(model, threads),
            "tokens": "embedding.weight" in state, "gates": gates}


def run(model, batch):
    lengths = np.array([r["length"] for r in batch], dtype=np.int32)
    steps = int(lengths.max())
    first = batch[0]["data"]
    padded = np.zeros((steps, len(batch)) + tuple(first.shape[1:]),
                      dtype=np.int64 if model["tokens"] else np.float32)
    for b, r in enumerate(batch):
        padded[:r["length"], b] = r["data"].numpy()
    feeds = {"tokens" if model["tokens"] else "X": padded, "sequence_lens": lengths}
    outputs = model["session"].run(None, feeds)
    y, y_h = outputs[0], outputs[1]  # [steps, 1, batch, hidden], [1, batch, hidden]
    results = []
    for b, r in enumerate(batch):
        named = {"steps": torch.from_numpy(y[:r["length"], 0, b]),
                 "h": torch.from_numpy(y_h[0, b])}
        if model["gates"] == 4:
            named["c"] = torch.from_numpy(outputs[2][0, b])
        results.append(_Named(named))
    return results


SESSION = {"threads": 0}  # what load() made, for identify()


def identify():
    return {"peer": "onnxruntime", "onnxruntime": onnxruntime.__version__,
            "providers": ["CPUExecutionProvider"],
            "threads": SESSION["threads"] or "onnxruntime's default"}


def describe(model):
    return "ONNX " + ("LSTM" if model["gates"] == 4 else "GRU") + " with sequence_lens"


if __name__ == "__main__":
    if "--device" in sys.argv and sys.argv[sys.argv.index("--device") + 1] != "cpu":
        sys.exit("onnxruntime_chain.py: the ONNX Runtime peer runs on the CPU only")
    peer_common.main(__doc__.splitlines()[0], load, item, run,
                     lambda name, have, want: peer_common.float_error(have, want),
                     describe, identify)
