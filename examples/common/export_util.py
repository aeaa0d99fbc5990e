"""Shared helpers for the example model generators (examples/<model>/generate.py).

Each generator builds one or more PyTorch modules (one per cell type), exports each
to ``<out>/<cell>.onnx`` with :func:`export_cell`, and re-loads every exported file with
:func:`check_exported` (onnx.checker, op-type whitelist, input/output summary).

Requires Debian's ``/usr/bin/python3`` (torch 1.13, onnx 1.12, numpy); see
docs in examples/README.md.
"""

import argparse
import os
import sys

OPSET = 14

# Op types the cellc ONNX importer is expected to handle.  An exported graph that uses
# anything else (Shape, ConstantOfShape, Expand, ...) is rejected unless --no-op-check.
ALLOWED_OPS = frozenset([
    "MatMul", "Gemm", "Add", "Sub", "Mul", "Div", "Sigmoid", "Tanh", "Relu", "Concat",
    "Split", "Slice", "Gather", "ArgMax", "Squeeze", "Unsqueeze", "Reshape", "Transpose",
    "Identity", "Cast", "Constant",
])

# Size used for the batch dimension of the example inputs during tracing.  Not 1, so
# that nothing batch-1-specific can be baked into the trace; the exported batch axis is
# dynamic anyway.
TRACE_BATCH = 2


