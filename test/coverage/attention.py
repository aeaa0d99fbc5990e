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


class KeyEncoder(Encoder):
    """The encoder that also outputs the attention keys of its state (W_k h), so
    that the decoder reads them from a memory instead of projecting every position
    at every step."""

    def __init__(self):
        super().__init__()
        self.keys = nn.Linear(H, H)

    def forward(self, token, h, c):
        h, c = super().forward(token, h, c)
        return h, c, self.keys(h)


class BahdanauDecoder(nn.Module):
    """Bahdanau et al. 2014, additive attention: scores v . tanh(W_k m + W_q s) over
    the positions, from the previous state s; the context joins the embedding into a
    GRUCell and the new state into the output layer. With `keys`, W_k m comes from a
    second memory filled by the encoder."""

    def __init__(self, keys):
        super().__init__()
        self.precomputed = keys
        self.embed = nn.Embedding(V, E)
        self.keys = nn.Linear(H, H)
        self.query = nn.Linear(H, H, bias=False)
        self.v = nn.Linear(H, 1, bias=False)
        self.cell = nn.GRUCell(E + H, H)
        self.project = nn.Linear(2 * H, V)

    def forward(self, token, h, *memories):
        if self.precomputed:
            keys, memory, mask = memories
        else:
            memory, mask = memories
            keys = self.keys(memory)
        energy = torch.tanh(keys + self.query(h).unsqueeze(1))
        scores = self.v(energy).squeeze(2)
        scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores, dim=1)
        context = (weights.unsqueeze(2) * memory).sum(dim=1)
        h = self.cell(torch.cat([self.embed(token), context], dim=1), h)
        return self.project(torch.cat([h, context], dim=1)).argmax(dim=1), h


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

    bahdanau_inputs = [("token", "input", None, {"vocab": V}), ("h", "state", H, {}),
                       ("memory", "memory", (S, H), {"from": "h_next"}),
                       ("mask", "memory_mask", S, {})]
    bahdanau_outputs = [("next_token", "output", None, {}),
                        ("h_next", "state", H, {"updates": "h"})]

    def bahdanau(name, keys):
        inputs = list(bahdanau_inputs)
        encoder_outputs_here = list(encoder_outputs)
        if keys:
            inputs.insert(2, ("keys", "memory", (S, H), {"from": "keys"}))
            encoder_outputs_here.append(("keys", "output", H, {}))
        return Case(name, lambda: spread(KeyEncoder() if keys else Encoder()),
                    encoder_inputs, encoder_outputs_here, structure="seq2seq",
                    seq2seq={"make": lambda: spread(BahdanauDecoder(keys), eos_bias=2.0),
                             "inputs": inputs, "outputs": bahdanau_outputs,
                             "initial_state": {"h": "h"},
                             "bos": BOS, "eos": EOS, "max_decode": 12,
                             "longest_source": S})

    return [bahdanau("bahdanau_attention", keys=False),
            bahdanau("bahdanau_keys_attention", keys=True),
            seq2seq("luong_attention",
                    lambda: spread(LuongDecoder("general"), eos_bias=2.0)),
            seq2seq("luong_dot_attention",
                    lambda: spread(LuongDecoder("dot"), eos_bias=2.0))]
