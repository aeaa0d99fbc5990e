#!/usr/bin/env python3
"""A residual stack of Mamba-1 blocks (Gu and Dao 2023), one recurrent step a cell step.

x (d_model features) -> [x + mixer(RMSNorm(x))] per layer -> RMSNorm, emitted as y.
Each layer keeps two per-request states of rank 2: the convolution's shift register
[d_inner, d_conv] and the SSM state [d_inner, d_state] (mamba_step.py). It puts
rank-2 states, Slice and Concat within a row, ReduceSum over a row's axis, Softplus,
Neg and RMSNorm through every backend. Writes <out>/mamba.onnx.  Run with Debian's
/usr/bin/python3 (torch, onnx).
"""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "common"))
sys.path.insert(0, here)
import export_util  # noqa: E402

# d_state 16, d_conv 4, expand 2 as Mamba-1's defaults.
SIZES = {
    "small": {"d_model": 64, "layers": 2},
    "paper": {"d_model": 768, "layers": 4},
}
D_STATE, D_CONV, EXPAND = 16, 4, 2


def main():
    args = export_util.parse_args(__doc__.splitlines()[0], SIZES)
    cfg = SIZES[args.size]
    torch = export_util.setup(args)
    from mamba_step import MambaStackStep

    d_model, layers = cfg["d_model"], cfg["layers"]
    d_inner = EXPAND * d_model
    m = MambaStackStep(d_model, layers, d_state=D_STATE, d_conv=D_CONV, expand=EXPAND)

    def inputs(b):
        states = []
        for _ in range(layers):
            states += [torch.randn(b, d_inner, D_CONV), torch.randn(b, d_inner, D_STATE)]
        return [torch.randn(b, d_model)] + states

    export_util.export_and_check(args, m, inputs, "mamba",
                                 *export_util.layer_state_names(("conv", "ssm"), layers))


if __name__ == "__main__":
    main()
