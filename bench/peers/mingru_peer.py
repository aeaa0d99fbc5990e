"""minGRU stacks (Feng et al. 2024) as a PyTorch user serves them: each layer
over a padded batch of whole sequences, its Linear over every step at once
(a minGRU's gates depend on its input only) and then the recurrence as a
loop of element-wise steps (the paper's sequential mode). The paper's
log-space parallel scan (logcumsumexp) gives the same h within 1e-5 and ran
2-3x slower here (hidden 1024, 2 threads, T 30-60, batch 16-256:
bench/results/2026-11-28-cpu-mingru/README.md), so the peer runs the loop.
Used by pytorch_chain.py for state dicts of examples/mingru (`lower.*`,
`upper.*`: two nn.Linear(in, 2H), the upper reading the lower's h); h
starts at zero, as in a fresh request.
"""
import torch
from torch import nn


class MinGruLayer(nn.Module):
    def __init__(self, linear):
        super().__init__()
        self.linear = linear

    def forward(self, x):
        """x [T, B, in] -> h [T, B, H] from h_0 = 0:
        h_t = lerp(h_{t-1}, g(h~_t), sigmoid(z_t))."""
        hidden, gate = self.linear(x).chunk(2, dim=-1)
        candidate = torch.where(hidden >= 0, hidden + 0.5, torch.sigmoid(hidden))
        update = torch.sigmoid(gate)
        out = torch.empty_like(candidate)
        h = torch.zeros_like(candidate[0])
        for t in range(x.shape[0]):
            h = torch.lerp(h, candidate[t], update[t])
            out[t] = h
        return out


class MinGruStack(nn.Module):
    def __init__(self, state):
        super().__init__()
        layers = []
        for name in ("lower", "upper"):
            weight = state[f"{name}.weight"]
            linear = nn.Linear(weight.shape[1], weight.shape[0])
            with torch.no_grad():
                linear.weight.copy_(weight)
                linear.bias.copy_(state[f"{name}.bias"])
            layers.append(MinGruLayer(linear))
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        """x [T, B, in] -> the h sequence of every layer, lowest first."""
        outputs = []
        for layer in self.layers:
            x = layer(x)
            outputs.append(x)
        return outputs


def is_mingru(state):
    return "lower.weight" in state and "upper.weight" in state


def run(stack, batch):
    """Per request: its upper layer's h per step ("steps") and each layer's
    last h (final_h0_next, final_h1_next, as the example names its states)."""
    padded = nn.utils.rnn.pad_sequence([r["data"] for r in batch])
    lower, upper = stack(padded.to(next(stack.parameters()).device))
    results = []
    for b, r in enumerate(batch):
        last = r["length"] - 1
        results.append({"steps": upper[:r["length"], b, :],
                        "final_h0_next": lower[last, b], "final_h1_next": upper[last, b]})
    return results