def parse_args(description, sizes):
    """Common command line: --size small|paper --out DIR [--seed N]."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--size", choices=sorted(sizes), default="small",
                   help="model size: " + "; ".join(
                       "%s = %s" % (k, ", ".join("%s %s" % kv for kv in sorted(v.items())))
                       for k, v in sorted(sizes.items())) + " (default: small)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="directory to write <cell>.onnx files into (created if missing)")
    p.add_argument("--seed", type=int, default=0,
                   help="torch.manual_seed applied before the modules are built (default: 0)")
    p.add_argument("--no-op-check", action="store_true",
                   help="do not fail when an exported graph uses an op outside the "
                        "supported set (it is still reported)")
    p.add_argument("--verify", action="store_true",
                   help="also run each exported graph with a small numpy interpreter and "
                        "compare against the PyTorch module at batch sizes 1 and 3")
    return p.parse_args()


def setup(args):
    """Seeds torch, creates the output directory, returns the torch module."""
    try:
        import torch
        import onnx  # noqa: F401
    except ImportError as e:
        sys.exit("error: %s (run the generators with an interpreter that has torch and "
                 "onnx, e.g. Debian's /usr/bin/python3)" % e)
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    return torch


def export_cell(module, example_inputs, path, input_names, output_names):
    """Exports ``module`` (put in eval mode) to ONNX at ``path``.

    Dim 0 of every input and output becomes the dynamic axis "batch".
    """
    import torch
    module.eval()
    dyn = {n: {0: "batch"} for n in list(input_names) + list(output_names)}
    with torch.no_grad():
        torch.onnx.export(
            module, tuple(example_inputs), path,
            export_params=True,
            opset_version=OPSET,
            do_constant_folding=True,
            training=torch.onnx.TrainingMode.EVAL,
            input_names=list(input_names),
            output_names=list(output_names),
            dynamic_axes=dyn,
        )


def _elem_name(elem_type):
    import onnx
    return onnx.TensorProto.DataType.Name(elem_type).lower()


def _value_info_str(vi):
    t = vi.type.tensor_type
    dims = []
    for d in t.shape.dim:
        if d.HasField("dim_param"):
            dims.append(d.dim_param)
        elif d.HasField("dim_value"):
            dims.append(str(d.dim_value))
        else:
            dims.append("?")
    return "%s: %s[%s]" % (vi.name, _elem_name(t.elem_type), ", ".join(dims))


def check_exported(path, allow_any_ops=False, verbose=True):
    """Reloads ``path``, runs onnx.checker, prints one summary line (+ details).

    Returns the loaded ModelProto.  Exits with an error if the graph uses ops outside
    ALLOWED_OPS (unless allow_any_ops), or if any input/output lacks the "batch" leading
    dimension.
    """
    import onnx
    model = onnx.load(path)
    onnx.checker.check_model(model)
    g = model.graph
    ops = []
    for n in g.node:
        if n.op_type not in ops:
            ops.append(n.op_type)
    size_kib = os.path.getsize(path) / 1024.0
    print("%s  %.1f KiB  ops: %s" % (path, size_kib, " ".join(sorted(ops))))
    if verbose:
        inits = set(i.name for i in g.initializer)
        for vi in g.input:
            if vi.name not in inits:
                print("    in   " + _value_info_str(vi))
        for vi in g.output:
            print("    out  " + _value_info_str(vi))
    bad = sorted(set(ops) - ALLOWED_OPS)
    if bad:
        msg = "%s: op types outside the supported set: %s" % (path, ", ".join(bad))
        if allow_any_ops:
            print("warning: " + msg, file=sys.stderr)
        else:
            sys.exit("error: " + msg + " (use --no-op-check to ignore)")
    inits = set(i.name for i in g.initializer)
    for vi in list(g.input) + list(g.output):
        if vi.name in inits:
            continue
        dims = vi.type.tensor_type.shape.dim
        if not dims or dims[0].dim_param != "batch":
            sys.exit("error: %s: %s does not have the dynamic leading dimension 'batch'"
                     % (path, _value_info_str(vi)))
    return model


# --------------------------------------------------------------------------------------
# A tiny numpy interpreter for the ALLOWED_OPS subset, used by --verify to check that
# the exported graph computes what the PyTorch module computes (onnxruntime is not
# available for Debian's python).

def _attrs(node):
    import onnx
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def run_numpy(model, feeds):
    """Evaluates ``model`` (ModelProto) on ``feeds`` (name -> ndarray) with numpy."""
    import numpy as np
    from onnx import numpy_helper

    def sigmoid(x):
        return 1.0 / (1.0 + np.exp(-x))

    env = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    env.update(feeds)
    for n in model.graph.node:
        a = _attrs(n)
        x = [env[i] if i else None for i in n.input]
        op = n.op_type
        if op == "Constant":
            r = [numpy_helper.to_array(a["value"])]
        elif op == "Identity":
            r = [x[0]]
        elif op == "Gemm":
            A = x[0].T if a.get("transA", 0) else x[0]
            B = x[1].T if a.get("transB", 0) else x[1]
            y = a.get("alpha", 1.0) * (A @ B)
            if len(x) > 2 and x[2] is not None:
                y = y + a.get("beta", 1.0) * x[2]
            r = [y.astype(x[0].dtype)]
        elif op == "MatMul":
            r = [x[0] @ x[1]]
        elif op in ("Add", "Sub", "Mul", "Div"):
            f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
                 "Div": np.divide}[op]
            r = [f(x[0], x[1]).astype(np.result_type(x[0], x[1]))]
        elif op == "Sigmoid":
            r = [sigmoid(x[0]).astype(x[0].dtype)]
        elif op == "Tanh":
            r = [np.tanh(x[0])]
        elif op == "Relu":
            r = [np.maximum(x[0], 0)]
        elif op == "Concat":
            r = [np.concatenate(x, axis=a["axis"])]
        elif op == "Split":
            axis = a.get("axis", 0)
            sizes = x[1] if len(x) > 1 and x[1] is not None else a.get("split")
            if sizes is None:
                sizes = [x[0].shape[axis] // len(n.output)] * len(n.output)
            idx = np.cumsum(sizes)[:-1]
            r = np.split(x[0], idx, axis=axis)
        elif op == "Slice":
            starts, ends = x[1], x[2]
            axes = x[3] if len(x) > 3 and x[3] is not None else range(len(starts))
            steps = x[4] if len(x) > 4 and x[4] is not None else [1] * len(starts)
            sl = [slice(None)] * x[0].ndim
            for s, e, ax, st in zip(starts, ends, axes, steps):
                sl[int(ax)] = slice(int(s), int(e), int(st))
            r = [x[0][tuple(sl)]]
        elif op == "Gather":
            r = [np.take(x[0], x[1], axis=a.get("axis", 0))]
        elif op == "ArgMax":
            y = np.argmax(x[0], axis=a.get("axis", 0))
            if a.get("keepdims", 1):
                y = np.expand_dims(y, a.get("axis", 0))
            r = [y.astype(np.int64)]
        elif op == "Squeeze":
            axes = x[1] if len(x) > 1 and x[1] is not None else None
            r = [np.squeeze(x[0], axis=None if axes is None else tuple(int(v) for v in axes))]
        elif op == "Unsqueeze":
            y = x[0]
            for ax in sorted(int(v) for v in x[1]):
                y = np.expand_dims(y, ax)
            r = [y]
        elif op == "Reshape":
            shape = [int(v) for v in x[1]]
            shape = [x[0].shape[i] if v == 0 else v for i, v in enumerate(shape)]
            r = [x[0].reshape(shape)]
        elif op == "Transpose":
            r = [np.transpose(x[0], a.get("perm"))]
        elif op == "Cast":
            from onnx import mapping
            r = [x[0].astype(mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]])]
        else:
            raise NotImplementedError("numpy interpreter: op %s" % op)
        for name, val in zip(n.output, r):
            env[name] = np.asarray(val)
    return [env[o.name] for o in model.graph.output]


def verify(model, module, example_inputs, input_names, batch_sizes=(1, 3),
           make_inputs=None, rtol=1e-4, atol=1e-5):
    """Compares the numpy evaluation of ``model`` with ``module`` at a few batch sizes.

    ``make_inputs(b)`` returns a list of torch tensors for batch size b.
    """
    import numpy as np
    import torch
    module.eval()
    for b in batch_sizes:
        ins = make_inputs(b)
        with torch.no_grad():
            ref = module(*ins)
        if not isinstance(ref, (tuple, list)):
            ref = (ref,)
        got = run_numpy(model, {n: t.numpy() for n, t in zip(input_names, ins)})
        for i, (r, g) in enumerate(zip(ref, got)):
            r = r.numpy()
            if r.shape != g.shape or r.dtype != g.dtype:
                sys.exit("verify: output %d shape/dtype %s %s != torch %s %s"
                         % (i, g.shape, g.dtype, r.shape, r.dtype))
            if r.dtype.kind in "iu":
                ok = np.array_equal(r, g)
            else:
                ok = np.allclose(r, g, rtol=rtol, atol=atol)
            if not ok:
                sys.exit("verify: output %d differs at batch %d (max abs diff %g)"
                         % (i, b, float(np.max(np.abs(r.astype(np.float64) - g)))))
    print("    verify: numpy evaluation matches torch at batch sizes %s"
          % ", ".join(str(b) for b in batch_sizes))


def export_and_check(args, module, make_inputs, cell, input_names, output_names):
    """Exports one cell to <out>/<cell>.onnx, checks it, optionally verifies it."""
    path = os.path.join(args.out, cell + ".onnx")
    example = make_inputs(TRACE_BATCH)
    export_cell(module, example, path, input_names, output_names)
    model = check_exported(path, allow_any_ops=args.no_op_check)
    if args.verify:
        verify(model, module, example, input_names, make_inputs=make_inputs)
    return path
