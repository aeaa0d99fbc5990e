#!/usr/bin/env python3
"""Runs one case of the coverage corpus (cells.py) end to end, at each of its opsets:

  export the PyTorch module with torch.onnx.export, write its manifest, compile it with
  cellc, serve random requests with `cellrun run --device cpu`, and compare every output
  of every step with the module stepped by PyTorch (float: within 1e-5 relative plus
  1e-6 absolute; integers: equal); chains also serve their longest and shortest
  request alone, which must give the same bits as in the batch.

A case marked `refused` must instead make cellc fail with a message matching its
pattern (one that names the ONNX node and op type). Exits non-zero on the first
difference, printing it. Needs torch and onnx (Debian's /usr/bin/python3).

The first opset run compiles the CUDA kernels for cellc's every default target (CUBIN
for sm_80 and sm_90, and PTX); the others, whose kernels differ at most by the ONNX
form they came from, for PTX alone (--arch=compute_80): the cases serve on the CPU,
and making CUBIN takes four fifths of cellc's time.
"""

import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cells  # noqa: E402

RTOL, ATOL = 1e-5, 1e-6
BATCH_SIZES = [1, 2, 4, 8]
REQUESTS, MAX_STEPS = 9, 7


def fail(message):
    sys.exit("FAIL: " + message)


def example_input(width, extra, dtype):
    """A batch of 2 for export: a width of None is one number per row (a [batch]
    input), a tuple a matrix per row; "vocab" marks token ids."""
    shape = (2,) if width is None else (2,) + (width if isinstance(width, tuple)
                                               else (width,))
    if "vocab" in extra:
        return torch.randint(0, extra["vocab"], shape)
    return torch.randn(*shape, dtype=dtype)


def export(module, path, opset, inputs, outputs, dtype):
    ins = [example_input(width, extra, dtype) for _, _, width, extra in inputs]
    names_in = [n for n, *_ in inputs]
    names_out = [n for n, *_ in outputs]
    dynamic = {n: {0: "batch"} for n in names_in + names_out}
    with torch.no_grad():
        torch.onnx.export(module, tuple(ins), path, opset_version=opset,
                          input_names=names_in, output_names=names_out,
                          dynamic_axes=dynamic, do_constant_folding=True,
                          training=torch.onnx.TrainingMode.EVAL)


def cell_lines(name, onnx_name, inputs, outputs, priority=0):
    """A cell of the manifest: roles and their extra keys (updates, emit, child,
    from) as YAML flow mappings."""
    def roles(entries):
        out = []
        for entry_name, role, _, extra in entries:
            keys = ["role: %s" % role] + [
                "%s: %s" % (k, str(v).lower() if isinstance(v, bool) else v)
                for k, v in extra.items() if k not in ("binary", "vocab")]
            out.append("      %s: {%s}" % (entry_name, ", ".join(keys)))
        return out
    return (["  - name: %s" % name, "    onnx: %s" % onnx_name,
             "    batch_sizes: %s" % BATCH_SIZES, "    priority: %d" % priority,
             "    inputs:"] + roles(inputs) + ["    outputs:"] + roles(outputs))


def write_manifest(case, path, onnx_name):
    lines = (["name: %s" % case.name, "structure: %s" % case.structure, "cells:"] +
             cell_lines(case.name, onnx_name, case.inputs, case.outputs))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def make_requests(case, generator):
    requests = []
    for r in range(REQUESTS):
        steps = int(torch.randint(1, MAX_STEPS + 1, (1,), generator=generator))
        shape = lambda w: (steps,) if w is None else (steps, w)
        data = {n: (torch.randint(0, 2, shape(w), generator=generator).float()
                    if extra.get("binary") else
                    torch.randn(*shape(w), generator=generator)).to(case.dtype)
                for n, role, w, extra in case.inputs if role == "input"}
        requests.append(("r%d" % r, steps, data))
    return requests


