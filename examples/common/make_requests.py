#!/usr/bin/env python3
"""Writes example request files for `cellrun run` (one JSON object a line).

    make_requests.py MODEL COUNT OUT.jsonl [--seed S] [--lengths CSV]

MODEL is lstm, gru, seq2seq or treelstm (the small examples): token
sequences of 1..40 steps, 64-feature steps for gru, source sentences with a
decode limit for seq2seq, random binary trees of 1..16 leaves for treelstm.
With --lengths (lstm only), sequence lengths are drawn from the `length`
column of a benchmark workload (bench/workloads/wmt15.csv: WMT-like).
"""
import csv
import argparse
import json
import random


def tree(rng, vocab):
    leaves = rng.randint(1, 16)
    nodes = [{"token": rng.randrange(vocab)} for _ in range(leaves)]
    open_nodes = list(range(leaves))
    while len(open_nodes) > 1:
        left = open_nodes.pop(rng.randrange(len(open_nodes)))
        right = open_nodes.pop(rng.randrange(len(open_nodes)))
        nodes.append({"children": [left, right]})
        open_nodes.append(len(nodes) - 1)
    return {"nodes": nodes}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=["lstm", "gru", "seq2seq", "treelstm"])
    parser.add_argument("count", type=int)
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=2018)
    parser.add_argument("--lengths", metavar="CSV",
                        help="lstm: draw each length from this workload's "
                             "'length' column")
    args = parser.parse_args()
    if args.lengths and args.model != "lstm":
        parser.error("--lengths is for the lstm model")
    lengths = None
    if args.lengths:
        with open(args.lengths) as f:
            lengths = [int(row["length"]) for row in csv.DictReader(f)]
    rng = random.Random(args.seed)
    with open(args.out, "w") as out:
        for i in range(args.count):
            request = {"id": f"{args.model}-{i}"}
            if args.model == "treelstm":
                request.update(tree(rng, 1000))
            elif args.model == "gru":
                steps = rng.randint(1, 20)
                request["steps"] = [
                    {"x": [round(rng.uniform(-1, 1), 4) for _ in range(64)]}
                    for _ in range(steps)]
            else:
                vocab = 500 if args.model == "seq2seq" else 1000
                length = rng.choice(lengths) if lengths else rng.randint(1, 40)
                request["tokens"] = [rng.randrange(3, vocab) for _ in range(length)]
                if args.model == "seq2seq":
                    request["max_decode_length"] = rng.randint(4, 40)
            out.write(json.dumps(request) + "\n")


if __name__ == "__main__":
    main()
