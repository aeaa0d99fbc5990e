#!/usr/bin/env python3
"""The PyTorch peer for the binary TreeLSTM: the batch's leaves in one call
of the leaf cell, then its internal nodes level by level (every node whose
children are done, across all trees of the batch, in one call of the
internal cell): graph batching as a PyTorch user writes it, on the same
trace and weights as cellrun.

    pytorch_treelstm.py --weights DIR --trace TRACE.jsonl --out RESULTS.jsonl
                        [options of pytorch_chain.py]

DIR holds the generator's leaf.pt and internal.pt (examples/treelstm/
generate.py). Requests: {"id", "nodes": [{"token": t} | {"children": [l, r]}],
"arrival_s"}, the root the node no other names; buckets and batches go by
leaf count. The check compares the root's h and c (1e-3 relative + 1e-4
absolute).
"""
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402


def load(weights):
    leaf = torch.load(peer_common.weight_file(weights, "leaf"))
    internal = torch.load(peer_common.weight_file(weights, "internal"))
    W = nn.Linear(*leaf["W.weight"].shape[::-1])
    W.load_state_dict({"weight": leaf["W.weight"], "bias": leaf["W.bias"]})
    U = nn.Linear(*internal["U.weight"].shape[::-1])
    U.load_state_dict({"weight": internal["U.weight"], "bias": internal["U.bias"]})
    return {"embedding": nn.Embedding.from_pretrained(leaf["embedding.weight"]),
            "W": W.eval(), "U": U.eval(), "hidden": U.weight.shape[0] // 5}


def item(request):
    nodes = request["nodes"]
    named = {child for node in nodes for child in node.get("children", [])}
    roots = [n for n in range(len(nodes)) if n not in named]
    leaves = sum(1 for node in nodes if "children" not in node)
    return {"nodes": nodes, "root": roots[0], "length": leaves}


def run(model, batch):
    hidden = model["hidden"]
    # Every node of the batch by (request, node): its h and c once computed.
    h, c = {}, {}
    leaves = [(b, n) for b, r in enumerate(batch)
              for n, node in enumerate(r["nodes"]) if "children" not in node]
    tokens = torch.tensor([batch[b]["nodes"][n]["token"] for b, n in leaves],
                          device=peer_common.DEVICE)
    i, o, u = model["W"](model["embedding"](tokens)).split(hidden, dim=1)
    leaf_c = torch.sigmoid(i) * torch.tanh(u)
    leaf_h = torch.sigmoid(o) * torch.tanh(leaf_c)
    for row, key in enumerate(leaves):
        h[key], c[key] = leaf_h[row], leaf_c[row]
    pending = [(b, n) for b, r in enumerate(batch)
               for n, node in enumerate(r["nodes"]) if "children" in node]
    while pending:
        level = [(b, n) for b, n in pending
                 if all((b, k) in h for k in batch[b]["nodes"][n]["children"])]
        if not level:
            sys.exit("a tree of the trace has a cycle")
        left = [(b, batch[b]["nodes"][n]["children"][0]) for b, n in level]
        right = [(b, batch[b]["nodes"][n]["children"][1]) for b, n in level]
        gates = model["U"](torch.cat([torch.stack([h[k] for k in left]),
                                      torch.stack([h[k] for k in right])], dim=1))
        i, f_l, f_r, o, u = gates.split(hidden, dim=1)
        new_c = (torch.sigmoid(i) * torch.tanh(u)
                 + torch.sigmoid(f_l) * torch.stack([c[k] for k in left])
                 + torch.sigmoid(f_r) * torch.stack([c[k] for k in right]))
        new_h = torch.sigmoid(o) * torch.tanh(new_c)
        for row, key in enumerate(level):
            h[key], c[key] = new_h[row], new_c[row]
        done = set(level)
        pending = [key for key in pending if key not in done]
    return [{"h": h[(b, r["root"])], "c": c[(b, r["root"])]} for b, r in enumerate(batch)]


if __name__ == "__main__":
    peer_common.main(__doc__.splitlines()[0], load, item, run,
                     lambda name, have, want: peer_common.float_error(have, want),
                     lambda model: "binary TreeLSTM, level by level")
