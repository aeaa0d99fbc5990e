"""Shared helpers for the example model generators (examples/<model>/generate.py).

Each generator builds one or more PyTorch modules (one per cell type), exports each
to ``<out>/<cell>.onnx`` with :func:`export_cell`, and re-loads every exported file with
:func:`check_exported` (onnx.checker, op-type whitelist, input/output summary).  With
``--reference`` it also runs each exported module on random inputs and writes the inputs
and outputs to ``<out>/<cell>.ref`` (:func:`write_cell_reference`; format below).

Requires Debian's ``/usr/bin/python3`` (torch 1.13, onnx 1.12, numpy); see
docs in examples/README.md.
"""

import argparse
import os
import struct
import sys

OPSET = 14

# Op types the cellc ONNX importer is expected to handle (Shape: shape arithmetic that
# cellc evaluates at import).  An exported graph that uses anything else
# (ConstantOfShape, Expand, ...) is rejected unless --no-op-check.
ALLOWED_OPS = frozenset([
    "MatMul", "Gemm", "Add", "Sub", "Mul", "Div", "Sigmoid", "Tanh", "Relu", "Concat",
    "Split", "Slice", "Gather", "ArgMax", "Squeeze", "Unsqueeze", "Reshape", "Transpose",
    "Identity", "Cast", "Constant", "Erf", "Sqrt", "Pow", "Equal", "Where", "ReduceMean",
    "LayerNormalization", "Shape", "Exp", "Log", "ReduceSum", "ReduceMax", "Softmax",
    "LogSoftmax", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "Softplus",
    "Neg", "Max", "Min", "InstanceNormalization",
])

# Size used for the batch dimension of the example inputs during tracing.  Not 1, so
# that nothing batch-1-specific can be baked into the trace; the exported batch axis is
# dynamic anyway.
TRACE_BATCH = 2

# --reference: batch sizes of the reference cases, the offset added to --seed for the
# reference inputs (so they are not drawn from the stream that built the weights), the
# smallest magnitude of a float input, and the smallest gap between the two largest
# logits of an argmax row (see write_cell_reference).
REFERENCE_BATCHES = [1, 3, 8, 64]
REFERENCE_SEED_OFFSET = 1000003
REFERENCE_MIN_ABS = 1e-3
REFERENCE_ARGMAX_MARGIN = 1e-4


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
    p.add_argument("--weights-only", action="store_true",
                   help="write only <out>/<cell>.pt, the weights for the PyTorch peers "
                        "(no ONNX export: for a machine without cellc, such as the GPU "
                        "machine; check them with weights_digest.py)")
    p.add_argument("--no-op-check", action="store_true",
                   help="do not fail when an exported graph uses an op outside the "
                        "supported set (it is still reported)")
    p.add_argument("--verify", action="store_true",
                   help="also run each exported graph with a small numpy interpreter and "
                        "compare against the PyTorch module at batch sizes 1 and 3")
    p.add_argument("--reference", action="store_true",
                   help="also write <out>/<cell>.ref: random inputs (seed --seed + %d) and "
                        "the PyTorch module's outputs at batch sizes %s"
                        % (REFERENCE_SEED_OFFSET,
                           ", ".join(str(b) for b in REFERENCE_BATCHES)))
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


# --------------------------------------------------------------------------------------
# Reference files (--reference): inputs and PyTorch outputs of one cell, for the
# runtime's correctness tests (test/unit/ReferenceData.h reads them).
#
# Little-endian:
#   magic "CREF", u32 version (= 1), u32 num_cases
#   per case:   u32 batch, u32 num_tensors
#     per tensor: u16 name_length, name bytes (the ONNX input/output name),
#                 u8 role (0 = input of the cell, 1 = output), u8 dtype (0 = float32,
#                 4 = int64: the runtime's DType::F32 / DType::I64), u8 rank,
#                 i64 dims[rank], then the data (row-major, packed, little-endian)
#   The inputs come first, in ONNX input order, then the outputs in ONNX output order.
#   Nothing follows the last case.

REF_MAGIC = b"CREF"
REF_VERSION = 1
REF_ROLE_INPUT = 0
REF_ROLE_OUTPUT = 1
REF_DTYPE_F32 = 0
REF_DTYPE_I64 = 4


