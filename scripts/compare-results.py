#!/usr/bin/env python3
"""Compares two `cellrun run --output` files (e.g. the GPU's against the CPU
backend's): the same request ids, each with the same outputs and shapes;
floating-point data within 1e-3 relative + 1e-4 absolute (fp32 on two
devices: different reduction orders), integers (tokens) exactly, and the
same stop reason. Prints one line; exits 1 on any difference.

With --across-devices (the GPU's results against the CPU's) up to 2% of the
requests may decode other tokens or stop otherwise: fp32 on two devices
rounds differently, and a near tie of two logits flips the argmax (as
EngineCudaTest allows); they are listed.

    compare-results.py [--across-devices] THESE.jsonl THOSE.jsonl"""
import json
import sys


def load(path):
    results = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                result = json.loads(line)
                results[result["id"]] = result
    return results


def main():
    arguments = sys.argv[1:]
    across = "--across-devices" in arguments
    arguments = [a for a in arguments if a != "--across-devices"]
    if len(arguments) != 2:
        sys.exit(__doc__)
    these, those = load(arguments[0]), load(arguments[1])
    problems, worst, values = [], 0.0, 0
    decoded_otherwise = []  # requests whose tokens or stop reason differ
    if sorted(these) != sorted(those):
        problems.append(f"request ids differ: {sorted(set(these) ^ set(those))[:5]}")
    for key in sorted(set(these) & set(those)):
        a, b = these[key], those[key]
        if ("error" in a) != ("error" in b):
            problems.append(f"{key}: an error on one side only")
            continue
        if a.get("stop") != b.get("stop"):
            decoded_otherwise.append(key)
            continue
        outputs_a, outputs_b = a.get("outputs", {}), b.get("outputs", {})
        if sorted(outputs_a) != sorted(outputs_b):
            problems.append(f"{key}: outputs {sorted(outputs_a)} against {sorted(outputs_b)}")
            continue
        for name in outputs_a:
            x, y = outputs_a[name], outputs_b[name]
            if x["shape"] != y["shape"] or len(x["data"]) != len(y["data"]):
                if x["data"] and all(isinstance(u, int) for u in x["data"]):
                    decoded_otherwise.append(key)  # tokens: another length
                else:
                    problems.append(f"{key}.{name}: shape {x['shape']} against {y['shape']}")
                continue
            for u, v in zip(x["data"], y["data"]):
                values += 1
                if isinstance(u, int) and isinstance(v, int):
                    if u != v:
                        decoded_otherwise.append(key)
                        break
                    continue
                ratio = abs(u - v) / (1e-3 * abs(v) + 1e-4)
                worst = max(worst, ratio)
                if ratio > 1:
                    problems.append(f"{key}.{name}: {u} against {v}")
                    break
    decoded_otherwise = sorted(set(decoded_otherwise))
    allowed = int(0.02 * len(these)) if across else 0
    if len(decoded_otherwise) > allowed:
        problems.append(f"{len(decoded_otherwise)} requests decode other tokens or stop "
                        f"otherwise (at most {allowed}): {decoded_otherwise[:5]}")
    elif decoded_otherwise:
        print(f"decoded otherwise (near ties, within {allowed}): {decoded_otherwise}")
    print(f"{len(these)} results, {values} values, worst difference "
          f"{worst:.3g} of the tolerance" + (": " + "; ".join(problems[:5]) if problems else ": equal"))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
