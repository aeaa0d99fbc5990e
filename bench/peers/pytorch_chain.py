#!/usr/bin/env python3
"""The PyTorch peer for chain models (LSTM, GRU): what a user would run
instead of cellrun, on the same trace and the same weights.

    pytorch_chain.py --weights CELL.pt --trace TRACE.jsonl --out RESULTS.jsonl
                     [--mode online|sorted] [--bucket-width 10] [--max-batch 512]
                     [--threads N] [--reference OURS.jsonl] [--check 8]

CELL.pt is the generator's state_dict (examples/<model>/generate.py writes it
beside the ONNX file): an optional `embedding.weight` and the cell's
`cell.weight_ih`, `cell.weight_hh`, `cell.bias_ih`, `cell.bias_hh`, loaded into
one nn.LSTM or nn.GRU (4 or 3 gates), which runs whole sequences with its
fused CPU (or cuDNN) kernels.

TRACE.jsonl: one request a line as `cellrun run` reads it ("id", "tokens" or
"steps" of {"x": [...]}) plus "arrival_s", the open-loop arrival time.

Modes:
  online  requests arrive at their times (real time, from the moment the
          trace starts); whenever the model is idle, the waiting requests in
          the length bucket (width --bucket-width) of the oldest one form a
          batch (up to --max-batch), padded to their longest and packed with
          pack_padded_sequence, so no padding step is computed.
  sorted  offline, PyTorch at its best: every request at time 0, sorted by
          length, in full batches of --max-batch.

RESULTS.jsonl: per request "id", "arrival_s", "start_s", "end_s", "batch"
(the size of the batch it ran in). With --reference (a `cellrun run --output`
file) the outputs of the first --check requests of the trace are compared
with it before anything is written; a mismatch exits with status 2.
"""
import argparse
import json
import sys
import time

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def load_model(path):
    state = torch.load(path)
    embedding = None
    if "embedding.weight" in state:
        embedding = nn.Embedding.from_pretrained(state["embedding.weight"])
    w_ih, w_hh = state["cell.weight_ih"], state["cell.weight_hh"]
    hidden = w_hh.shape[1]
    gates = w_ih.shape[0] // hidden
    kind = {4: nn.LSTM, 3: nn.GRU}.get(gates)
    if kind is None:
        sys.exit(f"{path}: a cell with {gates} gates is neither an LSTM nor a GRU")
    rnn = kind(w_ih.shape[1], hidden)
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(w_ih)
        rnn.weight_hh_l0.copy_(w_hh)
        rnn.bias_ih_l0.copy_(state["cell.bias_ih"])
        rnn.bias_hh_l0.copy_(state["cell.bias_hh"])
    rnn.eval()
    return embedding, rnn


def load_trace(path):
    requests = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            request = json.loads(line)
            if "tokens" in request:
                data = torch.tensor(request["tokens"], dtype=torch.int64)
            else:
                data = torch.tensor([step["x"] for step in request["steps"]],
                                    dtype=torch.float32)
            requests.append({"id": request["id"], "arrival_s": request["arrival_s"],
                             "data": data, "length": len(data)})
    return requests


def run_batch(embedding, rnn, batch):
    """The per-step outputs [L, H] and final states of each request."""
    lengths = torch.tensor([r["length"] for r in batch])
    padded = nn.utils.rnn.pad_sequence([r["data"] for r in batch])
    inputs = embedding(padded) if embedding is not None else padded
    packed = pack_padded_sequence(inputs, lengths, enforce_sorted=False)
    output, final = rnn(packed)
    steps, _ = pad_packed_sequence(output)
    h_n = final[0] if isinstance(final, tuple) else final
    c_n = final[1] if isinstance(final, tuple) else None
    return steps, h_n, c_n, lengths