def _ref_dtypes():
    import numpy as np
    return {REF_DTYPE_F32: np.dtype("<f4"), REF_DTYPE_I64: np.dtype("<i8")}


def encode_reference(cases):
    """Serializes ``cases``: a list of (batch, [(name, role, ndarray), ...])."""
    import numpy as np
    codes = {np.dtype(dt).str: code for code, dt in _ref_dtypes().items()}
    parts = [REF_MAGIC, struct.pack("<II", REF_VERSION, len(cases))]
    for batch, tensors in cases:
        parts.append(struct.pack("<II", batch, len(tensors)))
        for name, role, arr in tensors:
            arr = np.asarray(arr)
            code = codes.get(arr.dtype.newbyteorder("<").str)
            if code is None:
                raise ValueError("reference tensor %s: unsupported dtype %s"
                                 % (name, arr.dtype))
            nb = name.encode("utf-8")
            if len(nb) > 0xFFFF or arr.ndim > 0xFF:
                raise ValueError("reference tensor %s: name or rank too large" % name)
            parts.append(struct.pack("<H", len(nb)))
            parts.append(nb)
            parts.append(struct.pack("<BBB", role, code, arr.ndim))
            parts.append(struct.pack("<%dq" % arr.ndim, *arr.shape))
            parts.append(np.ascontiguousarray(arr, dtype=_ref_dtypes()[code]).tobytes())
    return b"".join(parts)


def read_reference(path):
    """Reads a .ref file: list of (batch, [(name, role, ndarray), ...]).

    Strict: raises ValueError on a bad magic/version, a truncated file, an unknown
    dtype or role, or bytes after the last case.
    """
    import numpy as np
    with open(path, "rb") as f:
        buf = f.read()
    pos = [0]

    def take(n):
        if n < 0 or pos[0] + n > len(buf):
            raise ValueError("%s: truncated at offset %d" % (path, pos[0]))
        b = buf[pos[0]:pos[0] + n]
        pos[0] += n
        return b

    if take(4) != REF_MAGIC:
        raise ValueError("%s: bad magic" % path)
    version, ncases = struct.unpack("<II", take(8))
    if version != REF_VERSION:
        raise ValueError("%s: unsupported version %d" % (path, version))
    cases = []
    for _ in range(ncases):
        batch, ntensors = struct.unpack("<II", take(8))
        tensors = []
        for _ in range(ntensors):
            (nlen,) = struct.unpack("<H", take(2))
            name = take(nlen).decode("utf-8")
            role, code, rank = struct.unpack("<BBB", take(3))
            if role not in (REF_ROLE_INPUT, REF_ROLE_OUTPUT):
                raise ValueError("%s: %s: bad role %d" % (path, name, role))
            dt = _ref_dtypes().get(code)
            if dt is None:
                raise ValueError("%s: %s: unknown dtype %d" % (path, name, code))
            dims = struct.unpack("<%dq" % rank, take(8 * rank))
            if any(d < 0 for d in dims):
                raise ValueError("%s: %s: negative dimension" % (path, name))
            n = int(np.prod(dims, dtype=np.int64)) if rank else 1
            arr = np.frombuffer(take(n * dt.itemsize), dtype=dt).reshape(dims)
            tensors.append((name, role, arr))
        cases.append((batch, tensors))
    if pos[0] != len(buf):
        raise ValueError("%s: %d bytes after the last case" % (path, len(buf) - pos[0]))
    return cases


def check_same_weights(model, module, path):
    """Checks that the initializers of ``model`` hold exactly ``module``'s weights.

    Every state_dict entry whose name is also an initializer's name must match it bit for
    bit (the reference is computed with ``module``, the runtime runs the ONNX weights).
    Returns the number of matched entries; warns about entries without an initializer.
    """
    import numpy as np
    from onnx import numpy_helper
    inits = {i.name: i for i in model.graph.initializer}
    matched, missing = 0, []
    for name, t in module.state_dict().items():
        if name not in inits:
            missing.append(name)
            continue
        a = numpy_helper.to_array(inits[name])
        b = t.detach().cpu().numpy()
        if a.shape != b.shape or a.dtype != b.dtype or not np.array_equal(a, b):
            sys.exit("error: %s: initializer %s differs from the module's weights"
                     % (path, name))
        matched += 1
    if missing:
        print("warning: %s: no initializer named %s; not compared"
              % (path, ", ".join(missing)), file=sys.stderr)
    return matched


