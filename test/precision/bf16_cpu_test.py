#!/usr/bin/env python3
"""--precision=bf16 on the CPU backend: each example (LSTM fed tokens, GRU fed
features) compiled with every GEMM a GEMM step (--fuse-step-max-batch=0), in
fp32 and in bf16, served by `cellrun run` on the example's requests (cellular
batching, two threads); the bf16 outputs must differ from fp32's (the bf16
GEMMs ran: bf16 products, fp32 sums) by no more than the bound measured for
bf16 weights and activations at hidden 64 (docs/performance.md), and a request
served alone must give the same bits as in its batch.

    bf16_cpu_test.py CELLC CELLRUN SOURCE_DIR EXAMPLES_BUILD_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

cellc, cellrun, source, examples, work = sys.argv[1:6]
os.makedirs(work, exist_ok=True)
# Worst |bf16 - fp32| of an output element over the example's requests
# (outputs are h and c of magnitude below about 2): measured 7.4e-4 (LSTM)
# and 2.0e-3 (GRU) on 2026-11-26; five times the larger.
BOUND = 0.01


def compile_model(name, precision):
    out = os.path.join(work, f"{name}-{precision}.cellpack")
    subprocess.run([cellc, os.path.join(source, "examples", name, "model.yaml"),
                    "--onnx-dir", os.path.join(examples, name), f"--precision={precision}",
                    "--fuse-step-max-batch=0", "-o", out, "--quiet"], check=True)
    return out


def serve(artifact, requests, tag):
    out = os.path.join(work, f"{tag}.jsonl")
    subprocess.run([cellrun, "run", artifact, "--input", requests, "--output", out,
                    "--device", "cpu", "--threads", "2", "--quiet"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = {}
    with open(out) as f:
        for line in f:
            result = json.loads(line)
            results[result["id"]] = {name: tensor["data"]
                                     for name, tensor in result["outputs"].items()}
    return results


for name in ("lstm", "gru"):
    requests = os.path.join(source, "examples", name, "requests.jsonl")
    fp32 = serve(compile_model(name, "fp32"), requests, f"{name}-fp32")
    bf16_artifact = compile_model(name, "bf16")
    bf16 = serve(bf16_artifact, requests, f"{name}-bf16")
    worst, elements = 0.0, 0
    for rid, outputs in fp32.items():
        for output, values in outputs.items():
            other = bf16[rid][output]
            assert len(other) == len(values), (rid, output)
            for a, b in zip(values, other):
                worst = max(worst, abs(a - b))
                elements += 1
    print(f"{name}: {elements} output elements, worst |bf16 - fp32| = {worst:.3g}")
    if worst == 0.0:
        sys.exit(f"FAIL: {name}: bf16 gave fp32's results: its GEMMs did not run in bf16")
    if worst > BOUND:
        sys.exit(f"FAIL: {name}: bf16 differs from fp32 by {worst:.3g} > {BOUND}")
    # Batch invariance on the bf16 path: the first request alone, same bits.
    with open(requests) as f:
        first = f.readline()
    alone_path = os.path.join(work, f"{name}-first.jsonl")
    with open(alone_path, "w") as f:
        f.write(first)
    alone = serve(bf16_artifact, alone_path, f"{name}-bf16-alone")
    rid = next(iter(alone))
    if alone[rid] != bf16[rid]:
        sys.exit(f"FAIL: {name}: request {rid} alone differs from its batched bf16 run")
print("bf16 on the CPU: OK")
