#!/usr/bin/env python3
"""The ONNX Runtime peer for seq2seq models: the encoder as ONNX's LSTM
operator over the batch's sources with `sequence_lens`, then greedy decoding
in a step loop around an InferenceSession of the decoder cell (the very
decoder.onnx that cellc compiles), the batch shrinking as requests reach the
end token or their limit: what a user of ONNX Runtime would run instead of
cellrun, on the same trace and weights.

    onnxruntime_seq2seq.py --weights DIR --trace TRACE.jsonl --out RESULTS.jsonl
                           [--bos 1] [--eos 2] [--max-decode 64] [other options
                           of pytorch_chain.py]

DIR holds the generator's encoder.pt, decoder.pt and decoder.onnx
(examples/seq2seq or examples/attention generate.py). With the attention
example's decoder (inputs token, h, c, memory [batch, S, hidden], mask
[batch, S]), the memory is the encoder's h after each source step, zero past
the source and masked there. Requests, buckets, check (decoded tokens
exactly) and results are those of pytorch_seq2seq.py. CPU only; needs
onnxruntime (scripts/python-test-env.sh installs it in the build's venv).
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# First: it says where onnxruntime is missing.
from onnxruntime_chain import build_graph, identify, make_session  # noqa: E402
import onnx  # noqa: E402
import peer_common  # noqa: E402
import pytorch_seq2seq  # noqa: E402  (reads --bos, --eos, --max-decode)


def load(weights, threads):
    if not os.path.isdir(weights):
        sys.exit(f"{weights}: expected the directory of encoder.pt, decoder.pt "
                 "and decoder.onnx")
    encoder_graph, gates = build_graph(torch.load(os.path.join(weights, "encoder.pt")))
    if gates != 4:
        sys.exit("onnxruntime_seq2seq.py: the encoder is not an LSTM")
    decoder_path = os.path.join(weights, "decoder.onnx")
    decoder = onnx.load(decoder_path)
    inputs = [i.name for i in decoder.graph.input
              if i.name not in {w.name for w in decoder.graph.initializer}]
    attention = "memory" in inputs
    expected = ["token", "h", "c"] + (["memory", "mask"] if attention else [])
    if inputs != expected:
        sys.exit(f"{decoder_path}: inputs {inputs}, expected {expected}")
    positions = 0
    if attention:
        memory = next(i for i in decoder.graph.input if i.name == "memory")
        positions = memory.type.tensor_type.shape.dim[1].dim_value
    return {"encoder": make_session(encoder_graph, threads),
            "decoder": make_session(decoder, threads),
            "attention": attention, "positions": positions}


def run(model, batch):
    lengths = np.array([r["length"] for r in batch], dtype=np.int32)
    steps = int(lengths.max())
    tokens = np.zeros((steps, len(batch)), dtype=np.int64)
    for b, r in enumerate(batch):
        tokens[:r["length"], b] = r["data"].numpy()
    y, h, c = model["encoder"].run(None, {"tokens": tokens, "sequence_lens": lengths})
    h, c = h[0], c[0]
    feeds = {}
    if model["attention"]:
        positions = model["positions"]
        if steps > positions:
            sys.exit(f"a source of {steps} tokens; the decoder attends over {positions}")
        memory = np.zeros((len(batch), positions, h.shape[1]), dtype=np.float32)
        memory[:, :steps] = y[:, 0].transpose(1, 0, 2)  # zero past each source
        mask = (np.arange(positions)[None, :] < lengths[:, None]).astype(np.float32)
        feeds = {"memory": memory, "mask": mask}
    active = np.arange(len(batch))
    token = np.full(len(batch), pytorch_seq2seq.BOS, dtype=np.int64)
    limits = np.array([r["limit"] for r in batch])
    decoded = [[] for _ in batch]
    step = 0
    while len(active):
        token, h, c = model["decoder"].run(["next_token", "h_next", "c_next"],
                                           dict(feeds, token=token, h=h, c=c))
        step += 1
        for request, value in zip(active.tolist(), token.tolist()):
            decoded[request].append(value)
        going = (token != pytorch_seq2seq.EOS) & (limits[active] > step)
        if not going.all():  # finished rows leave the batch
            active, token, h, c = active[going], token[going], h[going], c[going]
            feeds = {name: value[going] for name, value in feeds.items()}
    return [{"tokens": torch.tensor(tokens, dtype=torch.int64)} for tokens in decoded]


if __name__ == "__main__":
    if "--device" in sys.argv and sys.argv[sys.argv.index("--device") + 1] != "cpu":
        sys.exit("onnxruntime_seq2seq.py: the ONNX Runtime peer runs on the CPU only")
    peer_common.main(__doc__.splitlines()[0], load, pytorch_seq2seq.item, run,
                     pytorch_seq2seq.compare,
                     lambda model: "ONNX LSTM encoder + decoder.onnx step loop" +
                     (" with Luong attention" if model["attention"] else ""),
                     identify)