def argmax_margin_rows(logits, margin=REFERENCE_ARGMAX_MARGIN):
    """Bool tensor [B]: rows of ``logits`` [B, V] whose two largest values differ by
    at most ``margin`` (an argmax over such a row may legitimately flip)."""
    import torch
    top2 = torch.topk(logits.to(torch.float64), 2, dim=1).values
    return (top2[:, 0] - top2[:, 1]) <= margin


def _reference_input(torch, gen, like, b, vocab):
    """A random input shaped like ``like`` (the trace input) with batch ``b``.

    int64: tokens uniform in [1, vocab - 1].  float32: uniform in [-1, 1] without the
    interval (-REFERENCE_MIN_ABS, REFERENCE_MIN_ABS) (uniform magnitude, random sign).
    """
    shape = (b,) + tuple(like.shape[1:])
    if like.dtype == torch.int64:
        if vocab is None or vocab < 2:
            raise ValueError("an int64 (token) input needs vocab >= 2")
        return torch.randint(1, vocab, shape, generator=gen, dtype=torch.int64)
    if like.dtype != torch.float32:
        raise ValueError("reference inputs: unsupported dtype %s" % like.dtype)
    mag = torch.rand(shape, generator=gen, dtype=torch.float64)
    mag = REFERENCE_MIN_ABS + (1.0 - REFERENCE_MIN_ABS) * mag
    sign = torch.randint(0, 2, shape, generator=gen, dtype=torch.int64) * 2 - 1
    x = (mag * sign).to(torch.float32)
    assert bool((x.abs() >= REFERENCE_MIN_ABS).all() and (x.abs() <= 1).all())
    return x


def _run_module(module, ins, output_names):
    outs = module(*ins)
    if not isinstance(outs, (tuple, list)):
        outs = (outs,)
    if len(outs) != len(output_names):
        sys.exit("error: module returned %d outputs, expected %d (%s)"
                 % (len(outs), len(output_names), ", ".join(output_names)))
    return [o.detach().contiguous() for o in outs]


