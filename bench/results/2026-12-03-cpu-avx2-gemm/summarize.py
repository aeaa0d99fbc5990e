#!/usr/bin/env python3
"""The table of README.md from the CSVs run.sh wrote: per thread count and
row count, ours and MLAS's best call over the three rounds, before and
after the 2- and 3-row kernels' fix, and ours after against its floor."""
import csv
import statistics
import sys
from pathlib import Path

here = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)


def load(label, system, threads):
    best, median = {}, {}
    for round_ in (1, 2, 3):
        with open(here / f"{label}-{system}-t{threads}-{round_}.csv") as f:
            for row in csv.DictReader(f):
                if system == "ours":
                    m, b, md = int(row["rows"]), float(row["ours_best_us"]), float(row["ours_median_us"])
                    best.setdefault(("floor", m), []).append(float(row["floor_us"]))
                else:
                    m = int(row["batch"])
                    b, md = float(row["onnxruntime_matmul_best_us"]), float(row["onnxruntime_matmul_us"])
                best.setdefault(m, []).append(b)
                median.setdefault(m, []).append(md)
    return best, median


for threads in (1, 2):
    ours_before, _ = load("before", "ours", threads)
    ours_after, ours_after_median = load("after", "ours", threads)
    mlas_before, _ = load("before", "mlas", threads)
    mlas_after, mlas_after_median = load("after", "mlas", threads)
    print(f"\n{threads} thread(s), microseconds: the best call of three rounds (MLAS: of six)\n")
    print("| rows | ours before | ours after | MLAS | after / MLAS | medians after / MLAS | after / floor |")
    print("|---|---|---|---|---|---|---|")
    for m in sorted(k for k in ours_after if not isinstance(k, tuple)):
        before = min(ours_before[m])
        after = min(ours_after[m])
        mlas = min(mlas_before[m] + mlas_after[m])
        med = statistics.median(ours_after_median[m]) / statistics.median(mlas_after_median[m])
        floor = min(ours_after[("floor", m)])
        print(f"| {m} | {before:.0f} | {after:.0f} | {mlas:.0f} | {after / mlas:.2f} | {med:.2f} | {after / floor:.2f} |")
