"""bench/profile/gpu_busy_estimate.py on a made-up task log and
cuda_task_bench table: each task's rows (nodes and padding) priced at the
plan time of its rows, interpolated between the measured batch sizes and
clamped at both ends; failed tasks left out; the sum over the serving time;
bad input refused with exit code 2.

  gpu_busy_estimate_test.py SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile

source = sys.argv[1]
script = os.path.join(source, "bench", "profile", "gpu_busy_estimate.py")
sys.path.insert(0, os.path.dirname(script))
import gpu_busy_estimate  # noqa: E402

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


with tempfile.TemporaryDirectory() as work:
    bench = os.path.join(work, "bench.csv")
    with open(bench, "w") as file:
        # Columns as cuda_task_bench writes them; only batch and plan_us used.
        file.write("batch,m,n,k,latency_us,task_us,plan_us,cublas_us\n")
        file.write("4,4,4096,2048,30,20,10,8\n")
        file.write("1,1,4096,2048,25,15,8,7\n")  # out of order on purpose
        file.write("64,64,4096,2048,60,50,40,35\n")
    log = os.path.join(work, "tasks.csv")
    with open(log, "w") as file:
        file.write("worker,cell,nodes,padding_rows,batch_size,submitted_us,"
                   "finished_us,failed\n")
        file.write("0,lstm,1,0,1,0,10,0\n")     # 1 row: 8 us
        file.write("0,lstm,3,1,4,10,20,0\n")    # 4 rows (padding counts): 10 us
        file.write("0,lstm,34,0,64,20,30,0\n")  # 34 rows: 10 + 30 * 30/60 = 25 us
        file.write("0,lstm,100,0,64,30,40,0\n")  # past the largest: 40 us
        file.write("0,lstm,64,0,64,40,50,1\n")  # failed: not counted
    tasks, busy, share = gpu_busy_estimate.estimate(log, bench, 0.0001)
    check(tasks == 4, f"tasks {tasks}, want 4")
    want = (8 + 10 + 25 + 40) * 1e-6
    check(abs(busy - want) < 1e-12, f"GPU seconds {busy}, want {want}")
    check(abs(share - want / 0.0001) < 1e-9, f"share {share}")

    printed = subprocess.run([sys.executable, script, log, bench, "0.0001"],
                             capture_output=True, text=True)
    check(printed.returncode == 0 and "4 tasks" in printed.stdout
          and "83%" in printed.stdout, f"printed: {printed.stdout!r} {printed.stderr!r}")

    # No serving time, a missing column, a missing file: refused.
    for args in ([log, bench, "0"], [bench, log, "1"],
                 [log, os.path.join(work, "none.csv"), "1"], [log, bench]):
        refused = subprocess.run([sys.executable, script, *args],
                                 capture_output=True, text=True)
        check(refused.returncode == 2, f"{args}: exit {refused.returncode}")

if failures:
    sys.exit(1)
print("gpu_busy_estimate: every case as expected")
