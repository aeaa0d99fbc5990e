#!/usr/bin/env python3
"""Binary constituency TreeLSTM (Tai et al. 2015, N-ary TreeLSTM with N = 2).

leaf:     token -> Embedding x; i, o, u = split(W x + b);
          c = sigmoid(i) * tanh(u); h = sigmoid(o) * tanh(c)
internal: i, f_l, f_r, o, u = split(U [h_l, h_r] + b);
          c = sigmoid(i) * tanh(u) + sigmoid(f_l) * c_l + sigmoid(f_r) * c_r;
          h = sigmoid(o) * tanh(c)

Writes <out>/leaf.onnx and <out>/internal.onnx.  Run with Debian's /usr/bin/python3.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import export_util  # noqa: E402

SIZES = {
    "small": {"vocab": 1000, "embed": 64, "hidden": 64},
    "paper": {"vocab": 30000, "embed": 1024, "hidden": 1024},
    "bench": {"vocab": 1000, "embed": 1024, "hidden": 1024},
}


def main():
    args = export_util.parse_args(__doc__.splitlines()[0], SIZES)
    cfg = SIZES[args.size]
    torch = export_util.setup(args)
    nn = torch.nn
    H = cfg["hidden"]

    class Leaf(nn.Module):
        def __init__(self, vocab, embed, hidden):
            super().__init__()
            self.hidden = hidden
            self.embedding = nn.Embedding(vocab, embed)
            self.W = nn.Linear(embed, 3 * hidden)   # rows: i, o, u

        def forward(self, token):
            x = self.embedding(token)
            # Static split sizes (no shape-dependent code): exports as Split.
            i, o, u = torch.split(self.W(x), self.hidden, dim=1)
            c = torch.sigmoid(i) * torch.tanh(u)
            h = torch.sigmoid(o) * torch.tanh(c)
            return h, c

    class Internal(nn.Module):
        def __init__(self, hidden):
            super().__init__()
            self.hidden = hidden
            self.U = nn.Linear(2 * hidden, 5 * hidden)   # rows: i, f_l, f_r, o, u

        def forward(self, h_l, c_l, h_r, c_r):
            gates = self.U(torch.cat([h_l, h_r], dim=1))
            i, f_l, f_r, o, u = torch.split(gates, self.hidden, dim=1)
            c = (torch.sigmoid(i) * torch.tanh(u)
                 + torch.sigmoid(f_l) * c_l + torch.sigmoid(f_r) * c_r)
            h = torch.sigmoid(o) * torch.tanh(c)
            return h, c

    leaf = Leaf(cfg["vocab"], cfg["embed"], H)
    internal = Internal(H)

    def leaf_inputs(b):
        return [torch.randint(0, cfg["vocab"], (b,), dtype=torch.int64)]

    def internal_inputs(b):
        return [torch.randn(b, H) for _ in range(4)]

    # No argmax or other discontinuity in either cell: the reference needs no row checks.
    export_util.export_and_check(args, leaf, leaf_inputs, "leaf", ["token"], ["h", "c"],
                                 vocab=cfg["vocab"])
    export_util.export_and_check(args, internal, internal_inputs, "internal",
                                 ["h_l", "c_l", "h_r", "c_r"], ["h", "c"])


if __name__ == "__main__":
    main()
