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

    export_util.export_and_check(args, enc, inputs, "encoder",
                                 ["token", "h", "c"], ["h_next", "c_next"])
    export_util.export_and_check(args, dec, inputs, "decoder",
                                 ["token", "h", "c"], ["next_token", "h_next", "c_next"])


if __name__ == "__main__":
    main()
