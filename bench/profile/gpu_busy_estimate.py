"""Estimates how busy a run kept the GPU: the GPU time of every task the run
ran, as cuda_task_bench measured a task of its rows alone (its plan column:
the step's GEMMs and kernels without the host), summed and set against the
serving's wall time. Issue 33's measure ("the sum of task GPU times over the
wall"), free of the host's launch time that a span timed in the run holds
when the stream runs dry (`cellrun run --time-device`). A task's rows are
its nodes and padding rows; their time is interpolated between the batch
sizes cuda_task_bench measured (its smallest below them, its largest above).
For one device: tasks of several streams counted together.

  gpu_busy_estimate.py TASK_LOG.csv CUDA_TASK_BENCH.csv SERVE_SECONDS

TASK_LOG.csv: `cellrun run --task-log`; CUDA_TASK_BENCH.csv: its --csv of
the same model's cell; SERVE_SECONDS: the "serve" time `cellrun run` printed.
Prints one line; exits 2 on unusable input."""
import bisect
import csv
import sys


def plan_times(path):
    """(batch, plan seconds) of cuda_task_bench's CSV, by batch."""
    points = []
    with open(path, newline="") as file:
        for row in csv.DictReader(file):
            points.append((int(row["batch"]), float(row["plan_us"]) * 1e-6))
    if not points:
        raise ValueError(f"{path}: no batch sizes")
    return sorted(points)


def seconds_for(points, rows):
    """The plan time for `rows` rows, linear between measured batches."""
    batches = [batch for batch, _ in points]
    if rows <= batches[0]:
        return points[0][1]
    if rows >= batches[-1]:
        return points[-1][1]
    above = bisect.bisect_left(batches, rows)
    (low, low_time), (high, high_time) = points[above - 1], points[above]
    return low_time + (high_time - low_time) * (rows - low) / (high - low)


def estimate(task_log, bench_csv, serve_seconds):
    """(tasks, their GPU seconds, the share of the wall time)."""
    points = plan_times(bench_csv)
    tasks, busy = 0, 0.0
    with open(task_log, newline="") as file:
        for row in csv.DictReader(file):
            if row["failed"] != "0":
                continue
            rows = int(row["nodes"]) + int(row["padding_rows"])
            busy += seconds_for(points, rows)
            tasks += 1
    if serve_seconds <= 0:
        raise ValueError("the serving time must be positive")
    return tasks, busy, busy / serve_seconds


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        tasks, busy, share = estimate(sys.argv[1], sys.argv[2], float(sys.argv[3]))
    except (OSError, KeyError, ValueError) as error:
        print(f"gpu_busy_estimate: {error}", file=sys.stderr)
        return 2
    print(f"GPU busy (estimate): {tasks} tasks of {busy:.3f} s of GPU time as "
          f"measured alone (cuda_task_bench's plan column) over {float(sys.argv[3]):.3f} s "
          f"of serving: {100 * share:.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
