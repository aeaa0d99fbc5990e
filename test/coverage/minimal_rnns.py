"""Minimal recurrent cells of the coverage corpus (issue 27): minGRU and minLSTM
(Feng et al., 2024, "Were RNNs all we needed?"), one step of their sequential form as
their reference code writes it. Their gates read only the step's input; the candidate
state is g(x) = x + 0.5 where x >= 0, else sigmoid(x); minGRU mixes it into h with
torch.lerp, minLSTM with gates normalised to sum to one.

What they take from cellc: comparisons (x >= 0 is GreaterOrEqual from opset 12, Not of
Less before it; torch.lerp exports a Less and two Wheres), Where, Split or Slice after
one Gemm.
"""

import torch
import torch.nn as nn


def _candidate(hidden):
    """minGRU's and minLSTM's g(x): linear above zero, a sigmoid below, continuous."""
    return torch.where(hidden >= 0, hidden + 0.5, torch.sigmoid(hidden))


class MinGruStep(nn.Module):
    def __init__(self, x, h):
        super().__init__()
        self.linear = nn.Linear(x, 2 * h)

    def forward(self, x, h):
        hidden, gate = self.linear(x).chunk(2, dim=-1)
        return torch.lerp(h, _candidate(hidden), torch.sigmoid(gate))


class MinLstmStep(nn.Module):
    def __init__(self, x, h):
        super().__init__()
        self.linear = nn.Linear(x, 3 * h)

    def forward(self, x, h):
        forget, update, hidden = self.linear(x).chunk(3, dim=-1)
        forget, update = torch.sigmoid(forget), torch.sigmoid(update)
        total = forget + update
        return forget / total * h + update / total * _candidate(hidden)


def cases(Case, inp, state, new_state, x, h):
    """Both served, equal to PyTorch, at every opset of the corpus."""
    io = ([inp("x", x), state("h", h)], [new_state("h_next", h, "h", True)])
    return [
        Case("min_gru", lambda: MinGruStep(x, h), *io),
        Case("min_lstm", lambda: MinLstmStep(x, h), *io),
    ]
