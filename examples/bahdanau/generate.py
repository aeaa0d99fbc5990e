#!/usr/bin/env python3
"""Seq2seq with Bahdanau (additive) attention: encoder token -> Embedding -> LSTMCell,
also writing the attention keys W_k h of each state; decoder scores v . tanh(keys +
W_q s) over the positions from its previous state s (masked to the request's source
length), the context (a weighted sum of the encoder's states) and the embedding into a
GRUCell, [h; context] -> Linear -> argmax.

Writes <out>/encoder.onnx and <out>/decoder.onnx.  Run with Debian's /usr/bin/python3.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import export_util  # noqa: E402

# positions: the longest source the decoder attends over (its memories' rows).
SIZES = {
    "small": {"vocab": 500, "embed": 64, "hidden": 64, "positions": 50},
    "paper": {"vocab": 30000, "embed": 1024, "hidden": 1024, "positions": 50},
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
            self.keys = nn.Linear(hidden, hidden)

        def forward(self, token, h, c):
            h_next, c_next = self.cell(self.embedding(token), (h, c))
            return h_next, c_next, self.keys(h_next)

    class Decoder(nn.Module):
        def __init__(self, vocab, embed, hidden):
            super().__init__()
            self.embedding = nn.Embedding(vocab, embed)
            self.query = nn.Linear(hidden, hidden, bias=False)
            self.v = nn.Linear(hidden, 1, bias=False)
            self.cell = nn.GRUCell(embed + hidden, hidden)
            self.proj = nn.Linear(2 * hidden, vocab)
            self.logits = None  # of the last call, for the reference's argmax margins

        def forward(self, token, h, keys, memory, mask):
            energy = torch.tanh(keys + self.query(h).unsqueeze(1))
            scores = self.v(energy).squeeze(2)
            scores = scores.masked_fill(mask == 0, float("-inf"))
            weights = torch.softmax(scores, dim=1)
            context = (weights.unsqueeze(2) * memory).sum(dim=1)
            h_next = self.cell(torch.cat([self.embedding(token), context], dim=1), h)
            self.logits = self.proj(torch.cat([h_next, context], dim=1))
            return torch.argmax(self.logits, dim=1), h_next

    V, E, H, S = cfg["vocab"], cfg["embed"], cfg["hidden"], cfg["positions"]
    enc = Encoder(V, E, H)
    dec = Decoder(V, E, H)

    def encoder_inputs(b):
        return [torch.randint(0, V, (b,), dtype=torch.int64),
                torch.randn(b, H), torch.randn(b, H)]

    def decoder_inputs(b):
        lengths = torch.randint(1, S + 1, (b, 1))
        mask = (torch.arange(S).unsqueeze(0) < lengths).float()
        return [torch.randint(0, V, (b,), dtype=torch.int64), torch.randn(b, H),
                torch.randn(b, S, H), torch.randn(b, S, H), mask]

    def decoder_bad_rows(ins, outs):
        # --reference: rows whose two largest logits are within the argmax margin get
        # new inputs (the reference's random mask has no zeros).
        return export_util.argmax_margin_rows(dec.logits)

    export_util.export_and_check(args, enc, encoder_inputs, "encoder",
                                 ["token", "h", "c"], ["h_next", "c_next", "keys"],
                                 vocab=V)
    export_util.export_and_check(args, dec, decoder_inputs, "decoder",
                                 ["token", "h", "keys", "memory", "mask"],
                                 ["next_token", "h_next"],
                                 vocab=V, reference_bad_rows=decoder_bad_rows)


if __name__ == "__main__":
    main()
