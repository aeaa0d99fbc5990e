#!/usr/bin/env python3
"""A stack of RWKV-4 blocks (Peng et al. 2023), one recurrent step a cell step.

x (d_model features) -> blocks (LayerNorm, time mixing, channel mixing) -> LayerNorm,
emitted as y; five state vectors a block (rwkv_step.py). It puts Max (the stabilised
WKV recurrence), Exp, LayerNorm, a squared ReLU and five states a layer through every
backend. Writes <out>/rwkv.onnx.  Run with Debian's /usr/bin/python3 (torch, onnx).
"""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "common"))
sys.path.insert(0, here)
import export_util  # noqa: E402

SIZES = {
    "small": {"d_model": 64, "blocks": 2},
    "paper": {"d_model": 768, "blocks": 2},
}
STATES = ("att_x", "aa", "bb", "pp", "ffn_x")


def main():
    args = export_util.parse_args(__doc__.splitlines()[0], SIZES)
    cfg = SIZES[args.size]
    torch = export_util.setup(args)
    from rwkv_step import Rwkv4Stack

    width, blocks = cfg["d_model"], cfg["blocks"]
    m = Rwkv4Stack(width, 4 * width, blocks)

    def inputs(b):
        return [torch.randn(b, width) for _ in range(1 + 5 * blocks)]

    input_names, output_names = export_util.layer_state_names(STATES, blocks)
    # bb (a sum of exponentials) is positive in use.
    export_util.export_and_check(args, m, inputs, "rwkv", input_names, output_names,
                                 positive_inputs=[n for n in input_names
                                                  if n.startswith("bb")])


if __name__ == "__main__":
    main()