def online(embedding, rnn, requests, width, max_batch):
    order = sorted(range(len(requests)), key=lambda k: requests[k]["arrival_s"])
    waiting = {}  # bucket -> [request index], each in arrival order
    arrived = 0
    start = time.perf_counter()
    done = 0
    while done < len(requests):
        now = time.perf_counter() - start
        while arrived < len(order) and requests[order[arrived]]["arrival_s"] <= now:
            k = order[arrived]
            waiting.setdefault((requests[k]["length"] - 1) // width, []).append(k)
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
            run_batch(embedding, rnn, [requests[k] for k in members])
        ended = time.perf_counter() - start
        for k in members:
            requests[k].update(start_s=began, end_s=ended, batch=len(members))
        done += len(members)


def sorted_offline(embedding, rnn, requests, max_batch):
    order = sorted(range(len(requests)), key=lambda k: -requests[k]["length"])
    start = time.perf_counter()
    for first in range(0, len(order), max_batch):
        members = order[first:first + max_batch]
        began = time.perf_counter() - start
        with torch.no_grad():
            run_batch(embedding, rnn, [requests[k] for k in members])
        ended = time.perf_counter() - start
        for k in members:
            requests[k].update(arrival_s=0.0, start_s=began, end_s=ended,
                               batch=len(members))


def check(embedding, rnn, requests, reference_path, count):
    """Compares the first `count` requests, run alone, with cellrun's
    outputs: per-step outputs [L, H] with the steps' h, final_h* / final_c*
    with the final states."""
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
            steps, h_n, c_n, _ = run_batch(embedding, rnn, [request])
        mine = {"steps": steps[:, 0, :], "h": h_n[0, 0], "c": None if c_n is None else c_n[0, 0]}
        for name, tensor in theirs["outputs"].items():
            want = torch.tensor(tensor["data"], dtype=torch.float32).reshape(tensor["shape"])
            if len(tensor["shape"]) == 2:
                have = mine["steps"]
            elif name.startswith("final_c"):
                have = mine["c"]
            else:
                have = mine["h"]
            if have is None or have.shape != want.shape:
                sys.exit(f"peer check: {request['id']} output {name}: shape "
                         f"{None if have is None else tuple(have.shape)} against ours "
                         f"{tuple(want.shape)}")
            error = ((have - want).abs() / (1e-3 * want.abs() + 1e-4)).max().item()
            worst = max(worst, error)
            compared += 1
            if error > 1.0:
                print(f"peer check: {request['id']} output {name} differs from ours by "
                      f"{(have - want).abs().max().item():.3g} (beyond 1e-3 relative + "
                      f"1e-4 absolute)", file=sys.stderr)
                sys.exit(2)
    return compared, worst


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", required=True)
    parser.add_argument("--trace", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--mode", choices=["online", "sorted"], default="online")
    parser.add_argument("--bucket-width", type=int, default=10)
    parser.add_argument("--max-batch", type=int, default=512)
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads (0: torch's default)")
    parser.add_argument("--reference")
    parser.add_argument("--check", type=int, default=8)
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    embedding, rnn = load_model(args.weights)
    requests = load_trace(args.trace)
    if not requests:
        sys.exit(f"{args.trace}: no requests")
    summary = {"peer": "pytorch", "torch": torch.__version__, "mode": args.mode,
               "threads": torch.get_num_threads(), "rnn": type(rnn).__name__,
               "blas": blas_in_use()}
    if args.reference:
        compared, worst = check(embedding, rnn, requests, args.reference, args.check)
        summary.update(checked_outputs=compared, worst_error_vs_tolerance=worst)
    # Warm-up: one batch of the largest size, not timed.
    with torch.no_grad():
        run_batch(embedding, rnn, requests[:min(len(requests), args.max_batch)])
    if args.mode == "online":
        online(embedding, rnn, requests, args.bucket_width, args.max_batch)
    else:
        sorted_offline(embedding, rnn, requests, args.max_batch)
    with open(args.out, "w") as out:
        for r in requests:
            out.write(json.dumps({k: r[k] for k in ("id", "arrival_s", "start_s", "end_s",
                                                     "batch")}) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