def reference(case, module, steps, data):
    """The module stepped by PyTorch: {output name: [steps, ...]} for every output the
    runtime returns (emitted per step, final_<name> for state outputs)."""
    states = {n: torch.zeros(1, *(w if isinstance(w, tuple) else (w,)),
                             dtype=case.dtype)
              for n, role, w, _ in case.inputs if role == "state"}
    per_step = {n: [] for n, role, _, extra in case.outputs
                if role == "output" or extra.get("emit")}
    final = {}
    with torch.no_grad():
        for t in range(steps):
            args = [data[n][t:t + 1] if role == "input" else states[n]
                    for n, role, _, _ in case.inputs]
            outs = module(*args)
            outs = outs if isinstance(outs, (tuple, list)) else (outs,)
            for (n, role, _, extra), value in zip(case.outputs, outs):
                if n in per_step:
                    per_step[n].append(value[0])
                if role == "state":
                    states[extra["updates"]] = value
                    final["final_" + n] = value[0]
    result = {n: torch.stack(v).numpy() for n, v in per_step.items()}
    result.update({n: v.numpy() for n, v in final.items()})
    return result


def compare(label, expected, got, reference="PyTorch", atol=ATOL):
    for name, want in expected.items():
        if name not in got:
            fail("%s: output %s missing (got %s)" % (label, name, sorted(got)))
        shape, values = got[name]["shape"], np.asarray(got[name]["data"])
        if list(want.shape) != list(shape):
            fail("%s: %s has shape %s, %s %s" % (label, name, shape, reference,
                                                 list(want.shape)))
        values = values.reshape(want.shape)
        if want.dtype.kind in "iu":
            if not np.array_equal(values, want):
                fail("%s: %s differs: %s vs %s %s" % (label, name, values, reference, want))
            continue
        error = np.abs(values - want.astype(np.float64))
        bound = RTOL * np.abs(want) + atol
        if not np.all(error <= bound):
            at = np.unravel_index(np.argmax(error - bound), want.shape)
            fail("%s: %s[%s] = %r, %s %r" % (label, name, ",".join(map(str, at)),
                                              float(values[at]), reference,
                                              float(want[at])))
    return float(np.max([np.max(np.abs(np.asarray(got[n]["data"]).reshape(w.shape) - w) /
                                (RTOL * np.abs(w) + atol)) for n, w in expected.items()]))


def compile_manifest(args, work, lines, label):
    """Writes the manifest `lines` to <work>/model.yaml and compiles it with cellc;
    returns the artifact's path (a cellc failure fails the case)."""
    manifest = os.path.join(work, "model.yaml")
    with open(manifest, "w") as f:
        f.write("\n".join(lines) + "\n")
    artifact = os.path.join(work, "model.cellpack")
    compiled = subprocess.run([args.cellc, manifest, "-o", artifact, "--quiet",
                               *args.cellc_targets], capture_output=True, text=True)
    if compiled.returncode != 0:
        fail("%s: cellc failed:\n%s" % (label, compiled.stderr))
    return artifact


def random_tree(generator, arity, max_leaves):
    """Nodes in creation order (children before parents): arity-many random
    subtrees are joined until one is left. Returns [children lists], root."""
    count = arity + int(torch.randint(0, max_leaves - arity + 1, (1,),
                                      generator=generator))
    count -= (count - 1) % (arity - 1) if arity > 1 else 0
    nodes = [[] for _ in range(count)]
    pending = list(range(count))
    while len(pending) > 1:
        picks = []
        for _ in range(arity):
            picks.append(pending.pop(int(torch.randint(0, len(pending), (1,),
                                                       generator=generator))))
        nodes.append(picks)
        pending.append(len(nodes) - 1)
    return nodes, pending[0]


