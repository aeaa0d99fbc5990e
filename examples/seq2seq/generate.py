#!/usr/bin/env python3
"""Seq2seq LSTM encoder + greedy decoder (token -> Embedding -> LSTMCell [-> Linear -> argmax]).

Writes <out>/encoder.onnx and <out>/decoder.onnx.  Run with Debian's /usr/bin/python3.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import export_util  # noqa: E402

SIZES = {
    "small": {"vocab": 500, "embed": 64, "hidden": 64},
    "paper": {"vocab": 30000, "embed": 1024, "hidden": 1024},
    "bench": {"vocab": 1000, "embed": 1024, "hidden": 1024},
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
            self.proj = nn.Linear(hidden, vocab)

        def forward(self, token, h, c):
            h_next, c_next = self.cell(self.embedding(token), (h, c))
            logits = self.proj(h_next)
            next_token = torch.argmax(logits, dim=1)
            return next_token, h_next, c_next

    V, E, H = cfg["vocab"], cfg["embed"], cfg["hidden"]
    enc = Encoder(V, E, H)
    dec = Decoder(V, E, H)

    def inputs(b):
        return [torch.randint(0, V, (b,), dtype=torch.int64),
                torch.randn(b, H), torch.randn(b, H)]

    def decoder_bad_rows(ins, outs):
        # --reference: next_token is an argmax, so a row whose two largest logits are
        # within REFERENCE_ARGMAX_MARGIN could flip under a 1e-5 difference in h_next;
        # such rows get new inputs.  The logits are recomputed from h_next with the same
        # Linear (and must give the same argmax).
        logits = dec.proj(outs["h_next"])
        if not torch.equal(torch.argmax(logits, dim=1), outs["next_token"]):
            sys.exit("error: decoder: recomputed logits disagree with next_token")
        return export_util.argmax_margin_rows(logits)

    export_util.export_and_check(args, enc, inputs, "encoder",
                                 ["token", "h", "c"], ["h_next", "c_next"], vocab=V)
    export_util.export_and_check(args, dec, inputs, "decoder",
                                 ["token", "h", "c"], ["next_token", "h_next", "c_next"],
                                 vocab=V, reference_bad_rows=decoder_bad_rows)


if __name__ == "__main__":
    main()
