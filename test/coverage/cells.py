"""The coverage corpus: RNN cells written the way PyTorch users write them.

Each case is a PyTorch module with the manifest roles of its inputs and outputs, the
opsets it is exported at, and what cellc and cellrun must do with it: serve it with
PyTorch's numbers, or refuse it with an error that names the ONNX node and op type
(`refused`, a regular expression the message must match). run_case.py runs one case.

Sizes are small and deliberately unequal (an input of 24, states of 32 and 48) so that
a mix-up of widths cannot pass.
"""

import torch
import torch.nn as nn

# torch 1.13 (Debian) exports opsets up to 17.
ALL_OPSETS = [9, 11, 14, 17]


class Case:
    def __init__(self, name, make, inputs, outputs, opsets=None, structure="chain",
                 refused=None, tree=None, dtype=torch.float32, seq2seq=None,
                 atol=None):
        self.name = name
        self.make = make            # () -> nn.Module, called after seeding
        self.inputs = inputs        # [(name, role, width, extra dict)]
        self.outputs = outputs      # [(name, role, width, extra dict)]
        self.opsets = opsets or ALL_OPSETS
        self.structure = structure  # chain | tree | seq2seq
        self.refused = refused      # None, or a regex the cellc error must match
        self.tree = tree            # tree: the internal cell {"make", "arity",
        #                             "inputs", "outputs"}; inputs/outputs are the leaf's
        self.dtype = dtype
        self.atol = atol            # the absolute tolerance where 1e-6 is below the
        #                             noise of PyTorch's own fp32 (normalised outputs)
        self.seq2seq = seq2seq      # seq2seq: the decoder {"make", "inputs", "outputs",
        #                             "initial_state", "bos", "eos", "max_decode",
        #                             "longest_source"}; inputs/outputs are the encoder's


def inp(name, width, role="input", **extra):
    return (name, role, width, extra)


def state(name, width):
    return (name, "state", width, {})


def new_state(name, width, updates, emit=False):
    extra = {"updates": updates}
    if emit:
        extra["emit"] = True
    return (name, "state", width, extra)


def out(name, width):
    return (name, "output", width, {})


# --------------------------------------------------------------------------------------
# Modules

class LstmCellStep(nn.Module):
    def __init__(self, x, h):
        super().__init__()
        self.cell = nn.LSTMCell(x, h)

    def forward(self, x, h, c):
        return self.cell(x, (h, c))


class GruCellStep(nn.Module):
    def __init__(self, x, h):
        super().__init__()
        self.cell = nn.GRUCell(x, h)

    def forward(self, x, h):
        return self.cell(x, h)


class RnnCellStep(nn.Module):
    def __init__(self, x, h, nonlinearity):
        super().__init__()
        self.cell = nn.RNNCell(x, h, nonlinearity=nonlinearity)

    def forward(self, x, h):
        return self.cell(x, h)


class StackedLstm(nn.Module):
    """k LSTMCells, each reading the previous one's output (GNMT's encoder)."""

    def __init__(self, x, widths, residual=False):
        super().__init__()
        sizes = [x] + list(widths)
        self.cells = nn.ModuleList(nn.LSTMCell(a, b) for a, b in zip(sizes, sizes[1:]))
        self.residual = residual

    def forward(self, x, *states):
        outs = []
        below = x
        for i, cell in enumerate(self.cells):
            h, c = cell(below, (states[2 * i], states[2 * i + 1]))
            outs += [h, c]
            below = h + below if self.residual and i > 0 else h
        return tuple(outs)


class StackedGru(nn.Module):
    def __init__(self, x, widths):
        super().__init__()
        sizes = [x] + list(widths)
        self.cells = nn.ModuleList(nn.GRUCell(a, b) for a, b in zip(sizes, sizes[1:]))

    def forward(self, x, *states):
        outs = []
        below = x
        for cell, h in zip(self.cells, states):
            below = cell(below, h)
            outs.append(below)
        return tuple(outs)


