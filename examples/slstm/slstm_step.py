"""xLSTM's sLSTM step (Beck et al. 2024) in plain PyTorch: four gates from the input
and a block-diagonal recurrent product (one matrix per head), an exponential input
gate and a sigmoid forget gate in log space, stabilised by the running maximum m;
state h, c, n, m. m starts at 0 in cellrun (the reference starts the first step from
the input gate alone; h = o * c / n does not depend on the stabiliser). With xLSTM's
multi-head norm, nn.GroupNorm with a group per head over h. Shared by generate.py (the
example) and the coverage corpus (test/coverage/linear_recurrences.py).
"""

import torch
import torch.nn as nn


class SlstmStep(nn.Module):
    """x, h, c, n, m -> h, c, n, m with `heads` block-diagonal recurrent matrices."""

    def __init__(self, inputs, hidden, heads):
        super().__init__()
        self.heads, self.head = heads, hidden // heads
        self.input = nn.Linear(inputs, 4 * hidden)
        self.recurrent = nn.Parameter(torch.randn(heads, self.head, 4 * self.head) /
                                      self.head ** 0.5)

    def forward(self, x, h, c, n, m):
        # Per head: h_k R_k, then the gates regrouped as [i | f | z | o] over all heads.
        parts = [h[:, k * self.head:(k + 1) * self.head] @ self.recurrent[k]
                 for k in range(self.heads)]
        per_gate = [torch.cat([p[:, g * self.head:(g + 1) * self.head] for p in parts],
                              dim=-1) for g in range(4)]
        i_raw, f_raw, z_raw, o_raw = (self.input(x).chunk(4, dim=-1)[g] + per_gate[g]
                                      for g in range(4))
        log_f_plus_m = m + torch.log(torch.sigmoid(f_raw))
        m_new = torch.maximum(i_raw, log_f_plus_m)
        i_gate = torch.exp(i_raw - m_new)
        f_gate = torch.exp(log_f_plus_m - m_new)
        c_new = f_gate * c + i_gate * torch.tanh(z_raw)
        n_new = f_gate * n + i_gate
        h_new = torch.sigmoid(o_raw) * c_new / n_new
        return h_new, c_new, n_new, m_new


class SlstmGroupNormStep(nn.Module):
    """The sLSTM step with xLSTM's multi-head norm on its output: nn.GroupNorm with a
    group per head over h (as [batch, hidden, 1], the shape GroupNorm takes), which
    PyTorch exports as Reshape, InstanceNormalization, Reshape, Mul, Add."""

    def __init__(self, inputs, hidden, heads):
        super().__init__()
        self.step = SlstmStep(inputs, hidden, heads)
        self.norm = nn.GroupNorm(heads, hidden)
        # Not the identity scale of a fresh module. The shift stays 0: added to
        # normalised values near zero it would leave fp32 rounding (of PyTorch's
        # or ours) above the corpus's 1e-5 relative in a few elements.
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)

    def forward(self, x, h, c, n, m):
        h, c, n, m = self.step(x, h, c, n, m)
        return self.norm(h.unsqueeze(-1)).squeeze(-1), h, c, n, m


class SlstmStack(nn.Module):
    """Layers of normed sLSTM steps, each reading the one below's output: x and four
    states a layer (h, c, n, m per layer, in layer order) -> the top layer's output
    and the new states."""

    def __init__(self, inputs, hidden, heads, layers):
        super().__init__()
        self.layers = nn.ModuleList(
            SlstmGroupNormStep(inputs if k == 0 else hidden, hidden, heads)
            for k in range(layers))

    def forward(self, x, *states):
        new_states = []
        for k, layer in enumerate(self.layers):
            x, *layer_states = layer(x, *states[4 * k:4 * k + 4])
            new_states += layer_states
        return (x, *new_states)
