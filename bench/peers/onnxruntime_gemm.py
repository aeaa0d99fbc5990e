#!/usr/bin/env python3
"""ONNX Runtime's GEMM (MLAS) on the shapes of a cell's step: the speed a CPU
user gets from the fastest runtime at hand, beside task_bench's table of
our step and OpenBLAS.

    onnxruntime_gemm.py [--k 2048] [--n 4096] [--batches 1,2,...,512]
                        [--threads 1] [--min-seconds 0.3] [--csv FILE]

Times one MatMul of [batch, k] by a constant [k, n] weight (the LSTM
step's GEMM: k = input + hidden, n = 4 hidden) in an InferenceSession with
--threads intra-op threads, median (and best) of repeated runs, and prints the
microseconds and GFLOP/s per batch size. Needs onnxruntime (the build's
venv).
"""
import argparse
import statistics
import sys
import time

import numpy as np

try:
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper
except ImportError as missing:
    sys.exit(f"onnxruntime_gemm.py: {missing}: run it with build/venv/bin/python")


def session(k, n, threads):
    weight = np.random.default_rng(1).uniform(-1, 1, (k, n)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["D"])], "gemm",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["m", k])],
        [helper.make_tensor_value_info("D", TensorProto.FLOAT, ["m", n])],
        [numpy_helper.from_array(weight, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(model.SerializeToString(), options,
                                        providers=["CPUExecutionProvider"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=2048)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--batches", default="1,2,4,8,16,32,64,128,256,512")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--min-seconds", type=float, default=0.3)
    parser.add_argument("--csv")
    args = parser.parse_args()
    run = session(args.k, args.n, args.threads)
    rows = []
    print(f"onnxruntime {onnxruntime.__version__} MatMul [batch, {args.k}] x "
          f"[{args.k}, {args.n}], {args.threads} thread(s)")
    print(f"{'batch':>6} {'us':>12} {'best us':>12} {'GFLOP/s':>10}")
    for batch in [int(b) for b in args.batches.split(",")]:
        a = np.random.default_rng(batch).uniform(-1, 1, (batch, args.k)).astype(np.float32)
        run.run(None, {"A": a})  # warm-up
        times, spent = [], 0.0
        while spent < args.min_seconds or len(times) < 5:
            begin = time.perf_counter()
            run.run(None, {"A": a})
            times.append(time.perf_counter() - begin)
            spent += times[-1]
        seconds = statistics.median(times)
        best = min(times)
        gflops = 2.0 * batch * args.k * args.n / seconds / 1e9
        rows.append((batch, seconds * 1e6, best * 1e6, gflops))
        print(f"{batch:>6} {seconds * 1e6:>12.1f} {best * 1e6:>12.1f} {gflops:>10.1f}")
    if args.csv:
        with open(args.csv, "w") as out:
            out.write("batch,onnxruntime_matmul_us,onnxruntime_matmul_best_us,gflops\n")
            for batch, micros, best, gflops in rows:
                out.write(f"{batch},{micros:.1f},{best:.1f},{gflops:.1f}\n")


if __name__ == "__main__":
    main()
