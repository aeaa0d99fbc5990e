"""Mamba-1's recurrent step (Gu and Dao, 2023) in plain PyTorch, as its reference
implementation's `step` computes it: the mixer, RMSNorm, and a residual stack of
blocks x + mixer(RMSNorm(x)) with a final RMSNorm (MambaLMHeadModel's backbone).

A row's state is two matrices a layer: the convolution's shift register
[d_inner, d_conv] (drop the oldest column, append x, a weighted sum over the last
axis) and the SSM state [d_inner, d_state] (ssm * exp(dt * A) + x * dt * B, read out
against C). The reference's einsums are written as the broadcasts they are (opsets
9-11 have no Einsum). Shared by generate.py (the example), the coverage corpus
(test/coverage/state_space.py) and the PyTorch peer (bench/peers/mamba_peer.py).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RmsNorm(nn.Module):
    """Mamba's RMSNorm: x / sqrt(mean(x^2) + eps) * weight."""

    def __init__(self, width, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(width))

    def forward(self, x):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class MambaMixerStep(nn.Module):
    """One step of a Mamba-1 mixer: (x, conv_state, ssm_state) -> (y, conv, ssm)."""

    def __init__(self, d_model, d_state=16, d_conv=4, expand=2):
        super().__init__()
        d_inner = expand * d_model
        self.dt_rank = math.ceil(d_model / 16)
        self.d_state = d_state
        self.in_proj = nn.Linear(d_model, 2 * d_inner, bias=False)
        self.conv1d = nn.Conv1d(d_inner, d_inner, d_conv, groups=d_inner,
                                padding=d_conv - 1)
        self.x_proj = nn.Linear(d_inner, self.dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, d_inner)
        # S4D-real initialisation, as the reference: A = -(1..d_state) per channel.
        a = torch.arange(1, d_state + 1, dtype=torch.float32).repeat(d_inner, 1)
        self.A_log = nn.Parameter(torch.log(a))
        self.D = nn.Parameter(1.0 + 0.1 * torch.randn(d_inner))
        self.out_proj = nn.Linear(d_inner, d_model, bias=False)

    def forward(self, hidden, conv_state, ssm_state):
        x, z = self.in_proj(hidden).chunk(2, dim=-1)
        conv_state = torch.cat([conv_state[:, :, 1:], x.unsqueeze(-1)], dim=-1)
        x = torch.sum(conv_state * self.conv1d.weight.squeeze(1), dim=-1)
        x = F.silu(x + self.conv1d.bias)
        dt, b, c = torch.split(self.x_proj(x), [self.dt_rank, self.d_state, self.d_state],
                               dim=-1)
        dt = F.softplus(self.dt_proj(dt))
        a = -torch.exp(self.A_log)
        decay = torch.exp(dt.unsqueeze(-1) * a)
        ssm_state = ssm_state * decay + (x * dt).unsqueeze(-1) * b.unsqueeze(1)
        y = torch.sum(ssm_state * c.unsqueeze(1), dim=-1) + self.D * x
        y = y * F.silu(z)
        return self.out_proj(y), conv_state, ssm_state


class MambaStackStep(nn.Module):
    """Residual blocks x + mixer(RMSNorm(x)) and a final RMSNorm, as MambaLMHeadModel's
    backbone; states in layer order (conv0, ssm0, conv1, ssm1, ...)."""

    def __init__(self, d_model, layers, **mixer):
        super().__init__()
        self.norms = nn.ModuleList(RmsNorm(d_model) for _ in range(layers))
        self.mixers = nn.ModuleList(MambaMixerStep(d_model, **mixer)
                                    for _ in range(layers))
        self.norm_f = RmsNorm(d_model)

    def forward(self, x, *states):
        new_states = []
        for k, (norm, mixer) in enumerate(zip(self.norms, self.mixers)):
            y, conv, ssm = mixer(norm(x), states[2 * k], states[2 * k + 1])
            x = x + y
            new_states += [conv, ssm]
        return (self.norm_f(x), *new_states)
