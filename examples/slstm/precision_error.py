#!/usr/bin/env python3
"""How far PyTorch's own fp32 and emulated-tf32 results of the sLSTM example fall from
float64, in the terms of the backend examples' test (|got - want| <= t |want| + t/10):
the smallest t each precision needs on random inputs drawn as generate.py draws them.

The two layers' GroupNorm makes the output's errors relative to each head's scale,
not to the element, and the exponential gating passes the gate errors on as relative
errors of c and n; so the sLSTM needs a looser bound than the other examples. tf32 is
emulated by rounding every matrix product's operands to 10 mantissa bits (nearest),
then accumulating in fp32, as cuBLAS's tf32 tensor-core path does.

  /usr/bin/python3 examples/slstm/precision_error.py BUILD/examples/slstm/h64/slstm.pt
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slstm_step import SlstmStack  # noqa: E402

HIDDEN, HEADS, LAYERS, BATCH, TRIALS = 64, 4, 2, 64, 5


def to_tf32(t):
    bits = t.float().contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def run(model, inputs, mode):
    """The model's outputs as float64, computed in `mode` (f64, fp32 or tf32)."""
    dtype = torch.float64 if mode == "f64" else torch.float32
    model = model.to(dtype)
    inputs = [t.to(dtype) for t in inputs]
    linear, matmul = F.linear, torch.Tensor.__matmul__
    if mode == "tf32":
        F.linear = lambda x, w, b=None: (linear(to_tf32(x), to_tf32(w)) +
                                         (0 if b is None else b))
        torch.Tensor.__matmul__ = lambda a, b: matmul(to_tf32(a), to_tf32(b))
    try:
        with torch.no_grad():
            return [o.double() for o in model(*inputs)]
    finally:
        F.linear, torch.Tensor.__matmul__ = linear, matmul


def main():
    model = SlstmStack(HIDDEN, HIDDEN, HEADS, LAYERS)
    model.load_state_dict(torch.load(sys.argv[1]))
    torch.manual_seed(1)
    needed = {"fp32": 0.0, "tf32": 0.0}
    for _ in range(TRIALS):
        inputs = [torch.randn(BATCH, HIDDEN)]
        for _ in range(LAYERS):
            inputs += [torch.randn(BATCH, HIDDEN), torch.randn(BATCH, HIDDEN),
                       torch.rand(BATCH, HIDDEN) + 0.5, torch.randn(BATCH, HIDDEN)]
        exact = run(model, inputs, "f64")
        for mode in needed:
            got = run(model, inputs, mode)
            worst = max(((g - e).abs() / (e.abs() + 0.1)).max().item()
                        for g, e in zip(got, exact))
            needed[mode] = max(needed[mode], worst)
    for mode, t in needed.items():
        print(f"{mode}: needs t >= {t:.2e} against float64 ({TRIALS} x {BATCH} rows)")


if __name__ == "__main__":
    main()
