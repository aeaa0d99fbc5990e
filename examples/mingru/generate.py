#!/usr/bin/env python3
"""Two stacked minGRU layers (Feng et al. 2024): x -> minGRU -> minGRU, h1 emitted.

A minGRU layer's update gate and candidate come from its input alone (one Linear);
the candidate is g(x) = x + 0.5 where x >= 0, else sigmoid(x), and torch.lerp mixes
it into h. The second layer reads the first's new h. It puts comparisons
(GreaterOrEqual, and the Less of torch.lerp's export), Where and Split through every
backend. Writes <out>/mingru.onnx.  Run with Debian's /usr/bin/python3 (torch, onnx).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import export_util  # noqa: E402

SIZES = {
    "small": {"input": 64, "hidden": 64},
    "paper": {"input": 1024, "hidden": 1024},
}


def main():
    args = export_util.parse_args(__doc__.splitlines()[0], SIZES)
    cfg = SIZES[args.size]
    torch = export_util.setup(args)
    nn = torch.nn

    def min_gru(linear, x, h):
        hidden, gate = linear(x).chunk(2, dim=1)
        candidate = torch.where(hidden >= 0, hidden + 0.5, torch.sigmoid(hidden))
        return torch.lerp(h, candidate, torch.sigmoid(gate))

    class MinGruStack(nn.Module):
        def __init__(self, input_size, hidden):
            super().__init__()
            self.lower = nn.Linear(input_size, 2 * hidden)
            self.upper = nn.Linear(hidden, 2 * hidden)

        def forward(self, x, h0, h1):
            h0_next = min_gru(self.lower, x, h0)
            return h0_next, min_gru(self.upper, h0_next, h1)

    m = MinGruStack(cfg["input"], cfg["hidden"])
    H = cfg["hidden"]

    def inputs(b):
        return [torch.randn(b, cfg["input"]), torch.randn(b, H), torch.randn(b, H)]

    export_util.export_and_check(args, m, inputs, "mingru", ["x", "h0", "h1"],
                                 ["h0_next", "h1_next"])


if __name__ == "__main__":
    main()
