#!/usr/bin/env python3
"""Stacked sLSTM layers of xLSTM (Beck et al. 2024), each normed by a group per head.

x -> sLSTM (4 heads, block-diagonal recurrence, exponential gating) -> GroupNorm ->
the next layer -> y; h, c, n, m a layer (slstm_step.py). It puts per-head products,
Max, Exp, Log of Sigmoid and InstanceNormalization through every backend. Writes
<out>/slstm.onnx.  Run with Debian's /usr/bin/python3 (torch, onnx).
"""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "common"))
sys.path.insert(0, here)
import export_util  # noqa: E402

SIZES = {
    "small": {"input": 64, "hidden": 64, "layers": 2},
    "paper": {"input": 1024, "hidden": 1024, "layers": 2},
}
HEADS = 4
STATES = ("h", "c", "n", "m")


def main():
    args = export_util.parse_args(__doc__.splitlines()[0], SIZES)
    cfg = SIZES[args.size]
    torch = export_util.setup(args)
    from slstm_step import SlstmStack

    hidden, layers = cfg["hidden"], cfg["layers"]
    m = SlstmStack(cfg["input"], hidden, HEADS, layers)

    def inputs(b):
        # n is a normaliser (positive in use), m a log-space stabiliser.
        states = []
        for _ in range(layers):
            states += [torch.randn(b, hidden), torch.randn(b, hidden),
                       torch.rand(b, hidden) + 0.5, torch.randn(b, hidden)]
        return [torch.randn(b, cfg["input"])] + states

    input_names, output_names = export_util.layer_state_names(STATES, layers)
    # n (a sum of gates) is positive in use.
    export_util.export_and_check(args, m, inputs, "slstm", input_names, output_names,
                                 positive_inputs=[n for n in input_names
                                                  if n.startswith("n")])


if __name__ == "__main__":
    main()
