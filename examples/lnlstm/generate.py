#!/usr/bin/env python3
"""Layer-normalised LSTM step with a skip flag and a GELU head.

Gates and cell are layer-normalised (Ba et al. 2016); rows whose `update` flag is 0
keep their state (Skip-RNN style: Equal and Where); y is the log-softmax of a GELU MLP
over the new h. It exercises the row reductions (ReduceMean, ReduceMax, ReduceSum),
Sqrt, Pow, Erf, Exp, Log, Equal and Where in every backend. Writes <out>/lnlstm.onnx.  Run with Debian's /usr/bin/python3 (torch, onnx).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import export_util  # noqa: E402

SIZES = {
    "small": {"input": 64, "hidden": 64, "head": 128, "classes": 32},
    "paper": {"input": 1024, "hidden": 1024, "head": 1024, "classes": 256},
}


def main():
    args = export_util.parse_args(__doc__.splitlines()[0], SIZES)
    cfg = SIZES[args.size]
    torch = export_util.setup(args)
    nn = torch.nn

    class LayerNormLstmStep(nn.Module):
        def __init__(self, input_size, hidden, head, classes):
            super().__init__()
            self.ih = nn.Linear(input_size, 4 * hidden, bias=False)
            self.hh = nn.Linear(hidden, 4 * hidden)
            self.ln_gates = nn.LayerNorm(4 * hidden)
            self.ln_cell = nn.LayerNorm(hidden)
            self.head = nn.Sequential(nn.Linear(hidden, head), nn.GELU(),
                                      nn.Linear(head, classes))

        def forward(self, x, update, h, c):
            gates = self.ln_gates(self.ih(x) + self.hh(h))
            i, f, g, o = gates.chunk(4, dim=1)
            c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h2 = torch.sigmoid(o) * torch.tanh(self.ln_cell(c2))
            keep = update == 1
            h_next = torch.where(keep, h2, h)
            c_next = torch.where(keep, c2, c)
            return h_next, c_next, torch.log_softmax(self.head(h_next), dim=1)

    m = LayerNormLstmStep(cfg["input"], cfg["hidden"], cfg["head"], cfg["classes"])
    H = cfg["hidden"]

    def inputs(b):
        return [torch.randn(b, cfg["input"]),
                torch.randint(0, 2, (b, 1), dtype=torch.int64),
                torch.randn(b, H), torch.randn(b, H)]

    # int64 inputs are drawn from [0, vocab): the flag is 0 or 1.
    export_util.export_and_check(args, m, inputs, "lnlstm",
                                 ["x", "update", "h", "c"], ["h_next", "c_next", "y"],
                                 vocab=2)


if __name__ == "__main__":
    main()
