"""RWKV-4 and xLSTM's sLSTM in the coverage corpus (issue 27): one recurrent step each,
as their reference inference code writes it, in plain PyTorch
(examples/rwkv/rwkv_step.py, examples/slstm/slstm_step.py).

RWKV-4 (Peng et al. 2023; the `rwkv` package's RNN mode): LayerNorm, time mixing with
the stabilised WKV recurrence (running numerator aa, denominator bb, exponent pp) and
channel mixing; five state vectors a block. The package starts pp at -1e30, cellrun
every state at 0 (a manifest has no initial values yet): with aa = bb = 0 the outputs
are the same either way (pp only scales zeros), but the stabilised state may then hold
the same numbers at another scale, so the corpus steps PyTorch from zeros too and
compares the states as well as the outputs.

sLSTM (Beck et al. 2024, xLSTM): four gates from the input and a block-diagonal
recurrent product (one matrix per head), exponential gating stabilised by the running
maximum m; state h, c, n, m; and with xLSTM's group norm of its output.

What they take from cellc: LayerNorm (decomposed, or LayerNormalization at 17), Max
(torch.maximum, imported as Where over Greater), Exp, Sigmoid, Log of Sigmoid, Relu,
square (Pow 2), Div, per-head products (Slice, MatMul, Concat), and GroupNorm
(InstanceNormalization over [batch, groups, positions]).
"""

import os
import sys

_examples = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                         "examples")
sys.path.insert(0, os.path.join(_examples, "rwkv"))
sys.path.insert(0, os.path.join(_examples, "slstm"))
from rwkv_step import Rwkv4Block  # noqa: E402
from slstm_step import SlstmGroupNormStep, SlstmStep  # noqa: E402


def cases(Case, inp, state, new_state, out, x, h):
    """An RWKV-4 block and a 4-head sLSTM, without and with a group norm of its output,
    served equal to PyTorch at every opset."""
    rwkv_in = [inp("x", x)] + [state(s, x) for s in ("att_x", "aa", "bb", "pp", "ffn_x")]
    rwkv_out = [out("y", x)] + [new_state(s + "_next", x, s)
                                for s in ("att_x", "aa", "bb", "pp", "ffn_x")]
    slstm_in = [inp("x", x)] + [state(s, h) for s in ("h", "c", "n", "m")]
    slstm_out = [new_state("h_next", h, "h", True)] + [
        new_state(s + "_next", h, s) for s in ("c", "n", "m")]
    return [
        Case("rwkv4_block", lambda: Rwkv4Block(x, 2 * x), rwkv_in, rwkv_out),
        Case("slstm", lambda: SlstmStep(x, h, 4), slstm_in, slstm_out),
        # The group norm divides h's fp32 rounding by the spread of 8 values: against
        # the float64 module ours is off by up to 7.6e-7 and PyTorch's fp32 by 8.2e-7,
        # so the two may differ by more than 1e-6 near zero.
        Case("slstm_group_norm", lambda: SlstmGroupNormStep(x, h, 4), slstm_in,
             [out("y", h), new_state("h_next", h, "h")] + slstm_out[1:], atol=3e-6),
    ]
