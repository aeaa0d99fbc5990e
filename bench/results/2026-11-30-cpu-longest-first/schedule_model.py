"""The offline GRU trace's time under two ways of cutting its chains into
tasks, from task_bench's times per batch size (2 threads, this VM, the same
minutes): taking turns (every running request in every round, tasks of up
to 512) against longest first (each task the requests with the most steps
left, ceil(steps left / most left) of them). Lengths come from the trace
`cellrun bench` writes for the peer (trace-onnxruntime-offline.jsonl).

  schedule_model.py TRACE_JSONL"""
import bisect
import json
import sys

# us a task, task_bench build/examples/gru/bench-fp32.cellpack --threads 2
TASK_US = {1: 472.3, 2: 476.8, 4: 468.4, 8: 600.6, 16: 883.8, 32: 1555.0,
           64: 2849.5, 128: 5608.6, 256: 11002.6, 512: 22577.4}
SIZES = sorted(TASK_US)


def task_us(rows):
    """Linear between the plans' batch sizes."""
    at = bisect.bisect_left(SIZES, rows)
    upper = SIZES[at]
    if at == 0:
        return TASK_US[upper]
    lower = SIZES[at - 1]
    return TASK_US[lower] + (TASK_US[upper] - TASK_US[lower]) * \
        (rows - lower) / (upper - lower)


def turns(lengths):
    total = 0.0
    for step in range(max(lengths)):
        running = sum(1 for length in lengths if length > step)
        while running > 512:
            total += TASK_US[512]
            running -= 512
        total += task_us(running)
    return total / 1e6, None


def longest_first(lengths):
    left = sorted(lengths, reverse=True)
    total, tasks = 0.0, 0
    while left:
        take = min(len(left), 512, -(-sum(left) // left[0]))
        left = sorted((n - 1 if k < take else n for k, n in enumerate(left)),
                      reverse=True)
        left = [n for n in left if n > 0]
        total += task_us(take)
        tasks += 1
    return total / 1e6, tasks


def main():
    with open(sys.argv[1]) as trace:
        lengths = [len(json.loads(line)["steps"]) for line in trace
                   if line.strip()]
    print(f"{len(lengths)} requests, {sum(lengths)} steps, longest {max(lengths)}")
    print("taking turns:  %.3f s" % turns(lengths)[0])
    seconds, tasks = longest_first(lengths)
    print("longest first: %.3f s in %d tasks" % (seconds, tasks))


if __name__ == "__main__":
    main()
