"""Splits a `perf record` profile of `cellrun bench --offline N` into where the
CPU time went (GEMM, element-wise work, row copies, engine and scheduler, the
kernel, ...) and prints a markdown table: the share of samples and, for a
chain workload (one `length` column), CPU microseconds per task and per node.

  profile_report.py PERF_DATA BENCH_JSON WORKLOAD_CSV REQUESTS FREQUENCY"""
import collections
import csv
import json
import re
import subprocess
import sys

# First match wins; symbols as perf prints them for our Release build.
CATEGORIES = [
    ("GEMM (micro-kernels, packing)", r"avx2Tile|avx2Wide|avx2Block|avx512Block|"
                                      r"avx512Micro|bf16Block|amx|packA|PackSix|"
                                      r"finishColumns|gemmPanels|PackedGemm|sgemm|dgemm"),
    ("element-wise (interpreter, activations)",
     r"sigmoid|tanh|expAvx|VectorMath|RegionInterpreter|RegionMath|executeOp"),
    ("row copies (memcpy, memmove)", r"memmove|memcpy"),
    ("thread pool (waits, hand-offs)", r"ThreadPool"),
    ("artifact load and checks", r"ArtifactLoader|Checksum|verify"),
]


def categorise(kind, symbol):
    for name, pattern in CATEGORIES:
        if re.search(pattern, symbol):
            return name
    if kind == "k":
        return "Linux kernel (scheduling, page faults, syscalls)"
    return "engine, scheduler, bench and other host code"


def main():
    data, bench_json, workload, requests, frequency = sys.argv[1:6]
    requests, frequency = int(requests), float(frequency)
    report = subprocess.run(
        ["perf", "report", "-i", data, "--no-children", "--sort", "symbol",
         "--stdio", "-g", "none", "--percent-limit", "0", "-F", "sample,sym"],
        capture_output=True, text=True, check=True).stdout
    samples = collections.Counter()
    top = collections.defaultdict(collections.Counter)
    for line in report.splitlines():
        match = re.match(r"\s+(\d+)\s+\[(.)\]\s+(.*?)\s*(-\s+-)?\s*$", line)
        if not match:
            continue
        count, kind, symbol = int(match.group(1)), match.group(2), match.group(3)
        category = categorise(kind, symbol)
        samples[category] += count
        top[category][symbol[:60]] += count
    total = sum(samples.values())
    row = json.load(open(bench_json))["rows"][0]
    batch = sum(row["mean_batch"].values()) / max(len(row["mean_batch"]), 1)
    with open(workload) as f:
        table = list(csv.reader(f))
    nodes = None
    if table and table[0] == ["length"]:
        lengths = [int(r[0]) for r in table[1:] if r]
        nodes = sum(lengths[k % len(lengths)] for k in range(requests))
    print(f"{total} samples at {frequency:g} Hz = {total / frequency:.1f} CPU-s; "
          f"{row['achieved_per_s']:.1f} requests/s, mean batch {batch:.1f}"
          + (f", {nodes} nodes, about {nodes / batch:.0f} tasks" if nodes else ""))
    print()
    print("| where | share | CPU-us a task | CPU-us a node | largest symbols |")
    print("|---|---:|---:|---:|---|")
    for category, count in samples.most_common():
        seconds = count / frequency
        per_task = f"{seconds / (nodes / batch) * 1e6:.1f}" if nodes else "-"
        per_node = f"{seconds / nodes * 1e6:.2f}" if nodes else "-"
        largest = ", ".join(f"`{s}` {100 * c / total:.1f}%"
                            for s, c in top[category].most_common(3))
        print(f"| {category} | {100 * count / total:.1f}% | {per_task} | "
              f"{per_node} | {largest} |")


if __name__ == "__main__":
    main()
