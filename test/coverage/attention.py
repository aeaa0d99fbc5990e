"""Attention decoders of the coverage corpus: seq2seq models whose decoder attends over
the encoder's states (a memory per request) with a mask of each request's own source
length, written the way PyTorch users write them (torch.bmm, torch.matmul,
masked_fill, softmax). run_case.py decodes random sources greedily with cellrun and
with PyTorch and compares the tokens one for one.
"""

import torch
import torch.nn as nn

E, H, V, S = 16, 32, 24, 7   # embedding, hidden, vocabulary, longest source
BOS, EOS = 1, 2


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, E)
        self.cell = nn.LSTMCell(E, H)

    def forward(self, token, h, c):
        return self.cell(self.embed(token), (h, c))


class LuongDecoder(nn.Module):
    """Luong et al. 2015, global attention: `general` scores (h W m) or `dot` scores
    against the transposed memory, the context and h through a tanh layer."""

    def __init__(self, score):
        super().__init__()
        self.score = score
        self.embed = nn.Embedding(V, E)
        self.cell = nn.LSTMCell(E, H)
        self.attn = nn.Linear(H, H, bias=False)
        self.combine = nn.Linear(2 * H, H)
        self.project = nn.Linear(H, V)

    def forward(self, token, h, c, memory, mask):
        h, c = self.cell(self.embed(token), (h, c))
        if self.score == "general":
            scores = torch.bmm(memory, self.attn(h).unsqueeze(2)).squeeze(2)
            scores = scores.masked_fill(mask == 0, float("-inf"))
            weights = torch.softmax(scores, dim=1)
            context = torch.bmm(weights.unsqueeze(1), memory).squeeze(1)
        else:
            scores = torch.bmm(h.unsqueeze(1), memory.transpose(1, 2)).squeeze(1)
            weights = torch.softmax(scores + (mask - 1.0) * 1e9, dim=-1)
            context = torch.matmul(weights.unsqueeze(1), memory).squeeze(1)
        attended = torch.tanh(self.combine(torch.cat([context, h], dim=1)))
        return self.project(attended).argmax(dim=1), h, c


def spread(module, eos_bias=0.0):
    """Weights drawn wider than PyTorch's default (std 0.8), so that the decoded
    tokens depend on the source through the attention (with the default, every
    source decodes to the same tokens), and EOS made likelier so that some sources
    stop at EOS and others at the decode limit."""
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.normal_(0.0, 0.8)
        if eos_bias:
            module.project.bias[EOS] += eos_bias
    return module


def cases(Case):
    encoder_inputs = [("token", "input", None, {"vocab": V}),
                      ("h", "state", H, {}), ("c", "state", H, {})]
    encoder_outputs = [("h_next", "state", H, {"updates": "h"}),
                       ("c_next", "state", H, {"updates": "c"})]
    decoder_inputs = encoder_inputs + [
        ("memory", "memory", (S, H), {"from": "h_next"}),
        ("mask", "memory_mask", S, {})]
    decoder_outputs = [("next_token", "output", None, {})] + encoder_outputs

    def seq2seq(name, decoder):
        return Case(name, lambda: spread(Encoder()), encoder_inputs, encoder_outputs,
                    structure="seq2seq",
                    seq2seq={"make": decoder, "inputs": decoder_inputs,
                             "outputs": decoder_outputs,
                             "initial_state": {"h": "h", "c": "c"},
                             "bos": BOS, "eos": EOS, "max_decode": 12,
                             "longest_source": S})

    return [seq2seq("luong_attention",
                    lambda: spread(LuongDecoder("general"), eos_bias=2.0)),
            seq2seq("luong_dot_attention",
                    lambda: spread(LuongDecoder("dot"), eos_bias=2.0))]
