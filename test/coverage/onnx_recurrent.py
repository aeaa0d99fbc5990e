#!/usr/bin/env python3
"""The ONNX LSTM, GRU and RNN ops in the forms PyTorch never exports, end to end.

PyTorch's nn.LSTM/nn.GRU/nn.RNN export one form of each op (forward or bidirectional,
layout 0, biases and initial states given, GRU with linear_before_reset=1); the
coverage corpus (cells.py) tests those against PyTorch. This script builds the other
forms with onnx.helper (reverse direction, layout 1, no biases, no initial state, GRU
with linear_before_reset=0, Relu activations), compiles each with cellc, serves random
requests with `cellrun run --device cpu` and compares every step with a NumPy
implementation of the op as the ONNX specification defines it (within 1e-5 relative
plus 1e-6 absolute). The first form of each op compiles its CUDA kernels for cellc's
every default target, the others for PTX alone (they serve on the CPU; CUBIN takes
most of cellc's time).
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_case  # noqa: E402  (compare, fail)

X, H = 5, 6
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
ACT = {"Sigmoid": lambda v: 1 / (1 + np.exp(-v)), "Tanh": np.tanh,
       "Relu": lambda v: np.maximum(v, 0)}


class Form:
    def __init__(self, name, op, direction="forward", layout=0, bias=True, state=True,
                 lbr=None, activations=None, opset=14):
        self.name, self.op, self.direction, self.layout = name, op, direction, layout
        self.bias, self.state, self.lbr = bias, state, lbr
        self.activations, self.opset = activations, opset
        self.dirs = 2 if direction == "bidirectional" else 1


FORMS = [
    Form("lstm_reverse", "LSTM", direction="reverse"),
    Form("lstm_bidirectional_layout1", "LSTM", direction="bidirectional", layout=1),
    Form("lstm_no_bias_opset9", "LSTM", bias=False, opset=9),
    Form("lstm_no_initial_state", "LSTM", state=False),
    Form("lstm_relu", "LSTM", activations=["Sigmoid", "Relu", "Relu"]),
    Form("gru_linear_before_reset0", "GRU", lbr=0),
    Form("gru_linear_before_reset1_reverse", "GRU", lbr=1, direction="reverse"),
    Form("gru_bidirectional_lbr0_layout1", "GRU", lbr=0, direction="bidirectional",
         layout=1),
    Form("gru_lbr0_no_initial_state", "GRU", lbr=0, state=False),
    Form("gru_lbr1_no_initial_state", "GRU", lbr=1, state=False),
    Form("gru_no_bias", "GRU", bias=False, lbr=0),
    Form("rnn_tanh", "RNN"),
    Form("rnn_relu_bidirectional", "RNN", direction="bidirectional",
         activations=["Relu", "Relu"]),
    Form("rnn_no_bias_layout1", "RNN", bias=False, layout=1),
]


def weights(form, rng):
    g = GATES[form.op]
    w = rng.standard_normal((form.dirs, g * H, X)).astype(np.float32) * 0.5
    r = rng.standard_normal((form.dirs, g * H, H)).astype(np.float32) * 0.5
    b = rng.standard_normal((form.dirs, 2 * g * H)).astype(np.float32) * 0.5
    return w, r, b


def build(form, w, r, b):
    """x [batch, X] and h/c [batch, dirs*H] in; y [batch, dirs*H] and new states out."""
    states = ["h", "c"] if form.op == "LSTM" and form.state else (["h"] if form.state else [])
    width = form.dirs * H
    const = lambda name, values: numpy_helper.from_array(np.array(values, np.int64), name)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"),
             const("state_shape", [0, form.dirs, H]), const("flat", [0, -1])]
    if form.bias:
        inits.append(numpy_helper.from_array(b, "B"))
    nodes = []
    axis = 1 if form.layout else 0
    if form.opset >= 13:
        inits.append(const("seq_axis", [axis]))
        nodes.append(helper.make_node("Unsqueeze", ["x", "seq_axis"], ["X"]))
    else:
        nodes.append(helper.make_node("Unsqueeze", ["x"], ["X"], axes=[axis]))
    initial = []
    for s in states:
        nodes.append(helper.make_node("Reshape", [s, "state_shape"], [s + "3"]))
        if form.layout:
            initial.append(s + "3")
        else:
            nodes.append(helper.make_node("Transpose", [s + "3"], [s + "0"], perm=[1, 0, 2]))
            initial.append(s + "0")
    inputs = ["X", "W", "R", "B" if form.bias else "", ""] + initial
    outputs = ["Y", "Y_h"] + (["Y_c"] if form.op == "LSTM" else [])
    attrs = {"hidden_size": H, "direction": form.direction}
    if form.opset >= 14:
        attrs["layout"] = form.layout
    if form.lbr is not None:
        attrs["linear_before_reset"] = form.lbr
    if form.activations:
        attrs["activations"] = form.activations
    nodes.append(helper.make_node(form.op, inputs, outputs, name="recurrent", **attrs))
    # Y is [1, dirs, batch, H] (layout 0) or [batch, 1, dirs, H]; states
    # [dirs, batch, H] or [batch, dirs, H]: all become [batch, dirs * H].
    nodes.append(helper.make_node("Transpose", ["Y"], ["Yb"],
                                  perm=[0, 1, 2, 3] if form.layout else [2, 0, 1, 3]))
    nodes.append(helper.make_node("Reshape", ["Yb", "flat"], ["y"]))
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])]
    for s, onnx_out in zip(states, ["Y_h", "Y_c"]):
        source = onnx_out
        if not form.layout:
            nodes.append(helper.make_node("Transpose", [onnx_out], [s + "b"], perm=[1, 0, 2]))
            source = s + "b"
        nodes.append(helper.make_node("Reshape", [source, "flat"], [s + "_next"]))
        outs.append(helper.make_tensor_value_info(s + "_next", TensorProto.FLOAT,
                                                  ["batch", width]))
    if not states:
        # Without an initial state the op is a function of x alone; the cell keeps
        # the running sum of y as its state (the runtime serves recurrent cells).
        states = ["acc"]
        nodes.append(helper.make_node("Add", ["acc", "y"], ["acc_next"]))
        outs.append(helper.make_tensor_value_info("acc_next", TensorProto.FLOAT,
                                                  ["batch", width]))
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", X])]
    ins += [helper.make_tensor_value_info(s, TensorProto.FLOAT, ["batch", width])
            for s in states]
    graph = helper.make_graph(nodes, form.name, ins, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", form.opset)])
    onnx.checker.check_model(model)
    return model, states


def step(form, w, r, b, x, states):
    """One step by the ONNX specification: x [X], states {name: [dirs*H]}."""
    g = GATES[form.op]
    default = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"],
               "RNN": ["Tanh"]}[form.op]
    acts = form.activations or default
    hs, cs = [], []
    for d in range(form.dirs):
        f = [ACT[a] for a in acts[d * len(default):(d + 1) * len(default)] or acts]
        h = states["h"][d * H:(d + 1) * H] if "h" in states else np.zeros(H)
        c = states["c"][d * H:(d + 1) * H] if "c" in states else np.zeros(H)
        wb, rb = (b[d, :g * H], b[d, g * H:]) if form.bias else (0.0, 0.0)
        wb, rb = np.broadcast_to(wb, g * H), np.broadcast_to(rb, g * H)
        xw = w[d].astype(np.float64) @ x + wb
        rd = r[d].astype(np.float64)
        if form.op == "LSTM":
            gates = xw + rd @ h + rb
            i, o, fg, cc = np.split(gates, 4)
            c2 = f[0](fg) * c + f[0](i) * f[1](cc)
            hs.append(f[0](o) * f[2](c2))
            cs.append(c2)
        elif form.op == "GRU":
            z = f[0](xw[:H] + rd[:H] @ h + rb[:H])
            rr = f[0](xw[H:2 * H] + rd[H:2 * H] @ h + rb[H:2 * H])
            if form.lbr:
                n = f[1](xw[2 * H:] + rr * (rd[2 * H:] @ h + rb[2 * H:]))
            else:
                n = f[1](xw[2 * H:] + rd[2 * H:] @ (rr * h) + rb[2 * H:])
            hs.append((1 - z) * n + z * h)
        else:
            hs.append(f[0](xw + rd @ h + rb))
    new = {"h": np.concatenate(hs)}
    if cs:
        new["c"] = np.concatenate(cs)
    return new


def run_form(form, args, rng, targets):
    work = os.path.join(args.work, form.name)
    os.makedirs(work, exist_ok=True)
    w, r, b = weights(form, rng)
    model, states = build(form, w, r, b)
    onnx.save(model, os.path.join(work, "cell.onnx"))
    roles = [("x", "input", {})] + [(s, "state", {}) for s in states]
    outs = [("y", "output", {})] + [(s + "_next", "state", {"updates": s}) for s in states]
    case = type("Case", (), {"name": form.name, "structure": "chain",
                             "inputs": [(n, ro, 0, e) for n, ro, e in roles],
                             "outputs": [(n, ro, 0, e) for n, ro, e in outs]})
    manifest = os.path.join(work, "model.yaml")
    run_case.write_manifest(case, manifest, "cell.onnx")
    artifact = os.path.join(work, "model.cellpack")
    compiled = subprocess.run([args.cellc, manifest, "-o", artifact, "--quiet", *targets],
                              capture_output=True, text=True)
    if compiled.returncode != 0:
        run_case.fail("%s: cellc failed:\n%s" % (form.name, compiled.stderr))
    requests = []
    for k in range(6):
        steps = int(rng.integers(1, 6))
        requests.append(("r%d" % k, rng.standard_normal((steps, X)).astype(np.float32)))
    with open(os.path.join(work, "requests.jsonl"), "w") as f:
        for rid, xs in requests:
            f.write(json.dumps({"id": rid, "steps": [{"x": [float(v) for v in row]}
                                                     for row in xs]}) + "\n")
    served = subprocess.run([args.cellrun, "run", artifact, "--input",
                             os.path.join(work, "requests.jsonl"), "--output",
                             os.path.join(work, "results.jsonl"), "--device", "cpu",
                             "--quiet"], capture_output=True, text=True)
    if served.returncode != 0:
        run_case.fail("%s: cellrun run failed:\n%s%s" % (form.name, served.stdout,
                                                         served.stderr))
    with open(os.path.join(work, "results.jsonl")) as f:
        results = {res["id"]: res for res in map(json.loads, f)}
    worst = 0.0
    for rid, xs in requests:
        state = {s: np.zeros(form.dirs * H) for s in states}
        ys = []
        for row in xs:
            new = step(form, w, r, b, row.astype(np.float64), state)
            ys.append(new["h"])
            if states == ["acc"]:
                new["acc"] = state["acc"] + new["h"].astype(np.float32)
            state = {s: new[s] for s in states}
        expected = {"y": np.stack(ys).astype(np.float32)}
        expected.update({"final_%s_next" % s: state[s].astype(np.float32) for s in states})
        result = results.get(rid)
        if result is None or "error" in result:
            run_case.fail("%s: request %s: %s" % (form.name, rid, result))
        worst = max(worst, run_case.compare("%s request %s" % (form.name, rid), expected,
                                            result["outputs"], "the ONNX definition"))
    print("%s (opset %d): %d requests equal the ONNX definition (worst %.2f of the "
          "tolerance)" % (form.name, form.opset, len(requests), worst))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cellc", required=True)
    parser.add_argument("--cellrun", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    ops = set()
    for form in FORMS:
        run_form(form, args, rng, [] if form.op not in ops else ["--arch=compute_80"])
        ops.add(form.op)


if __name__ == "__main__":
    main()