def run_tree_opset(case, opset, args, work, label):
    """A tree case: the leaf and internal cells exported, random trees served,
    the root's h and c compared with the modules evaluated bottom-up."""
    torch.manual_seed(0)
    leaf = case.make().to(case.dtype).eval()
    internal = case.tree["make"]().to(case.dtype).eval()
    export(leaf, os.path.join(work, "leaf.onnx"), opset, case.inputs, case.outputs,
           case.dtype)
    export(internal, os.path.join(work, "internal.onnx"), opset, case.tree["inputs"],
           case.tree["outputs"], case.dtype)
    lines = (["name: %s" % case.name, "structure: tree", "cells:"] +
             cell_lines("leaf", "leaf.onnx", case.inputs, case.outputs, 0) +
             cell_lines("internal", "internal.onnx", case.tree["inputs"],
                        case.tree["outputs"], 1) +
             ["tree:", "  leaf: leaf", "  internal: internal",
              "  arity: %d" % case.tree["arity"]])
    artifact = compile_manifest(args, work, lines, label)
    generator = torch.Generator().manual_seed(opset)
    internal_inputs = [(n, w) for n, role, w, _ in case.tree["inputs"] if role == "input"]
    leaf_inputs = [(n, w) for n, role, w, _ in case.inputs if role == "input"]
    requests = []
    for r in range(REQUESTS):
        nodes, root = random_tree(generator, case.tree["arity"], 7)
        data = [{n: torch.randn(1, w, generator=generator).to(case.dtype)
                 for n, w in (internal_inputs if children else leaf_inputs)}
                for children in nodes]
        requests.append(("t%d" % r, nodes, root, data))
    lines = []
    for rid, nodes, root, data in requests:
        body = []
        for children, values in zip(nodes, data):
            node = {n: [float(v) for v in values[n][0]] for n in values}
            if children:
                node["children"] = children
            body.append(node)
        lines.append(json.dumps({"id": rid, "nodes": body, "root": root}) + "\n")
    results = serve_lines(args, artifact, work, "requests", lines, label)
    worst = 0.0
    with torch.no_grad():
        for rid, nodes, root, data in requests:
            states = []
            for children, values in zip(nodes, data):
                if not children:
                    states.append(leaf(*[values[n] for n, _ in leaf_inputs]))
                    continue
                args_in = [values[n] for n, _ in internal_inputs]
                for child in children:
                    args_in += list(states[child])
                states.append(internal(*args_in))
            expected = {"h": states[root][0][0].numpy(), "c": states[root][1][0].numpy()}
            result = results.get(rid)
            if result is None or "error" in result:
                fail("%s: request %s: %s" % (label, rid, result))
            worst = max(worst, compare("%s request %s" % (label, rid), expected,
                                       result["outputs"]))
    print("%s: %d trees equal PyTorch (worst %.2f of the tolerance)"
          % (label, len(requests), worst))


def greedy_decode(case, encoder, decoder, source):
    """PyTorch's greedy decoding of one source: each memory holds the encoder output
    it is filled from after each source step (zeros past the source, mask 0 there),
    then the decoder runs from BOS to EOS or the decode limit, its states starting
    from the encoder's (initial_state). Returns (tokens, stop)."""
    spec = case.seq2seq
    positions = spec["longest_source"]
    width = lambda w: (1,) + (w if isinstance(w, tuple) else (w,))
    states = {n: torch.zeros(*width(w)) for n, role, w, _ in case.inputs
              if role == "state"}
    memories = {n: torch.zeros(*width(w)) for n, role, w, _ in spec["inputs"]
                if role == "memory"}
    sources = {n: extra["from"] for n, role, _, extra in spec["inputs"]
               if role == "memory"}
    mask = torch.zeros(1, positions)

    def step(module, inputs, outputs, token, states, memories):
        args = [token if role == "input" else states[n] if role == "state" else
                memories[n] if role == "memory" else mask
                for n, role, _, _ in inputs]
        outs = module(*args)
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        values = dict(zip([n for n, *_ in outputs], outs))
        for n, role, _, extra in outputs:
            if role == "state":
                states[extra["updates"]] = values[n]
        return values

    with torch.no_grad():
        for t, token in enumerate(source):
            values = step(encoder, case.inputs, case.outputs, torch.tensor([token]),
                          states, {})
            for n, source_output in sources.items():
                memories[n][0, t] = values[source_output][0]
            mask[0, t] = 1.0
        decoder_states = {to: states[source_state]
                          for to, source_state in spec["initial_state"].items()}
        token, tokens = torch.tensor([spec["bos"]]), []
        while len(tokens) < spec["max_decode"]:
            values = step(decoder, spec["inputs"], spec["outputs"], token,
                          decoder_states, memories)
            token = values["next_token"]
            tokens.append(int(token[0]))
            if tokens[-1] == spec["eos"]:
                return tokens, "eos"
    return tokens, "limit"


