"""What the peers (PyTorch, ONNX Runtime) share: the command line, reading
the trace, the online (length buckets, a batch whenever the model is idle)
and sorted offline schedules, the check against cellrun's outputs, and the
results file.

A peer module provides load(weights) -> model, item(request) -> dict with
"length" (the bucketing key) and its data, run(model, items) (one batch;
returns per item a dict of output name -> tensor), and the output names it
compares. See pytorch_chain.py for the file formats.

With --device cuda the models live on the GPU (cuDNN's LSTM, cuBLAS GEMMs);
requests stay on the host until their batch is formed, as a server receives
them, and each batch's end is taken once its outputs are on the host (one
device-to-host copy into pinned memory of the batch's outputs, as a server
returns them and as cellrun copies every emitted row back).
"""
import argparse
import inspect
import json
import os
import sys
import time

import torch

# Where the models and each batch's tensors live (--device); the peers'
# run() functions put what they build here.
DEVICE = torch.device("cpu")
# --precision: "fp32", "tf32" or "bf16" (cuda).
PRECISION = "fp32"


def compute_dtype():
    """The dtype the model's floating-point inputs take (--precision)."""
    return torch.bfloat16 if PRECISION == "bf16" else torch.float32


def parse_args(description):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--weights", required=True,
                        help="the generator's <cell>.pt, or the directory holding them")
    parser.add_argument("--trace", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--mode", choices=["online", "sorted"], default="online")
    parser.add_argument("--bucket-width", type=int, default=0,
                        help="online: batch only requests of the oldest one's length "
                             "bucket of this width (0: every waiting request)")
    parser.add_argument("--max-batch", type=int, default=512)
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads (0: torch's default)")
    parser.add_argument("--reference", help="a `cellrun run --output` file to check against")
    parser.add_argument("--check", type=int, default=8)
    parser.add_argument("--tolerance", default="1e-3,1e-4",
                        help="RELATIVE,ABSOLUTE error a float output may have against "
                             "ours (looser for artifacts of bf16/fp16/tf32 products)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="where the model runs (cuda: the first GPU)")
    parser.add_argument("--precision", choices=["fp32", "tf32", "bf16"], default="fp32",
                        help="cuda: fp32 (no TF32 anywhere); tf32 (cuDNN's and cuBLAS's "
                             "products on TF32 tensor cores, as PyTorch does by default "
                             "in cuDNN); bf16 (the model in bfloat16, weights and "
                             "activations, as a PyTorch user runs bf16)")
    return parser.parse_args()


def to_device(model):
    """`model` (a module, or tuples and dicts of them) moved to DEVICE, its
    floating-point weights in bfloat16 with --precision bf16."""
    if isinstance(model, torch.nn.Module):
        if PRECISION != "bf16":
            return model.to(DEVICE)
        model = model.to(DEVICE, dtype=torch.bfloat16)
        # The cast leaves an RNN's weights outside cuDNN's one flat buffer,
        # which PyTorch then compacts at every call (it warns). A user who
        # casts a model calls flatten_parameters(), as here; for bfloat16 it
        # does nothing (torch.backends.cudnn.is_acceptable takes half, float
        # and double only), so the bf16 peer pays the compaction, as every
        # user of a bf16 nn.LSTM does.
        for module in model.modules():
            if isinstance(module, torch.nn.RNNBase):
                module.flatten_parameters()
        return model
    if isinstance(model, tuple):
        return tuple(to_device(part) for part in model)
    if isinstance(model, dict):
        return {key: to_device(part) for key, part in model.items()}
    return model


def to_host(results):
    """Every output of a batch on the host, in one device-to-host copy per
    element type into pinned memory (PyTorch's caching host allocator keeps
    it for the next batch), as a careful server copies; returns the results
    with host tensors (views of those copies)."""
    if DEVICE.type != "cuda":
        return results
    tensors = [tensor for outputs in results for tensor in outputs.values()]
    host = {}
    for dtype in {tensor.dtype for tensor in tensors}:
        group = [tensor for tensor in tensors if tensor.dtype == dtype]
        flat = torch.cat([tensor.reshape(-1) for tensor in group])
        pinned = torch.empty(flat.shape, dtype=dtype, pin_memory=True)
        pinned.copy_(flat, non_blocking=True)
        host[dtype] = iter(torch.split(pinned, [t.numel() for t in group]))
    torch.cuda.current_stream().synchronize()
    return [{name: next(host[tensor.dtype]).view(tensor.shape)
             for name, tensor in outputs.items()} for outputs in results]


def synchronize():
    """Waits for the GPU's queued work (timing points on --device cuda)."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def single_weight_file(weights):
    """`weights` itself, or the one .pt file in the directory it names."""
    if not os.path.isdir(weights):
        return weights
    files = [f for f in os.listdir(weights) if f.endswith(".pt")]
    if len(files) != 1:
        sys.exit(f"{weights}: expected one .pt file, found {files}")
    return os.path.join(weights, files[0])


def weight_file(weights, cell):
    """`weights` itself, or <weights>/<cell>.pt when it is a directory."""
    return os.path.join(weights, cell + ".pt") if os.path.isdir(weights) else weights


def blas_in_use():
    """The BLAS library mapped into this process (OpenBLAS is ~100x faster
    than the reference BLAS that Debian's torch may fall back to)."""
    try:
        with open("/proc/self/maps") as maps:
            names = {line.split()[-1].rsplit("/", 1)[-1] for line in maps
                     if "blas" in line.lower() and "/" in line}
        return ",".join(sorted(names)) or "unknown"
    except OSError:
        return "unknown"


def load_trace(path, item):
    requests = []
    with open(path) as f:
        for line in f:
            if line.strip():
                request = json.loads(line)
                entry = item(request)
                entry.update(id=request["id"], arrival_s=request["arrival_s"])
                requests.append(entry)
    if not requests:
        sys.exit(f"{path}: no requests")
    return requests


def online(model, run, requests, width, max_batch):
    """Open loop in real time: whenever the model is idle, the waiting
    requests (with a width, those in the length bucket of the oldest one)
    form a batch, oldest first."""
    order = sorted(range(len(requests)), key=lambda k: requests[k]["arrival_s"])
    waiting = {}
    arrived = done = 0
    start = time.perf_counter()
    while done < len(requests):
        now = time.perf_counter() - start
        while arrived < len(order) and requests[order[arrived]]["arrival_s"] <= now:
            k = order[arrived]
            bucket = (requests[k]["length"] - 1) // width if width > 0 else 0
            waiting.setdefault(bucket, []).append(k)
            arrived += 1
        if not any(waiting.values()):
            time.sleep(max(0.0, requests[order[arrived]]["arrival_s"] - now))
            continue
        bucket = min((b for b in waiting if waiting[b]),
                     key=lambda b: requests[waiting[b][0]]["arrival_s"])
        members = waiting[bucket][:max_batch]
        waiting[bucket] = waiting[bucket][max_batch:]
        began = time.perf_counter() - start
        with torch.no_grad():
            to_host(run(model, [requests[k] for k in members]))
        synchronize()
        ended = time.perf_counter() - start
        for k in members:
            requests[k].update(start_s=began, end_s=ended, batch=len(members))
        done += len(members)


def sorted_offline(model, run, requests, max_batch):
    """Every request at time 0, sorted by length, in full batches."""
    order = sorted(range(len(requests)), key=lambda k: -requests[k]["length"])
    start = time.perf_counter()
    for first in range(0, len(order), max_batch):
        members = order[first:first + max_batch]
        began = time.perf_counter() - start
        with torch.no_grad():
            to_host(run(model, [requests[k] for k in members]))
        synchronize()
        ended = time.perf_counter() - start
        for k in members:
            requests[k].update(arrival_s=0.0, start_s=began, end_s=ended,
                               batch=len(members))


def check(model, run, requests, reference_path, count, compare):
    """Runs the first `count` requests alone and compares each output of
    cellrun's results with `compare(name, have, want)` -> error ratio (1 is
    the tolerance). Exits with status 2 on a mismatch."""
    ours = {}
    with open(reference_path) as f:
        for line in f:
            if line.strip():
                result = json.loads(line)
                ours[result["id"]] = result
    worst, compared = 0.0, 0
    for request in requests[:count]:
        theirs = ours.get(request["id"])
        if theirs is None or "outputs" not in theirs:
            sys.exit(f"peer check: {request['id']} has no outputs in {reference_path}")
        with torch.no_grad():
            mine = run(model, [request])[0]
        for name, tensor in theirs["outputs"].items():
            want = torch.tensor(tensor["data"]).reshape(tensor["shape"])
            have = mine.get(name)
            if have is not None:
                have = have.cpu()
            if have is None or tuple(have.shape) != tuple(want.shape):
                print(f"peer check: {request['id']} output {name}: shape "
                      f"{None if have is None else tuple(have.shape)} against ours "
                      f"{tuple(want.shape)}: differs from ours", file=sys.stderr)
                sys.exit(2)
            error = compare(name, have, want)
            worst = max(worst, error)
            compared += 1
            if error > 1.0:
                print(f"peer check: {request['id']} output {name} differs from ours "
                      f"({error:.3g} times the tolerance)", file=sys.stderr)
                sys.exit(2)
    return compared, worst


# --tolerance: (relative, absolute).
TOLERANCE = (1e-3, 1e-4)


def float_error(have, want):
    """Worst difference over the tolerance (1e-3 relative + 1e-4 absolute
    unless --tolerance says otherwise)."""
    have, want = have.float(), want.float()
    relative, absolute = TOLERANCE
    return ((have - want).abs() / (relative * want.abs() + absolute)).max().item()


def torch_summary():
    """What the PyTorch peers report about themselves."""
    summary = {"peer": "pytorch", "torch": torch.__version__,
               "threads": torch.get_num_threads(), "blas": blas_in_use(),
               "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", "detected")}
    if DEVICE.type == "cuda":
        summary.update(gpu=torch.cuda.get_device_name(DEVICE),
                       cudnn=torch.backends.cudnn.version(), tf32=PRECISION == "tf32",
                       precision=PRECISION)
    return summary


def main(description, load, item, run, compare, describe, identify=torch_summary):
    """Runs a peer: `load(weights, threads)` or `load(weights)`, then the check,
    a warm-up and the timed schedule; prints `identify()` (what the peer is)
    with the mode, model and check as the last line, JSON."""
    global DEVICE, TOLERANCE, PRECISION
    args = parse_args(description)
    if args.precision != "fp32" and args.device != "cuda":
        sys.exit(f"--precision {args.precision}: the peers run reduced precision on cuda only")
    PRECISION = args.precision
    TOLERANCE = tuple(float(part) for part in args.tolerance.split(","))
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"--device cuda: torch {torch.__version__} sees no CUDA device")
    DEVICE = torch.device(args.device)
    if DEVICE.type == "cuda":
        # The precision of ours: no TF32 in cuDNN's RNNs or in cuBLAS for
        # fp32 (cuDNN allows it by default), else the check against ours
        # fails and the timing compares TF32 with fp32; both for tf32.
        tf32 = PRECISION == "tf32"
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
    takes_threads = len(inspect.signature(load).parameters) > 1
    model = to_device(load(args.weights, args.threads) if takes_threads
                      else load(args.weights))
    requests = load_trace(args.trace, item)
    summary = identify()
    summary.update(mode=args.mode, model=describe(model), device=args.device,
                   tolerance=list(TOLERANCE))
    if args.reference:
        compared, worst = check(model, run, requests, args.reference, args.check, compare)
        summary.update(checked_outputs=compared, worst_error_vs_tolerance=worst)
    with torch.no_grad():  # warm-up, not timed
        run(model, requests[:min(len(requests), args.max_batch)])
    synchronize()
    if args.mode == "online":
        online(model, run, requests, args.bucket_width, args.max_batch)
    else:
        sorted_offline(model, run, requests, args.max_batch)
    with open(args.out, "w") as out:
        for r in requests:
            out.write(json.dumps({k: r[k] for k in ("id", "arrival_s", "start_s",
                                                     "end_s", "batch")}) + "\n")
    print(json.dumps(summary))
