"""Mamba-1 stacks as a PyTorch user serves them without us: the reference
`step` (examples/mamba/mamba_step.py, the same module the example exports)
looped over the steps of a padded batch, every request's conv and SSM states
in one batch tensor per layer from zeros (a fresh request), as the reference
implementation's generation loop keeps its inference cache. Rows past their
request's end keep stepping until the batch's longest request ends (a static
batch: nobody joins or leaves in the middle). Used by pytorch_chain.py for
state dicts of examples/mamba (`mixers.<k>.*`, `norms.<k>.weight`,
`norm_f.weight`).
"""
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "mamba"))
from mamba_step import MambaStackStep  # noqa: E402


def is_mamba(state):
    return "mixers.0.in_proj.weight" in state and "norm_f.weight" in state


def build(state):
    """The stack of the state dict's sizes, with its weights."""
    layers = len({key.split(".")[1] for key in state if key.startswith("mixers.")})
    in_proj = state["mixers.0.in_proj.weight"]        # [2 d_inner, d_model]
    d_model, d_inner = in_proj.shape[1], in_proj.shape[0] // 2
    d_state = state["mixers.0.A_log"].shape[1]
    d_conv = state["mixers.0.conv1d.weight"].shape[2]
    stack = MambaStackStep(d_model, layers, d_state=d_state, d_conv=d_conv,
                           expand=d_inner // d_model)
    stack.load_state_dict(state)
    return stack.eval()


def run(stack, batch):
    """Per request: y per step ("steps") and every state's last value
    (final_conv<k>_next, final_ssm<k>_next, as the example names them)."""
    device = next(stack.parameters()).device
    padded = nn.utils.rnn.pad_sequence([r["data"] for r in batch]).to(device)
    rows = padded.shape[1]
    states = []
    for mixer in stack.mixers:
        d_inner, d_conv = mixer.conv1d.weight.shape[0], mixer.conv1d.weight.shape[2]
        states += [torch.zeros(rows, d_inner, d_conv, device=device),
                   torch.zeros(rows, d_inner, mixer.d_state, device=device)]
    lengths = [r["length"] for r in batch]
    ys = torch.empty(padded.shape[0], rows, padded.shape[2], device=device)
    finals = [[None] * len(states) for _ in batch]
    with torch.no_grad():
        for t in range(padded.shape[0]):
            y, *states = stack(padded[t], *states)
            ys[t] = y
            for b, length in enumerate(lengths):
                if length == t + 1:
                    finals[b] = [s[b] for s in states]
    results = []
    for b, r in enumerate(batch):
        outputs = {"steps": ys[:r["length"], b, :]}
        for k in range(len(stack.mixers)):
            outputs["final_conv%d_next" % k] = finals[b][2 * k]
            outputs["final_ssm%d_next" % k] = finals[b][2 * k + 1]
        results.append(outputs)
    return results
