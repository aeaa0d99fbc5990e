#!/usr/bin/env python3
"""Writes the benchmark workloads of this directory (see README.md).

    make_workloads.py [--seed 2018] [--count 5000] [--out DIR]

A workload is a CSV of request shapes, one request a line, no contents: the
benchmark draws the tokens, features and tree shapes from its own seed, so
one workload serves every model of its kind. Columns: `length` (steps of a
sequence), `leaves` (leaves of a binary tree), or `source,decode` (a
seq2seq source length and its decode limit). Deterministic given the seed.
"""
import argparse
import math
import os
import random


def lognormal_fit(mean, p99):
    """(mu, sigma) of the lognormal with this mean and 99th percentile."""
    # mean = exp(mu + s^2/2), p99 = exp(mu + z s), z = 2.3263: eliminate mu.
    z = 2.3263
    gap = math.log(p99) - math.log(mean)  # = z s - s^2/2
    sigma = z - math.sqrt(z * z - 2 * gap)
    return math.log(mean) - sigma * sigma / 2, sigma


def draw(rng, mu, sigma, low, high):
    return min(high, max(low, round(rng.lognormvariate(mu, sigma))))


def write(path, header, rows):
    with open(path, "w") as out:
        out.write(header + "\n")
        for row in rows:
            out.write(",".join(str(v) for v in row) + "\n")


def describe(name, values):
    ordered = sorted(values)
    mean = sum(values) / len(values)
    p99 = ordered[int(0.99 * (len(ordered) - 1))]
    print(f"{name}: {len(values)} requests, mean {mean:.1f}, p50 "
          f"{ordered[len(ordered) // 2]}, p99 {p99}, max {ordered[-1]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2018)
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()
    rng = random.Random(args.seed)

    # WMT-15-like sentence lengths (BatchMaker, Figure 10): mean about 24,
    # 99% under 100, the longest 330. A lognormal with mean 24 and p99 95,
    # clipped to 1..330; the longest sentence is set to 330 so the tail the
    # paper shows is present.
    mu, sigma = lognormal_fit(24, 95)
    wmt = [draw(rng, mu, sigma, 1, 330) for _ in range(args.count)]
    wmt[rng.randrange(args.count)] = 330
    write(os.path.join(args.out, "wmt15.csv"), "length", [[n] for n in wmt])
    describe("wmt15", wmt)
    for limit in (50, 100):
        clipped = [min(n, limit) for n in wmt]
        write(os.path.join(args.out, f"wmt15-max{limit}.csv"), "length",
              [[n] for n in clipped])
        describe(f"wmt15-max{limit}", clipped)
    write(os.path.join(args.out, "fixed24.csv"), "length",
          [[24]] * args.count)

    # TreeBank-like trees (Stanford Sentiment Treebank sentences): mean
    # about 19 leaves, 99% under 50, at most 56; at least 2 leaves.
    mu, sigma = lognormal_fit(19, 48)
    leaves = [draw(rng, mu, sigma, 2, 56) for _ in range(args.count)]
    write(os.path.join(args.out, "treebank.csv"), "leaves",
          [[n] for n in leaves])
    describe("treebank", leaves)

    # Seq2seq pairs: a WMT-like source and a target 0.8 to 1.25 times its
    # length (the decode limit: with random weights EOS rarely comes).
    pairs = []
    for n in wmt:
        target = min(330, max(1, round(n * rng.uniform(0.8, 1.25))))
        pairs.append([n, target])
    write(os.path.join(args.out, "wmt15-pairs.csv"), "source,decode", pairs)
    describe("wmt15-pairs (decode)", [p[1] for p in pairs])
    # The same pairs clipped at 50 steps each way: attention models attend over
    # a memory of at most 50 source positions (examples/attention).
    clipped = [[min(n, 50), min(target, 50)] for n, target in pairs]
    write(os.path.join(args.out, "wmt15-pairs-max50.csv"), "source,decode", clipped)
    describe("wmt15-pairs-max50 (source)", [p[0] for p in clipped])


if __name__ == "__main__":
    main()