def run_seq2seq_opset(case, opset, args, work, label):
    """A seq2seq case: encoder and decoder exported, random sources of every
    length up to the memory's positions decoded by cellrun and by PyTorch."""
    spec = case.seq2seq
    torch.manual_seed(0)
    encoder = case.make().eval()
    decoder = spec["make"]().eval()
    export(encoder, os.path.join(work, "encoder.onnx"), opset, case.inputs,
           case.outputs, case.dtype)
    export(decoder, os.path.join(work, "decoder.onnx"), opset, spec["inputs"],
           spec["outputs"], case.dtype)
    lines = (["name: %s" % case.name, "structure: seq2seq", "cells:"] +
             cell_lines("encoder", "encoder.onnx", case.inputs, case.outputs, 0) +
             cell_lines("decoder", "decoder.onnx", spec["inputs"], spec["outputs"], 1) +
             ["seq2seq:", "  encoder: encoder", "  decoder: decoder",
              "  initial_state: {%s}" % ", ".join(
                  "%s: %s" % kv for kv in spec["initial_state"].items()),
              "  token_input: token", "  token_output: next_token",
              "  bos_token: %d" % spec["bos"], "  eos_token: %d" % spec["eos"],
              "  max_decode_length: %d" % spec["max_decode"]])
    artifact = compile_manifest(args, work, lines, label)
    generator = torch.Generator().manual_seed(opset)
    vocab = [extra["vocab"] for _, _, _, extra in case.inputs if "vocab" in extra][0]
    sources = []
    for r in range(3 * REQUESTS):
        length = 1 + r % spec["longest_source"]
        sources.append([int(t) for t in torch.randint(3, vocab, (length,),
                                                      generator=generator)])
    results = serve_lines(args, artifact, work, "requests",
                          [json.dumps({"id": "s%d" % r, "tokens": source}) + "\n"
                           for r, source in enumerate(sources)], label)
    stops = {"eos": 0, "limit": 0}
    for r, source in enumerate(sources):
        rid = "s%d" % r
        want, stop = greedy_decode(case, encoder, decoder, source)
        result = results.get(rid)
        if result is None or "error" in result:
            fail("%s: request %s: %s" % (label, rid, result))
        got = [int(t) for t in result["outputs"]["tokens"]["data"]]
        if got != want or result.get("stop") != stop:
            fail("%s: request %s (source %s): cellrun decoded %s (%s), PyTorch %s (%s)"
                 % (label, rid, source, got, result.get("stop"), want, stop))
        stops[stop] += 1
    if stops["eos"] == 0:
        fail("%s: no source decoded to EOS; the case would not test stopping" % label)
    print("%s: %d sources decode to PyTorch's tokens (%d to EOS, %d to the limit)"
          % (label, len(sources), stops["eos"], stops["limit"]))