class ProjectedResidualLstm(nn.Module):
    """An LSTM whose output adds a linear projection of its input (a residual whose
    widths differ, so it needs a projection)."""

    def __init__(self, x, h):
        super().__init__()
        self.cell = nn.LSTMCell(x, h)
        self.proj = nn.Linear(x, h, bias=False)

    def forward(self, x, h, c):
        h2, c2 = self.cell(x, (h, c))
        return h2, c2, h2 + self.proj(x)


class ChunkLstm(nn.Module):
    """The LSTM of every tutorial: one Linear over [x, h], torch.chunk into four gates."""

    def __init__(self, x, h):
        super().__init__()
        self.gates = nn.Linear(x + h, 4 * h)

    def forward(self, x, h, c):
        i, f, g, o = torch.chunk(self.gates(torch.cat([x, h], dim=1)), 4, dim=1)
        c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c2), c2


class LstmWithHead(nn.Module):
    """An LSTMCell with an MLP head on its output (ReLU, GELU or tanh), optionally
    log-softmaxed (a language model's log-probabilities)."""

    def __init__(self, x, h, head, activation, log_softmax=False):
        super().__init__()
        self.cell = nn.LSTMCell(x, h)
        self.hidden = nn.Linear(h, head)
        self.activation = activation
        self.out = nn.Linear(head, 8)
        self.log_softmax = log_softmax

    def forward(self, x, h, c):
        h2, c2 = self.cell(x, (h, c))
        logits = self.out(self.activation(self.hidden(h2)))
        return h2, c2, torch.log_softmax(logits, dim=1) if self.log_softmax else logits


class ModuleStep(nn.Module):
    """One time step of nn.LSTM / nn.GRU / nn.RNN(num_layers=k): exports the ONNX
    LSTM, GRU or RNN op. States travel as [batch, layers * directions * hidden]
    and are reshaped to the module's [layers * directions, batch, hidden]."""

    def __init__(self, kind, x, h, layers, bidirectional=False, batch_first=False):
        super().__init__()
        module = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind]
        self.rnn = module(x, h, num_layers=layers, bidirectional=bidirectional,
                          batch_first=batch_first)
        self.kind, self.batch_first = kind, batch_first
        self.slots = layers * (2 if bidirectional else 1)

    def forward(self, x, h, *c):
        b = x.shape[0]
        to_module = lambda s: s.reshape(b, self.slots, -1).transpose(0, 1).contiguous()
        from_module = lambda s: s.transpose(0, 1).reshape(b, -1)
        x = x.unsqueeze(1 if self.batch_first else 0)
        if self.kind == "lstm":
            y, (h1, c1) = self.rnn(x, (to_module(h), to_module(c[0])))
            rest = (from_module(h1), from_module(c1))
        else:
            y, h1 = self.rnn(x, to_module(h))
            rest = (from_module(h1),)
        return (y.squeeze(1 if self.batch_first else 0),) + rest


class GruWithHead(nn.Module):
    """nn.GRU of one layer as most people call it: h.unsqueeze(0) in, h_n[-1] out
    to a linear head."""

    def __init__(self, x, h, classes):
        super().__init__()
        self.gru = nn.GRU(x, h)
        self.head = nn.Linear(h, classes)

    def forward(self, x, h):
        _, h_n = self.gru(x.unsqueeze(0), h.unsqueeze(0))
        last = h_n[-1]
        return last, self.head(last)


class SkipGru(nn.Module):
    """A GRU that updates only the rows whose flag is 1 (Skip-RNN style):
    Equal and Where."""

    def __init__(self, x, h):
        super().__init__()
        self.cell = nn.GRUCell(x, h)

    def forward(self, x, update, h):
        return torch.where(update == 1.0, self.cell(x, h), h)


class EventGatedGru(nn.Module):
    """A GRU driven by an event signal (the input's first feature): it updates where
    the signal is above zero, decays its state by half where it is at most -0.5,
    and holds it otherwise: Greater, LessOrEqual and Where on floats."""

    def __init__(self, x, h):
        super().__init__()
        self.cell = nn.GRUCell(x, h)

    def forward(self, x, h):
        signal = x[:, :1]
        held = torch.where(signal <= -0.5, h * 0.5, h)
        return torch.where(signal > 0, self.cell(x, h), held)


