#!/usr/bin/env python3
"""Writes example request files for `cellrun run` (one JSON object a line).

    make_requests.py MODEL COUNT OUT.jsonl [--seed S] [--lengths CSV]
                     [--features N]

MODEL is lstm, gru, seq2seq or treelstm (the small examples): token
sequences of 1..40 steps, sequences of 1..20 steps of 64 features (or
--features N: 1024 for the benchmarks' GRU) for gru, source sentences with a
decode limit for seq2seq, random binary trees of 1..16 leaves for treelstm.
With --lengths, lstm and gru sequence lengths are drawn from the `length`
column of a benchmark workload (bench/workloads/wmt15.csv: WMT-like), and seq2seq
source lengths and decode limits from the `source` and `decode` columns of
a pairs workload (bench/workloads/wmt15-pairs-max50.csv; also right for the
attention models, whose vocabularies are larger).
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
                        help="lstm, gru: draw each length from this workload's 'length' "
                             "column; seq2seq: each source length and decode limit "
                             "from its 'source' and 'decode' columns")
    parser.add_argument("--features", type=int, default=64,
                        help="gru: the features a step (default 64, the small example)")
    args = parser.parse_args()
    if args.lengths and args.model not in ("lstm", "gru", "seq2seq"):
        parser.error("--lengths is for the lstm, gru and seq2seq models")
    if args.features < 1:
        parser.error("--features must be positive")
    lengths = None
    if args.lengths:
        with open(args.lengths) as f:
            rows = list(csv.DictReader(f))
        column = "source" if args.model == "seq2seq" else "length"
        if not rows or column not in rows[0] or (
                args.model == "seq2seq" and "decode" not in rows[0]):
            parser.error(f"{args.lengths} lacks the columns --lengths needs for "
                         f"{args.model} ({column}" +
                         (", decode)" if args.model == "seq2seq" else ")"))
        lengths = [(int(row[column]), int(row.get("decode") or 0)) for row in rows]
    rng = random.Random(args.seed)
    with open(args.out, "w") as out:
        for i in range(args.count):
            request = {"id": f"{args.model}-{i}"}
            if args.model == "treelstm":
                request.update(tree(rng, 1000))
            elif args.model == "gru":
                steps = rng.choice(lengths)[0] if lengths else rng.randint(1, 20)
                request["steps"] = [
                    {"x": [round(rng.uniform(-1, 1), 4) for _ in range(args.features)]}
                    for _ in range(steps)]
            else:
                vocab = 500 if args.model == "seq2seq" else 1000
                length, decode = rng.choice(lengths) if lengths else (rng.randint(1, 40), 0)
                request["tokens"] = [rng.randrange(3, vocab) for _ in range(length)]
                if args.model == "seq2seq":
                    request["max_decode_length"] = decode or rng.randint(4, 40)
            out.write(json.dumps(request) + "\n")


if __name__ == "__main__":
    main()
