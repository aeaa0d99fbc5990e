#!/usr/bin/env python3
"""LSTM language-model step: token -> Embedding -> LSTMCell -> (h_next, c_next).

Writes <out>/lstm.onnx.  Run with Debian's /usr/bin/python3 (torch, onnx).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import export_util  # noqa: E402

SIZES = {
    "small": {"vocab": 1000, "embed": 64, "hidden": 64},
    "paper": {"vocab": 30000, "embed": 1024, "hidden": 1024},
    # The paper's cell with a small vocabulary: the same GEMMs, an artifact
    # small enough to carry to a GPU machine (the benchmarks' model).
    "bench": {"vocab": 1000, "embed": 1024, "hidden": 1024},
    # Almost no arithmetic: what the runtime's host path costs a step
    # (bench/host_bench, `cellrun run` on docs/performance.md's host case).
    "tiny": {"vocab": 1000, "embed": 16, "hidden": 16},
}


def main():
    args = export_util.parse_args(__doc__.splitlines()[0], SIZES)
    cfg = SIZES[args.size]
    torch = export_util.setup(args)
    nn = torch.nn

    class LSTMStep(nn.Module):
        def __init__(self, vocab, embed, hidden):
            super().__init__()
            self.embedding = nn.Embedding(vocab, embed)
            self.cell = nn.LSTMCell(embed, hidden)

        def forward(self, token, h, c):
            x = self.embedding(token)
            h_next, c_next = self.cell(x, (h, c))
            return h_next, c_next

    m = LSTMStep(cfg["vocab"], cfg["embed"], cfg["hidden"])
    H = cfg["hidden"]

    def inputs(b):
        return [torch.randint(0, cfg["vocab"], (b,), dtype=torch.int64),
                torch.randn(b, H), torch.randn(b, H)]

    export_util.export_and_check(args, m, inputs, "lstm",
                                 ["token", "h", "c"], ["h_next", "c_next"],
                                 vocab=cfg["vocab"])


if __name__ == "__main__":
    main()
