#!/usr/bin/env python3
"""The PyTorch peer for chain models (LSTM, GRU, minGRU, Mamba): what a user would run
instead of cellrun, on the same trace and the same weights.

    pytorch_chain.py --weights CELL.pt|DIR --trace TRACE.jsonl --out RESULTS.jsonl
                     [--mode online|sorted] [--bucket-width 10] [--max-batch 512]
                     [--threads N] [--reference OURS.jsonl] [--check 8]
                     [--device cpu|cuda] [--precision fp32|tf32|bf16]

CELL.pt is the generator's state_dict (examples/<model>/generate.py writes it
beside the ONNX file; a directory holding one .pt file also does): an
optional `embedding.weight` and the cell's `cell.weight_ih`, `cell.weight_hh`,
`cell.bias_ih`, `cell.bias_hh`, loaded into one nn.LSTM or nn.GRU (4 or 3
gates), which runs whole sequences with its fused kernels (on the CPU, or
with --device cuda cuDNN's). A minGRU stack's state dict (examples/mingru:
`lower.*`, `upper.*`) runs each layer's Linear over whole sequences and its
recurrence as a step loop (mingru_peer.py). A Mamba stack's (examples/mamba:
`mixers.*`, `norms.*`, `norm_f.*`) runs the reference step over padded
batches (mamba_peer.py).

TRACE.jsonl: one request a line as `cellrun run` reads it ("id", "tokens" or
"steps" of {"x": [...]}) plus "arrival_s", the open-loop arrival time.

Modes:
  online  requests arrive at their times (real time, from the moment the
          trace starts); whenever the model is idle, the waiting requests
          form a batch (up to --max-batch, oldest first; with --bucket-width
          W only those in the oldest one's length bucket), padded to their
          longest and packed with pack_padded_sequence, so no padding step is
          computed.
  sorted  offline, PyTorch at its best: every request at time 0, sorted by
          length, in full batches of --max-batch.

RESULTS.jsonl: per request "id", "arrival_s", "start_s", "end_s", "batch"
(the size of the batch it ran in). With --reference (a `cellrun run --output`
file) the outputs of the first --check requests of the trace, each run alone,
are compared with it before anything is timed: per-step outputs [L, H] with
the steps' h, final_h* / final_c* with the final states, within 1e-3
relative + 1e-4 absolute; a mismatch exits with status 2.
"""
import os
import sys

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mamba_peer  # noqa: E402
import mingru_peer  # noqa: E402
import peer_common  # noqa: E402


def load(weights):
    state = torch.load(peer_common.single_weight_file(weights))
    if mingru_peer.is_mingru(state):
        return None, mingru_peer.MinGruStack(state).eval()
    if mamba_peer.is_mamba(state):
        return None, mamba_peer.build(state)
    embedding = None
    if "embedding.weight" in state:
        embedding = nn.Embedding.from_pretrained(state["embedding.weight"])
    w_ih, w_hh = state["cell.weight_ih"], state["cell.weight_hh"]
    hidden = w_hh.shape[1]
    gates = w_ih.shape[0] // hidden
    kind = {4: nn.LSTM, 3: nn.GRU}.get(gates)
    if kind is None:
        sys.exit(f"{weights}: a cell with {gates} gates is neither an LSTM nor a GRU")
    rnn = kind(w_ih.shape[1], hidden)
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(w_ih)
        rnn.weight_hh_l0.copy_(w_hh)
        rnn.bias_ih_l0.copy_(state["cell.bias_ih"])
        rnn.bias_hh_l0.copy_(state["cell.bias_hh"])
    rnn.eval()
    return embedding, rnn


def item(request):
    if "tokens" in request:
        data = torch.tensor(request["tokens"], dtype=torch.int64)
    else:
        data = torch.tensor([step["x"] for step in request["steps"]], dtype=torch.float32)
    return {"data": data, "length": len(data)}


def run(model, batch):
    embedding, rnn = model
    if isinstance(rnn, mingru_peer.MinGruStack):
        return mingru_peer.run(rnn, batch)
    if isinstance(rnn, mamba_peer.MambaStackStep):
        return mamba_peer.run(rnn, batch)
    lengths = torch.tensor([r["length"] for r in batch])
    padded = nn.utils.rnn.pad_sequence([r["data"] for r in batch]).to(peer_common.DEVICE)
    inputs = embedding(padded) if embedding is not None else padded
    inputs = inputs.to(peer_common.compute_dtype())
    output, final = rnn(pack_padded_sequence(inputs, lengths, enforce_sorted=False))
    steps, _ = pad_packed_sequence(output)
    h_n, c_n = final if isinstance(final, tuple) else (final, None)
    results = []
    for b, r in enumerate(batch):
        outputs = {"steps": steps[:r["length"], b, :], "h": h_n[0, b]}
        if c_n is not None:
            outputs["c"] = c_n[0, b]
        results.append(outputs)
    return results


def compare(name, have, want):
    return peer_common.float_error(have, want)


def run_named(model, batch):
    return [_Named(outputs) for outputs in run(model, batch)]


class _Named(dict):
    """Our output names onto the peer's: per-step outputs [L, H] are the
    steps' h, final_c* the final c, other final_* the final h."""

    def get(self, name, default=None):
        if name in self:  # a model that names its own (minGRU, Mamba)
            return dict.get(self, name)
        if name.startswith("final_c"):
            return dict.get(self, "c", default)
        if name.startswith("final_"):
            return dict.get(self, "h", default)
        return dict.get(self, "steps", default)


if __name__ == "__main__":
    peer_common.main(__doc__.splitlines()[0], load, item, run_named, compare,
                     lambda model: type(model[1]).__name__)
