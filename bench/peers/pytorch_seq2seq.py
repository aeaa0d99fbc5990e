#!/usr/bin/env python3
"""The PyTorch peer for seq2seq models: an nn.LSTM encoder over the packed
sources, then greedy decoding with nn.LSTMCell, the output projection and
argmax, step by step, the batch shrinking as requests reach the end token or
their limit: what a user would run instead of cellrun, on the same trace and
weights.

    pytorch_seq2seq.py --weights DIR --trace TRACE.jsonl --out RESULTS.jsonl
                       [--bos 1] [--eos 2] [--max-decode 64] [other options of
                       pytorch_chain.py]

DIR holds the generator's encoder.pt and decoder.pt (examples/seq2seq/
generate.py). Requests: {"id", "tokens" (the source), "max_decode_length",
"arrival_s"}; buckets and batches go by source length. The check compares
the decoded tokens (the end token included, as cellrun returns them)
exactly.
"""
import os
import sys

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402

BOS, EOS, MAX_DECODE = 1, 2, 0  # 0: no limit of the model's
for flag, name in (("--bos", "BOS"), ("--eos", "EOS"), ("--max-decode", "MAX_DECODE")):
    if flag in sys.argv:  # read here, removed before the common options
        at = sys.argv.index(flag)
        globals()[name] = int(sys.argv[at + 1])
        del sys.argv[at:at + 2]


def lstm_from(state, prefix="cell."):
    w_ih = state[prefix + "weight_ih"]
    cell = nn.LSTMCell(w_ih.shape[1], state[prefix + "weight_hh"].shape[1])
    cell.load_state_dict({k[len(prefix):]: v for k, v in state.items()
                          if k.startswith(prefix)})
    return cell


def load(weights):
    encoder = torch.load(peer_common.weight_file(weights, "encoder"))
    decoder = torch.load(peer_common.weight_file(weights, "decoder"))
    cell = lstm_from(encoder)
    rnn = nn.LSTM(cell.input_size, cell.hidden_size)
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(cell.weight_ih)
        rnn.weight_hh_l0.copy_(cell.weight_hh)
        rnn.bias_ih_l0.copy_(cell.bias_ih)
        rnn.bias_hh_l0.copy_(cell.bias_hh)
    projection = nn.Linear(*decoder["proj.weight"].shape[::-1])
    projection.load_state_dict({"weight": decoder["proj.weight"],
                                "bias": decoder["proj.bias"]})
    return {"source_embedding": nn.Embedding.from_pretrained(encoder["embedding.weight"]),
            "encoder": rnn.eval(),
            "target_embedding": nn.Embedding.from_pretrained(decoder["embedding.weight"]),
            "decoder": lstm_from(decoder).eval(), "projection": projection.eval()}


def item(request):
    tokens = torch.tensor(request["tokens"], dtype=torch.int64)
    limit = request.get("max_decode_length", MAX_DECODE)
    if MAX_DECODE > 0:
        limit = min(limit, MAX_DECODE) if limit > 0 else MAX_DECODE
    if limit <= 0:
        sys.exit(f"request {request['id']}: no decode limit, and the model has none")
    return {"data": tokens, "length": len(tokens), "limit": limit}


def run(model, batch):
    lengths = torch.tensor([r["length"] for r in batch])
    padded = nn.utils.rnn.pad_sequence([r["data"] for r in batch])
    packed = pack_padded_sequence(model["source_embedding"](padded), lengths,
                                  enforce_sorted=False)
    _, (h, c) = model["encoder"](packed)
    h, c = h[0], c[0]
    active = torch.arange(len(batch))
    token = torch.full((len(batch),), BOS, dtype=torch.int64)
    decoded = [[] for _ in batch]
    limits = torch.tensor([r["limit"] for r in batch])
    step = 0
    while len(active):
        h, c = model["decoder"](model["target_embedding"](token), (h, c))
        token = model["projection"](h).argmax(dim=1)
        step += 1
        for request, value in zip(active.tolist(), token.tolist()):
            decoded[request].append(value)
        going = (token != EOS) & (limits[active] > step)
        if not bool(going.all()):  # finished rows leave the batch
            keep = going.nonzero().flatten()
            active, token, h, c = active[keep], token[keep], h[keep], c[keep]
    return [{"tokens": torch.tensor(tokens, dtype=torch.int64)} for tokens in decoded]


def compare(name, have, want):
    return 0.0 if torch.equal(have.to(torch.int64), want.to(torch.int64)) else float("inf")


if __name__ == "__main__":
    peer_common.main(__doc__.splitlines()[0], load, item, run, compare,
                     lambda model: "LSTM encoder + greedy LSTMCell decoder")
