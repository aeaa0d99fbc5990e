#!/usr/bin/env python3
"""The PyTorch peer for seq2seq models: an nn.LSTM encoder over the packed
sources, then greedy decoding with nn.LSTMCell, the output projection and
argmax, step by step, the batch shrinking as requests reach the end token or
their limit: what a user would run instead of cellrun, on the same trace and
weights. With the attention example's decoder (examples/attention: Luong
`general` attention over the encoder's outputs, masked past each source),
every step attends over the padded encoder outputs of its batch.

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
    model = {"source_embedding": nn.Embedding.from_pretrained(encoder["embedding.weight"]),
             "encoder": rnn.eval(),
             "target_embedding": nn.Embedding.from_pretrained(decoder["embedding.weight"]),
             "decoder": lstm_from(decoder).eval(), "projection": projection.eval()}
    if "attn.weight" in decoder:  # Luong attention (examples/attention)
        attn = nn.Linear(*decoder["attn.weight"].shape[::-1], bias=False)
        attn.load_state_dict({"weight": decoder["attn.weight"]})
        combine = nn.Linear(*decoder["combine.weight"].shape[::-1])
        combine.load_state_dict({"weight": decoder["combine.weight"],
                                 "bias": decoder["combine.bias"]})
        model.update(attn=attn.eval(), combine=combine.eval())
    elif any(not k.startswith(("embedding.", "cell.", "proj.")) for k in decoder):
        sys.exit("pytorch_seq2seq.py: the decoder has weights this peer does not "
                 "know: " + ", ".join(sorted(decoder)))
    return model


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
    device = peer_common.DEVICE
    padded = nn.utils.rnn.pad_sequence([r["data"] for r in batch]).to(device)
    packed = pack_padded_sequence(model["source_embedding"](padded), lengths,
                                  enforce_sorted=False)
    outputs, (h, c) = model["encoder"](packed)
    h, c = h[0], c[0]
    if "attn" in model:  # the encoder's outputs, [batch, longest source, hidden]
        memory = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True)[0]
        masked = (torch.arange(memory.shape[1], device=device).unsqueeze(0)
                  >= lengths.to(device).unsqueeze(1))
    active = torch.arange(len(batch), device=device)
    token = torch.full((len(batch),), BOS, dtype=torch.int64, device=device)
    decoded = [[] for _ in batch]
    limits = torch.tensor([r["limit"] for r in batch], device=device)
    step = 0
    while len(active):
        h, c = model["decoder"](model["target_embedding"](token), (h, c))
        if "attn" in model:
            scores = torch.bmm(memory, model["attn"](h).unsqueeze(2)).squeeze(2)
            weights = torch.softmax(scores.masked_fill(masked, float("-inf")), dim=1)
            context = torch.bmm(weights.unsqueeze(1), memory).squeeze(1)
            token = model["projection"](
                torch.tanh(model["combine"](torch.cat([context, h], dim=1)))).argmax(dim=1)
        else:
            token = model["projection"](h).argmax(dim=1)
        step += 1
        for request, value in zip(active.tolist(), token.tolist()):
            decoded[request].append(value)
        going = (token != EOS) & (limits[active] > step)
        if not bool(going.all()):  # finished rows leave the batch
            keep = going.nonzero().flatten()
            active, token, h, c = active[keep], token[keep], h[keep], c[keep]
            if "attn" in model:
                memory, masked = memory[keep], masked[keep]
    return [{"tokens": torch.tensor(tokens, dtype=torch.int64)} for tokens in decoded]


def compare(name, have, want):
    return 0.0 if torch.equal(have.to(torch.int64), want.to(torch.int64)) else float("inf")


if __name__ == "__main__":
    peer_common.main(__doc__.splitlines()[0], load, item, run, compare,
                     lambda model: "LSTM encoder + greedy LSTMCell decoder" +
                     (" with Luong attention" if "attn" in model else ""))
