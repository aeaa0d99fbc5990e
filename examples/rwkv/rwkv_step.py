"""RWKV-4's recurrent step (Peng et al. 2023) in plain PyTorch, as the `rwkv` package's
RNN mode computes it: a block is LayerNorm, time mixing (token shift against the
previous x, the WKV recurrence in its stabilised form: running numerator aa,
denominator bb and exponent pp, through torch.maximum) and channel mixing (token
shift, squared ReLU, a sigmoid receptance); five state vectors a block. A stack is
blocks in order and a final LayerNorm. The package starts pp at -1e30, cellrun every
state at 0: with aa = bb = 0 the outputs are the same (pp only scales zeros), though the
stabilised state may then hold the same numbers at another scale. Shared by generate.py
(the example) and the coverage corpus (test/coverage/linear_recurrences.py).
"""

import torch
import torch.nn as nn


class Rwkv4Block(nn.Module):
    """x, att_x, aa, bb, pp, ffn_x -> x_out, att_x, aa, bb, pp, ffn_x."""

    def __init__(self, width, ffn):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.time_mix_k = nn.Parameter(torch.rand(width))
        self.time_mix_v = nn.Parameter(torch.rand(width))
        self.time_mix_r = nn.Parameter(torch.rand(width))
        self.time_first = nn.Parameter(torch.randn(width) * 0.5)
        self.time_decay = nn.Parameter(torch.randn(width) * 0.5)
        self.key = nn.Linear(width, width, bias=False)
        self.value = nn.Linear(width, width, bias=False)
        self.receptance = nn.Linear(width, width, bias=False)
        self.output = nn.Linear(width, width, bias=False)
        self.ffn_mix_k = nn.Parameter(torch.rand(width))
        self.ffn_mix_r = nn.Parameter(torch.rand(width))
        self.ffn_key = nn.Linear(width, ffn, bias=False)
        self.ffn_receptance = nn.Linear(width, width, bias=False)
        self.ffn_value = nn.Linear(ffn, width, bias=False)

    def forward(self, x, att_x, aa, bb, pp, ffn_x):
        xx = self.ln1(x)
        k = self.key(xx * self.time_mix_k + att_x * (1 - self.time_mix_k))
        v = self.value(xx * self.time_mix_v + att_x * (1 - self.time_mix_v))
        r = torch.sigmoid(self.receptance(xx * self.time_mix_r +
                                          att_x * (1 - self.time_mix_r)))
        ww = self.time_first + k
        p = torch.maximum(pp, ww)
        e1, e2 = torch.exp(pp - p), torch.exp(ww - p)
        wkv = (e1 * aa + e2 * v) / (e1 * bb + e2)
        ww = pp - torch.exp(self.time_decay)
        p = torch.maximum(ww, k)
        e1, e2 = torch.exp(ww - p), torch.exp(k - p)
        x = x + self.output(r * wkv)
        new_att_x, aa, bb, pp = xx, e1 * aa + e2 * v, e1 * bb + e2, p
        xx = self.ln2(x)
        k = xx * self.ffn_mix_k + ffn_x * (1 - self.ffn_mix_k)
        r = xx * self.ffn_mix_r + ffn_x * (1 - self.ffn_mix_r)
        out = torch.sigmoid(self.ffn_receptance(r)) * self.ffn_value(
            torch.square(torch.relu(self.ffn_key(k))))
        return x + out, new_att_x, aa, bb, pp, xx


class Rwkv4Stack(nn.Module):
    """x and five states a block (att_x, aa, bb, pp, ffn_x per block, in block order)
    -> the final LayerNorm of x after every block, and the new states."""

    def __init__(self, width, ffn, blocks):
        super().__init__()
        self.blocks = nn.ModuleList(Rwkv4Block(width, ffn) for _ in range(blocks))
        self.ln_out = nn.LayerNorm(width)

    def forward(self, x, *states):
        new_states = []
        for k, block in enumerate(self.blocks):
            x, *block_states = block(x, *states[5 * k:5 * k + 5])
            new_states += block_states
        return (self.ln_out(x), *new_states)