def write_cell_reference(args, module, example, cell, input_names, output_names,
                         vocab=None, bad_rows=None, max_rounds=100, positive=()):
    """Writes ``<out>/<cell>.ref`` (format above): one case per REFERENCE_BATCHES entry.

    ``example`` are the trace inputs (they give each input's dtype and trailing shape);
    ``vocab`` bounds the int64 token inputs.  ``bad_rows(ins, outs)``, given dicts
    name -> tensor, returns a bool tensor [B] of rows whose outputs are too close to a
    discontinuity (an argmax tie); their inputs are redrawn (the other rows keep theirs)
    and the whole batch is run again, up to ``max_rounds`` times.

    ``module`` runs in eval mode under torch.no_grad(), in float32 on the CPU, with
    torch.use_deterministic_algorithms(True) and one intra-op thread, with its own
    torch.Generator (seed --seed + REFERENCE_SEED_OFFSET, the same for every cell), so
    the global RNG, and so the weights of cells built later, are not affected.
    ``positive`` names float inputs drawn as magnitudes only (states that are
    positive in use, such as a normaliser: a negative one would put a denominator
    near zero no real state reaches).
    Returns (path, number of redrawn rows).
    """
    import torch
    for name, t in list(module.named_parameters()) + list(module.named_buffers()):
        if t.is_floating_point() and (t.dtype != torch.float32 or t.device.type != "cpu"):
            sys.exit("error: %s: %s is %s on %s; the reference needs float32 on the CPU"
                     % (cell, name, t.dtype, t.device))
    module.eval()
    gen = torch.Generator().manual_seed(args.seed + REFERENCE_SEED_OFFSET)
    was_det = torch.are_deterministic_algorithms_enabled()
    threads = torch.get_num_threads()
    redrawn = 0
    cases = []
    try:
        try:
            torch.use_deterministic_algorithms(True)
        except Exception as e:  # pragma: no cover (torch without the switch)
            print("warning: torch.use_deterministic_algorithms: %s" % e, file=sys.stderr)
        torch.set_num_threads(1)
        magnitudes = [name in positive for name in input_names]

        def draw(like, rows, n):
            x = _reference_input(torch, gen, like, rows, vocab)
            return x.abs() if magnitudes[n] else x

        with torch.no_grad():
            for b in REFERENCE_BATCHES:
                ins = [draw(x, b, n) for n, x in enumerate(example)]
                outs = _run_module(module, ins, output_names)
                for _ in range(max_rounds):
                    if bad_rows is None:
                        break
                    bad = bad_rows(dict(zip(input_names, ins)), dict(zip(output_names, outs)))
                    bad = torch.as_tensor(bad, dtype=torch.bool).reshape(-1)
                    if not bool(bad.any()):
                        break
                    idx = torch.nonzero(bad).reshape(-1)
                    redrawn += int(idx.numel())
                    for n, (x, like) in enumerate(zip(ins, example)):
                        x[idx] = draw(like, int(idx.numel()), n)
                    outs = _run_module(module, ins, output_names)
                else:
                    sys.exit("error: %s: batch %d: could not draw inputs away from argmax "
                             "ties in %d rounds" % (cell, b, max_rounds))
                tensors = [(n, REF_ROLE_INPUT, t.numpy()) for n, t in zip(input_names, ins)]
                tensors += [(n, REF_ROLE_OUTPUT, t.numpy()) for n, t in zip(output_names, outs)]
                for n, _, a in tensors:
                    if a.shape[:1] != (b,):
                        sys.exit("error: %s: %s has shape %s, expected batch %d first"
                                 % (cell, n, a.shape, b))
                cases.append((b, tensors))
    finally:
        torch.set_num_threads(threads)
        try:
            torch.use_deterministic_algorithms(was_det)
        except Exception:  # pragma: no cover
            pass
    data = encode_reference(cases)
    path = os.path.join(args.out, cell + ".ref")
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    # Read back: the file must give exactly the tensors that were computed.
    back = read_reference(path)
    same = len(back) == len(cases) and all(
        bb == b and len(bt) == len(t) and all(
            n1 == n2 and r1 == r2 and a1.dtype == a2.dtype and a1.shape == a2.shape
            and a1.tobytes() == a2.tobytes()
            for (n1, r1, a1), (n2, r2, a2) in zip(bt, t))
        for (bb, bt), (b, t) in zip(back, cases))
    if not same:
        sys.exit("error: %s: read-back differs from what was written" % path)
    print("%s  %d cases (batch %s)  %d bytes%s"
          % (path, len(cases), ", ".join(str(b) for b, _ in cases), len(data),
             "  (%d rows redrawn)" % redrawn if bad_rows is not None else ""))
    return path, redrawn


def layer_state_names(states, layers, data="x", output="y"):
    """The input and output names of a stacked cell: the step's data input and
    output, then per layer k every state s as s<k> in and s<k>_next out."""
    inputs, outputs = [data], [output]
    for k in range(layers):
        inputs += ["%s%d" % (s, k) for s in states]
        outputs += ["%s%d_next" % (s, k) for s in states]
    return inputs, outputs


def export_and_check(args, module, make_inputs, cell, input_names, output_names,
                     vocab=None, reference_bad_rows=None, positive_inputs=()):
    """Exports one cell to <out>/<cell>.onnx, checks it, optionally verifies it, and
    with --reference writes <out>/<cell>.ref from the same module object.

    ``vocab``: the token range of int64 inputs (needed with --reference);
    ``reference_bad_rows``, ``positive_inputs``: see write_cell_reference.
    """
    path = os.path.join(args.out, cell + ".onnx")
    # The module's weights as PyTorch keeps them, for the PyTorch peers of
    # the benchmarks (bench/peers/): they run the same weights as the ONNX.
    import torch
    torch.save(module.state_dict(), os.path.join(args.out, cell + ".pt"))
    if args.weights_only:
        return
    example = make_inputs(TRACE_BATCH)
    export_cell(module, example, path, input_names, output_names)
    model = check_exported(path, allow_any_ops=args.no_op_check)
    if args.verify:
        verify(model, module, example, input_names, make_inputs=make_inputs)
    if getattr(args, "reference", False):
        check_same_weights(model, module, path)
        write_cell_reference(args, module, example, cell, input_names, output_names,
                             vocab=vocab, bad_rows=reference_bad_rows,
                             positive=positive_inputs)
    return path
