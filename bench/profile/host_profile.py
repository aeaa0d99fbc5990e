"""Where a row-step's host time goes: splits the samples of the engine's
thread in a `perf record` of `cellrun run` (one thread, no output file) into
the compute of the tasks, the row copies, binding, completing, the requests'
admission and end, the scheduler, the allocator and the kernel, and prints a
markdown table in nanoseconds per row-step (samples / frequency / row-steps).
The engine's thread is the one with the most samples in engine code.

  host_profile.py PERF_DATA FREQUENCY ROW_STEPS [LABEL]"""
import collections
import re
import subprocess
import sys

# First match wins; symbols as perf prints them for our Release builds
# (before and after the host-path work, so both names of a part appear).
CATEGORIES = [
    ("tasks: GEMM", r"avx2Tile|avx2Wide|avx2Block|avx512Block|avx512Micro|gemmRows|gemmPart|gemmPanel|"
                    r"bf16Block|gemmPanels|packA|PackSix|finishColumns|PackedGemm|sgemm|"
                    r"scaleBias|scaleRowsAddBias"),
    ("tasks: element-wise", r"sigmoid|tanh|expAvx|VectorMath|RegionInterpreter|lstmGate|"
                            r"RegionMath|executeOp|executeMoves|executeGather|loadRows|storeRows|"
     r"binaryFloats|CpuTaskRunner|rowArrays|arraysAvx|arraysGeneric|runAndNumber"),
    ("row copies (data in, results out)", r"memmove|memcpy|copyRow"),
    ("executor checks and issue", r"Executor::|CpuBackend::submit"),
    ("binding a task's rows", r"bindNode|bindChainNode|bindPlannedNodes|"
                              r"bindPaddingRows|sizeTaskRows|launch|planReads|acquireFor|"
                              r"releaseReadRows|SlotPool|hostReads|readTarget|"
                              r"releaseRow|releaseFor"),
    ("completing steps", r"EngineWorker::complete|afterNode|nodeDone|chainDone|"
                         r"chainAfterNode|releaseOutputs|releasePinned|appendOutput|"
                         r"appendTo"),
    ("requests: admission, start, end, results",
     r"admit|startRequest|CellGraph::start|CellGraph::CellGraph|createChainOutputs|"
     r"newTensor|addNode|linkState|finishRequest|deliver|~CellGraph|takesHead|"
     r"headForMe|parkedFor|addReady|ResultWriter|_Function_handler|SlotTable|"
     r"Engine::submit|RequestParser|needOf"),
    ("scheduler and policy", r"Scheduler::|CellularPolicy|BatchingPolicy"),
    ("allocator (malloc, free, new, delete)",
     r"malloc|free|operator new|operator delete|_int_|consolidate|unlink_chunk|"
     r"mi_|_mi_"),
    ("locks and clocks", r"pthread_mutex|clock_gettime|lll_lock|futex"),
]


def categorise(kind, symbol):
    for name, pattern in CATEGORIES:
        if re.search(pattern, symbol):
            return name
    if kind == "k":
        return "Linux kernel (page faults, scheduling)"
    return "other"


def main():
    data, frequency, steps = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    label = sys.argv[4] if len(sys.argv) > 4 else data
    script = subprocess.run(["perf", "script", "-i", data, "-F", "tid,ip,sym",
                             "--no-inline"], capture_output=True, text=True,
                            check=True).stdout
    per_thread = collections.defaultdict(collections.Counter)
    for line in script.splitlines():
        # One sample a line (no call graphs): "TID ADDRESS SYMBOL".
        fields = line.split(None, 2)
        if len(fields) < 2 or not fields[0].isdigit():
            continue
        symbol = fields[2].strip() if len(fields) > 2 else "[unknown]"
        kind = "k" if fields[1].startswith("ffffffff") else "u"
        per_thread[fields[0]][(kind, symbol)] += 1
    engine = max(per_thread, key=lambda t: sum(
        n for (k, s), n in per_thread[t].items()
        if re.search(r"EngineWorker|Scheduler::", s)))
    samples = collections.Counter()
    for (kind, symbol), count in per_thread[engine].items():
        samples[categorise(kind, symbol)] += count
    total = sum(samples.values())
    nanos = lambda count: count / frequency / steps * 1e9
    print(f"{label}: the engine's thread, {total} samples at {frequency:g} Hz "
          f"({total / frequency:.3f} s) over {steps} row-steps: "
          f"{nanos(total):.0f} ns a row-step\n")
    print("| part | ns a row-step | share |")
    print("|---|---:|---:|")
    for name, count in samples.most_common():
        print(f"| {name} | {nanos(count):.0f} | {100 * count / total:.1f}% |")


if __name__ == "__main__":
    main()
