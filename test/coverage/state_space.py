"""State-space steps of the coverage corpus (issue 27): Mamba-1's recurrent `step`,
one mixer and a residual stack with RMSNorm (examples/mamba/mamba_step.py, plain
PyTorch as the reference implementation writes it).

What they take from cellc: per-row states of rank 2 ([d_inner, d_conv] and
[d_inner, d_state]), Slice and Concat within such rows, ReduceSum over a row's last
axis, Softplus, Neg (A = -exp(A_log)), SiLU as x * sigmoid(x), and RMSNorm (Pow,
ReduceMean, Sqrt, Div).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "mamba"))
from mamba_step import MambaMixerStep, MambaStackStep  # noqa: E402


def mamba_io(inp, state, new_state, out, d_model, layers, d_state=16, d_conv=4,
             expand=2):
    """The manifest roles of a stack's step: x in, y out, two states a layer."""
    d_inner = expand * d_model
    inputs, outputs = [inp("x", d_model)], [out("y", d_model)]
    for k in range(layers):
        inputs += [state("conv%d" % k, (d_inner, d_conv)),
                   state("ssm%d" % k, (d_inner, d_state))]
        outputs += [new_state("conv%d_next" % k, (d_inner, d_conv), "conv%d" % k),
                    new_state("ssm%d_next" % k, (d_inner, d_state), "ssm%d" % k)]
    return inputs, outputs


def cases(Case, inp, state, new_state, out, x):
    """One mixer and a two-layer stack, served equal to PyTorch at every opset."""
    one_in, one_out = mamba_io(inp, state, new_state, out, x, 1)
    return [
        Case("mamba_mixer", lambda: MambaMixerStep(x), one_in, one_out),
        Case("mamba_stack", lambda: MambaStackStep(x, 2, d_state=8, d_conv=3),
             *mamba_io(inp, state, new_state, out, x, 2, d_state=8, d_conv=3)),
    ]