def run_opset(case, opset, args):
    work = os.path.join(args.work, "%s-opset%d" % (case.name, opset))
    os.makedirs(work, exist_ok=True)
    if case.structure == "seq2seq":
        return run_seq2seq_opset(case, opset, args, work,
                                 "%s opset %d" % (case.name, opset))
    if case.structure == "tree":
        return run_tree_opset(case, opset, args, work,
                              "%s opset %d" % (case.name, opset))
    torch.manual_seed(0)
    module = case.make().to(case.dtype).eval()
    onnx_path = os.path.join(work, "cell.onnx")
    export(module, onnx_path, opset, case.inputs, case.outputs, case.dtype)
    manifest = os.path.join(work, "model.yaml")
    write_manifest(case, manifest, "cell.onnx")
    artifact = os.path.join(work, "model.cellpack")
    compiled = subprocess.run([args.cellc, manifest, "-o", artifact, "--quiet",
                               *args.cellc_targets], capture_output=True, text=True)
    label = "%s opset %d" % (case.name, opset)
    if case.refused:
        if compiled.returncode == 0:
            fail("%s: cellc accepted a case marked refused (%s)" % (label, case.refused))
        if not re.search(case.refused, compiled.stderr):
            fail("%s: cellc's error does not match %r:\n%s" % (label, case.refused,
                                                                compiled.stderr))
        print("%s: refused as expected: %s" % (label, compiled.stderr.strip().splitlines()[0]))
        return
    if compiled.returncode != 0:
        fail("%s: cellc failed:\n%s" % (label, compiled.stderr))
    generator = torch.Generator().manual_seed(opset)
    requests = make_requests(case, generator)
    lines = {}
    for rid, steps, data in requests:
        body = [{n: (float(data[n][t]) if data[n].dim() == 1 else
                     [float(v) for v in data[n][t]]) for n in data}
                for t in range(steps)]
        lines[rid] = json.dumps({"id": rid, "steps": body}) + "\n"
    results = serve_lines(args, artifact, work, "requests", list(lines.values()), label)
    worst = 0.0
    for rid, steps, data in requests:
        result = results.get(rid)
        if result is None or "error" in result:
            fail("%s: request %s: %s" % (label, rid, result))
        worst = max(worst, compare("%s request %s" % (label, rid),
                                   reference(case, module, steps, data), result["outputs"],
                                   atol=case.atol or ATOL))
    # Batch invariance: the longest and the shortest request served alone give
    # the same bits as in the batch of all of them.
    by_length = sorted(requests, key=lambda r: r[1])
    for rid, steps, _ in {r[0]: r for r in (by_length[0], by_length[-1])}.values():
        alone = serve_lines(args, artifact, work, "alone-" + rid, [lines[rid]], label)
        if alone[rid]["outputs"] != results[rid]["outputs"]:
            fail("%s: request %s (%d steps) alone differs from it batched"
                 % (label, rid, steps))
    print("%s: %d requests equal PyTorch (worst %.2f of the tolerance), the same "
          "bits alone" % (label, len(requests), worst))


def serve_lines(args, artifact, work, name, lines, label):
    """Serves request `lines` with `cellrun run` on the CPU; {id: result}."""
    request_path = os.path.join(work, name + ".jsonl")
    with open(request_path, "w") as f:
        f.writelines(lines)
    result_path = os.path.join(work, name + "-results.jsonl")
    served = subprocess.run([args.cellrun, "run", artifact, "--input", request_path,
                             "--output", result_path, "--device", "cpu", "--quiet"],
                            capture_output=True, text=True)
    if served.returncode != 0:
        fail("%s: cellrun run failed:\n%s%s" % (label, served.stdout, served.stderr))
    with open(result_path) as f:
        return {r["id"]: r for r in map(json.loads, f)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", nargs="?", choices=sorted(cells.BY_NAME))
    parser.add_argument("--list", action="store_true",
                        help="print the case names, one a line, and exit")
    parser.add_argument("--cellc")
    parser.add_argument("--cellrun")
    parser.add_argument("--work", help="directory for the files of the run")
    parser.add_argument("--opsets", type=lambda s: [int(v) for v in s.split(",")],
                        help="opsets to run (default: the case's own)")
    args = parser.parse_args()
    if args.list:
        print("\n".join(case.name for case in cells.CASES))
        return
    if not (args.case and args.cellc and args.cellrun and args.work):
        parser.error("a case, --cellc, --cellrun and --work are required")
    case = cells.BY_NAME[args.case]
    torch.set_num_threads(1)
    for index, opset in enumerate(args.opsets or case.opsets):
        # Every target at the first opset, PTX alone at the others.
        args.cellc_targets = [] if index == 0 else ["--arch=compute_80"]
        run_opset(case, opset, args)


if __name__ == "__main__":
    main()