class TimeGatedGru(nn.Module):
    """A GRU whose state fades by a per-step scalar (a time gap dt, one number per
    row): dt.unsqueeze(1) broadcasts it over the state."""

    def __init__(self, x, h):
        super().__init__()
        self.cell = nn.GRUCell(x, h)

    def forward(self, x, dt, h):
        return self.cell(x, h * torch.sigmoid(dt).unsqueeze(1))


class PermutedInputGru(nn.Module):
    """A GRU that reads its input features in a fixed order (x[:, order]): a
    Gather with constant indices along the features of a per-row value."""

    def __init__(self, x, h):
        super().__init__()
        self.register_buffer("order", torch.randperm(x))
        self.cell = nn.GRUCell(x, h)

    def forward(self, x, h):
        return self.cell(x[:, self.order], h)


class SoftmaxGatedGru(nn.Module):
    """A GRU whose output is gated by a softmax over its units."""

    def __init__(self, x, h):
        super().__init__()
        self.cell = nn.GRUCell(x, h)
        self.score = nn.Linear(h, h)

    def forward(self, x, h):
        h2 = self.cell(x, h)
        return h2, h2 * torch.softmax(self.score(h2), dim=1)


class LayerNormLstm(nn.Module):
    """A layer-normalised LSTM (gates and cell normalised)."""

    def __init__(self, x, h):
        super().__init__()
        self.ih = nn.Linear(x, 4 * h, bias=False)
        self.hh = nn.Linear(h, 4 * h, bias=False)
        self.ln_gates = nn.LayerNorm(4 * h)
        self.ln_cell = nn.LayerNorm(h)

    def forward(self, x, h, c):
        gates = self.ln_gates(self.ih(x) + self.hh(h))
        i, f, g, o = gates.split(gates.shape[1] // 4, dim=1)
        c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(self.ln_cell(c2)), c2


class ChildSumLeaf(nn.Module):
    """A child-sum TreeLSTM leaf (Tai et al. 2015): the node cell with no children."""

    def __init__(self, x, h):
        super().__init__()
        self.iou = nn.Linear(x, 3 * h)

    def forward(self, x):
        i, o, u = torch.chunk(self.iou(x), 3, dim=1)
        c = torch.sigmoid(i) * torch.tanh(u)
        return torch.sigmoid(o) * torch.tanh(c), c


class ChildSumInternal(nn.Module):
    """A child-sum TreeLSTM node over `arity` children that also reads its own input
    (a dependency tree's word): one forget gate per child, the gates from the sum of
    the children's h."""

    def __init__(self, x, h, arity):
        super().__init__()
        self.arity = arity
        self.iou_x = nn.Linear(x, 3 * h)
        self.iou_h = nn.Linear(h, 3 * h, bias=False)
        self.f_x = nn.Linear(x, h)
        self.f_h = nn.Linear(h, h, bias=False)

    def forward(self, x, *children):
        hs, cs = children[0::2], children[1::2]
        h_sum = hs[0]
        for h in hs[1:]:
            h_sum = h_sum + h
        i, o, u = torch.chunk(self.iou_x(x) + self.iou_h(h_sum), 3, dim=1)
        c = torch.sigmoid(i) * torch.tanh(u)
        fx = self.f_x(x)
        for h, c_k in zip(hs, cs):
            c = c + torch.sigmoid(fx + self.f_h(h)) * c_k
        return torch.sigmoid(o) * torch.tanh(c), c


class NaryInternal(nn.Module):
    """An N-ary TreeLSTM node (Tai et al. 2015) without inputs of its own: each
    child's h has its own weights; one forget gate per child."""

    def __init__(self, h, arity):
        super().__init__()
        self.arity = arity
        self.gates = nn.Linear(arity * h, (3 + arity) * h)

    def forward(self, *children):
        hs, cs = children[0::2], children[1::2]
        parts = torch.chunk(self.gates(torch.cat(hs, dim=1)), 3 + self.arity, dim=1)
        i, o, u, forgets = parts[0], parts[1], parts[2], parts[3:]
        c = torch.sigmoid(i) * torch.tanh(u)
        for f, c_k in zip(forgets, cs):
            c = c + torch.sigmoid(f) * c_k
        return torch.sigmoid(o) * torch.tanh(c), c


# --------------------------------------------------------------------------------------
# The corpus

X, H, H2 = 24, 32, 48

# What cellc says about an op type it does not import: the node's name, its op type.
UNSUPPORTED = r"node '[^']+' \((%s), opset \d+\): unsupported op type"


def _lstm_io(width=H, emit=True):
    return ([inp("x", X), state("h", width), state("c", width)],
            [new_state("h_next", width, "h", emit), new_state("c_next", width, "c")])


def _stacked_io(widths, gru=False):
    ins, outs = [inp("x", X)], []
    for i, w in enumerate(widths):
        names = ["h%d" % i] if gru else ["h%d" % i, "c%d" % i]
        for n in names:
            ins.append(state(n, w))
            outs.append(new_state(n + "_next", w, n, emit=(n == names[0] and
                                                            i == len(widths) - 1)))
    return ins, outs


def _module_io(kind, layers, directions=1):
    width = layers * directions * H
    names = ["h", "c"] if kind == "lstm" else ["h"]
    return ([inp("x", X)] + [state(n, width) for n in names],
            [out("y", directions * H)] + [new_state(n + "_next", width, n) for n in names])


CASES = [
    Case("lstm_cell", lambda: LstmCellStep(X, H), *_lstm_io()),
    Case("lstm_cell_fp64", lambda: LstmCellStep(X, H), *_lstm_io(), dtype=torch.float64,
         refused=r"input 'x' is double \(f64\); cellc serves float32 cells"),
    Case("gru_cell", lambda: GruCellStep(X, H),
         [inp("x", X), state("h", H)], [new_state("h_next", H, "h", True)]),
    Case("rnn_tanh_cell", lambda: RnnCellStep(X, H, "tanh"),
         [inp("x", X), state("h", H)], [new_state("h_next", H, "h", True)]),
    Case("rnn_relu_cell", lambda: RnnCellStep(X, H, "relu"),
         [inp("x", X), state("h", H)], [new_state("h_next", H, "h", True)]),
    Case("stacked_lstm2", lambda: StackedLstm(X, [H, H]), *_stacked_io([H, H])),
    Case("stacked_lstm4_widths", lambda: StackedLstm(X, [H, H2, H2, H]),
         *_stacked_io([H, H2, H2, H])),
    Case("stacked_gru2", lambda: StackedGru(X, [H, H2]), *_stacked_io([H, H2], gru=True)),
    Case("stacked_gru4", lambda: StackedGru(X, [H, H, H, H]),
         *_stacked_io([H, H, H, H], gru=True)),
    Case("residual_lstm3", lambda: StackedLstm(X, [H, H, H], residual=True),
         *_stacked_io([H, H, H])),
    Case("projected_residual_lstm", lambda: ProjectedResidualLstm(X, H),
         _lstm_io()[0], _lstm_io(emit=False)[1] + [out("y", H)]),
    Case("chunk_lstm", lambda: ChunkLstm(X, H), *_lstm_io()),
    Case("relu_head_lstm", lambda: LstmWithHead(X, H, 40, nn.ReLU()),
         _lstm_io()[0], _lstm_io(emit=False)[1] + [out("logits", 8)]),
    Case("gelu_head_lstm", lambda: LstmWithHead(X, H, 40, nn.GELU()),
         _lstm_io()[0], _lstm_io(emit=False)[1] + [out("logits", 8)]),
    Case("nn_lstm1_step", lambda: ModuleStep("lstm", X, H, 1), *_module_io("lstm", 1)),
    Case("nn_lstm2_step", lambda: ModuleStep("lstm", X, H, 2), *_module_io("lstm", 2)),
    Case("nn_lstm4_step", lambda: ModuleStep("lstm", X, H, 4), *_module_io("lstm", 4)),
    Case("nn_lstm2_batch_first_step",
         lambda: ModuleStep("lstm", X, H, 2, batch_first=True), *_module_io("lstm", 2)),
    Case("nn_bilstm2_step", lambda: ModuleStep("lstm", X, H, 2, bidirectional=True),
         *_module_io("lstm", 2, directions=2)),
    Case("nn_gru1_step", lambda: ModuleStep("gru", X, H, 1), *_module_io("gru", 1)),
    Case("nn_gru2_step", lambda: ModuleStep("gru", X, H, 2), *_module_io("gru", 2)),
    Case("nn_gru4_step", lambda: ModuleStep("gru", X, H, 4), *_module_io("gru", 4)),
    Case("nn_bigru1_step", lambda: ModuleStep("gru", X, H, 1, bidirectional=True),
         *_module_io("gru", 1, directions=2)),
    Case("nn_rnn2_step", lambda: ModuleStep("rnn", X, H, 2), *_module_io("rnn", 2)),
    Case("nn_gru_head", lambda: GruWithHead(X, H, 8),
         [inp("x", X), state("h", H)], [new_state("h_next", H, "h"), out("logits", 8)]),
    # Opsets 9-14 export nn.LayerNorm as ReduceMean/Sub/Pow/Sqrt/Div, 17 as
    # LayerNormalization.
    Case("layernorm_lstm", lambda: LayerNormLstm(X, H), *_lstm_io()),
    Case("time_gated_gru", lambda: TimeGatedGru(X, H),
         [inp("x", X), inp("dt", None), state("h", H)], [new_state("h_next", H, "h", True)]),
    Case("softmax_gated_gru", lambda: SoftmaxGatedGru(X, H),
         [inp("x", X), state("h", H)], [new_state("h_next", H, "h"), out("y", H)]),
    Case("log_softmax_lstm", lambda: LstmWithHead(X, H, 40, nn.Tanh(), log_softmax=True),
         _lstm_io()[0], _lstm_io(emit=False)[1] + [out("logits", 8)]),
    # Not yet generated: a Gather within a row (the kernels index tables only).
    Case("permuted_input_gru", lambda: PermutedInputGru(X, H),
         [inp("x", X), state("h", H)], [new_state("h_next", H, "h", True)],
         refused=r"node '[^']*Gather[^']*' \(Gather, opset \d+\): code generation "
                 r"supports embedding lookups"),
    Case("event_gated_gru", lambda: EventGatedGru(X, H),
         [inp("x", X), state("h", H)], [new_state("h_next", H, "h", True)]),
    Case("skip_gru", lambda: SkipGru(X, H),
         [inp("x", X), inp("update", 1, binary=True), state("h", H)],
         [new_state("h_next", H, "h", True)]),
]

def _tree_case(name, internal, arity, internal_input):
    """A TreeLSTM: the leaf reads x; the internal node reads its children's h and c
    (and its own x when `internal_input`)."""
    children = []
    for k in range(arity):
        children += [("h%d" % k, "child", H, {"child": k, "from": "h"}),
                     ("c%d" % k, "child", H, {"child": k, "from": "c"})]
    states = [("h", "state", H, {}), ("c", "state", H, {})]
    return Case(name, lambda: ChildSumLeaf(X, H), [inp("x", X)], states,
                structure="tree",
                tree={"make": internal, "arity": arity,
                      "inputs": ([inp("x", X)] if internal_input else []) + children,
                      "outputs": states})


CASES += [
    _tree_case("child_sum_treelstm", lambda: ChildSumInternal(X, H, 2), 2, True),
    _tree_case("child_sum_treelstm3", lambda: ChildSumInternal(X, H, 3), 3, True),
    _tree_case("nary_treelstm", lambda: NaryInternal(H, 2), 2, False),
    _tree_case("nary3_treelstm", lambda: NaryInternal(H, 3), 3, False),
]

import attention  # noqa: E402  (seq2seq cases with attention decoders)

CASES += attention.cases(Case)

import minimal_rnns  # noqa: E402  (minGRU and minLSTM)

CASES += minimal_rnns.cases(Case, inp, state, new_state, X, H)

import linear_recurrences  # noqa: E402  (RWKV-4 and sLSTM)

CASES += linear_recurrences.cases(Case, inp, state, new_state, out, X, H)

import state_space  # noqa: E402  (Mamba-1 steps)

CASES += state_space.cases(Case, inp, state, new_state, out, X)

BY_NAME = {case.name: case for case in CASES}
