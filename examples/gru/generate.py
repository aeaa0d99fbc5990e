#!/usr/bin/env python3
"""GRU over feature vectors: (x, h) -> GRUCell -> h_next.

Writes <out>/gru.onnx.  Run with Debian's /usr/bin/python3 (torch, onnx).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import export_util  # noqa: E402

SIZES = {
    "small": {"input": 64, "hidden": 64},
    "paper": {"input": 1024, "hidden": 1024},
    # The benchmarks' GRU (the GPU check's, against cuDNN): the paper's size.
    "bench": {"input": 1024, "hidden": 1024},
}


def main():
    args = export_util.parse_args(__doc__.splitlines()[0], SIZES)
    cfg = SIZES[args.size]
    torch = export_util.setup(args)
    nn = torch.nn

    class GRUStep(nn.Module):
        def __init__(self, input_size, hidden):
            super().__init__()
            self.cell = nn.GRUCell(input_size, hidden)

        def forward(self, x, h):
            return self.cell(x, h)

    m = GRUStep(cfg["input"], cfg["hidden"])

    def inputs(b):
        return [torch.randn(b, cfg["input"]), torch.randn(b, cfg["hidden"])]

    export_util.export_and_check(args, m, inputs, "gru", ["x", "h"], ["h_next"])


if __name__ == "__main__":
    main()
