#!/usr/bin/env python3
"""GNMT-style stacked LSTM step: x -> LSTMCell -> LSTMCell, y = upper h + lower h.

Two layers, the second reading the first's output; y adds the second layer's input
back (GNMT's residual connection) for the layer above. All four states travel. One
fused kernel then covers results of different row widths (the first layer's states
next to the second GEMM's operand [h0_next, h1]).
Writes <out>/stacked.onnx.  Run with Debian's /usr/bin/python3 (torch, onnx).
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

    class StackedStep(nn.Module):
        def __init__(self, input_size, hidden):
            super().__init__()
            self.lower = nn.LSTMCell(input_size, hidden)
            self.upper = nn.LSTMCell(hidden, hidden)

        def forward(self, x, h0, c0, h1, c1):
            h0_next, c0_next = self.lower(x, (h0, c0))
            h1_next, c1_next = self.upper(h0_next, (h1, c1))
            return h0_next, c0_next, h1_next, c1_next, h1_next + h0_next

    m = StackedStep(cfg["input"], cfg["hidden"])
    H = cfg["hidden"]

    def inputs(b):
        return [torch.randn(b, cfg["input"])] + [torch.randn(b, H) for _ in range(4)]

    export_util.export_and_check(args, m, inputs, "stacked",
                                 ["x", "h0", "c0", "h1", "c1"],
                                 ["h0_next", "c0_next", "h1_next", "c1_next", "y"])


if __name__ == "__main__":
    main()
