#!/usr/bin/env python3
"""Seq2seq LSTM with Luong attention: encoder token -> Embedding -> LSTMCell; decoder
token -> Embedding -> LSTMCell, general attention over the encoder's states (masked to
the request's source length), tanh(W [context; h]) -> Linear -> argmax.

Writes <out>/encoder.onnx and <out>/decoder.onnx.  Run with Debian's /usr/bin/python3.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import export_util  # noqa: E402

# positions: the longest source the decoder attends over (its memory's rows); the
# WMT15 workload of the benchmarks (bench/workloads/wmt15-max50.csv) stays within 50.
SIZES = {
    "small": {"vocab": 500, "embed": 64, "hidden": 64, "positions": 50},
    "paper": {"vocab": 30000, "embed": 1024, "hidden": 1024, "positions": 50},
    "bench": {"vocab": 1000, "embed": 1024, "hidden": 1024, "positions": 50},
}


def main():
    args = export_util.parse_args(__doc__.splitlines()[0], SIZES)
    cfg = SIZES[args.size]
    torch = export_util.setup(args)
    nn = torch.nn

    class Encoder(nn.Module):
        def __init__(self, vocab, embed, hidden):
            super().__init__()
            self.embedding = nn.Embedding(vocab, embed)
            self.cell = nn.LSTMCell(embed, hidden)

        def forward(self, token, h, c):
            h_next, c_next = self.cell(self.embedding(token), (h, c))
            return h_next, c_next

    class Decoder(nn.Module):
        def __init__(self, vocab, embed, hidden):
            super().__init__()
            self.embedding = nn.Embedding(vocab, embed)
            self.cell = nn.LSTMCell(embed, hidden)
            self.attn = nn.Linear(hidden, hidden, bias=False)
            self.combine = nn.Linear(2 * hidden, hidden)
            self.proj = nn.Linear(hidden, vocab)
            self.logits = None  # of the last call, for the reference's argmax margins

        def forward(self, token, h, c, memory, mask):
            h_next, c_next = self.cell(self.embedding(token), (h, c))
            scores = torch.bmm(memory, self.attn(h_next).unsqueeze(2)).squeeze(2)
            scores = scores.masked_fill(mask == 0, float("-inf"))
            weights = torch.softmax(scores, dim=1)
            context = torch.bmm(weights.unsqueeze(1), memory).squeeze(1)
            attended = torch.tanh(self.combine(torch.cat([context, h_next], dim=1)))
            self.logits = self.proj(attended)
            return torch.argmax(self.logits, dim=1), h_next, c_next

    V, E, H, S = cfg["vocab"], cfg["embed"], cfg["hidden"], cfg["positions"]
    enc = Encoder(V, E, H)
    dec = Decoder(V, E, H)

    def encoder_inputs(b):
        return [torch.randint(0, V, (b,), dtype=torch.int64),
                torch.randn(b, H), torch.randn(b, H)]

    def decoder_inputs(b):
        # The mask is 1 for a source of random length, 0 past it.
        lengths = torch.randint(1, S + 1, (b, 1))
        mask = (torch.arange(S).unsqueeze(0) < lengths).float()
        return encoder_inputs(b) + [torch.randn(b, S, H), mask]

    def decoder_bad_rows(ins, outs):
        # --reference: next_token is an argmax, so rows whose two largest logits are
        # within REFERENCE_ARGMAX_MARGIN get new inputs (the reference's random mask
        # has no zeros: every position is attended).
        return export_util.argmax_margin_rows(dec.logits)

    export_util.export_and_check(args, enc, encoder_inputs, "encoder",
                                 ["token", "h", "c"], ["h_next", "c_next"], vocab=V)
    export_util.export_and_check(args, dec, decoder_inputs, "decoder",
                                 ["token", "h", "c", "memory", "mask"],
                                 ["next_token", "h_next", "c_next"],
                                 vocab=V, reference_bad_rows=decoder_bad_rows)


if __name__ == "__main__":
    main()
