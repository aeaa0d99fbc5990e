#!/usr/bin/env bash
# A dry run of scripts/gpu-check.sh on a machine without a GPU, before a
# device call is spent on it: every step's commands, file names and
# parsing run, on the CPU, through a stand-in build directory where
#  - `cellrun` is a wrapper that runs this build's cellrun with
#    `--device cuda` turned into `--device cpu` (the CUDA-only flags then
#    print that they do nothing);
#  - the hidden-1024 LSTM's artifacts and PyTorch weights are the hidden-16
#    LSTM's (tiny-fp32.cellpack, h16-tiny/), so the steps take seconds;
#  - `cuda_task_bench` prints a table an H200 measured (default: the fp32
#    table of bench/results/2026-11-30-h200-epilogues, call 3) and writes
#    its CSV where asked;
#  - `nvidia-smi` names a stand-in GPU and samples a constant utilization;
#  - the GPU test binaries are this build's (they skip without a GPU).
# Nothing it prints measures a GPU: it says whether the call would run.
# The GPU_CHECK_* settings of the call to try are passed through as they
# are (use the build directory instead of --pack; GPU_CHECK_MODELS is
# dropped: the stand-in artifacts replace the parts). Exits as gpu-check.sh
# does, non-zero when a step failed or was cut.
#   GPU_CHECK_STEPS="kernels busy workers" ... scripts/gpu-check-dry-run.sh OUTDIR [BUILD_DIR]
# Needs `ninja -C build all bench-artifacts`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: gpu-check-dry-run.sh OUTDIR [BUILD_DIR]}"
build="$(cd "${2:-${BUILD_DIR:-$root/build}}" && pwd)"
table="${GPU_CHECK_DRY_TABLE:-$root/bench/results/2026-11-30-h200-epilogues/call3-gpu-check-logs.tgz}"
for file in "$build/tools/cellrun/cellrun" "$build/examples/lstm/tiny-fp32.cellpack" \
  "$build/examples/lstm/h16-tiny/lstm.pt" "$table"; do
  [ -e "$file" ] || { echo "gpu-check-dry-run: $file is missing" >&2; exit 2; }
done
stand_in="$(mktemp -d)"
trap 'rm -rf "$stand_in"' EXIT
mkdir -p "$stand_in/build/tools/cellrun" "$stand_in/build/bench" "$stand_in/build/test" \
  "$stand_in/build/examples/lstm" "$stand_in/bin" "$stand_in/table"

# The recorded H200 table.
tar -C "$stand_in/table" -xzf "$table" gpu-check/cuda-lstm1024-fp32.csv \
  gpu-check/cuda-lstm1024-fp32.txt ||
  { echo "gpu-check-dry-run: no fp32 table in $table" >&2; exit 2; }

cat >"$stand_in/build/tools/cellrun/cellrun" <<EOF
#!/usr/bin/env bash
# gpu-check-dry-run: cellrun on the cpu backend where the GPU was asked for.
args=()
device=0
for arg in "\$@"; do
  if [ "\$device" = 1 ] && [ "\$arg" = cuda ]; then arg=cpu; fi
  [ "\$arg" = --device=cuda ] && arg=--device=cpu
  device=0
  [ "\$arg" = --device ] && device=1
  args+=("\$arg")
done
exec "$build/tools/cellrun/cellrun" "\${args[@]}"
EOF
cat >"$stand_in/build/bench/cuda_task_bench" <<EOF
#!/usr/bin/env bash
# gpu-check-dry-run: a table an H200 measured, not this machine.
csv=""
previous=""
for arg in "\$@"; do
  [ "\$previous" = --csv ] && csv="\$arg"
  previous="\$arg"
done
echo "(gpu-check-dry-run: the recorded table of $(basename "$table"), not a measurement)"
cat "$stand_in/table/gpu-check/cuda-lstm1024-fp32.txt"
[ -z "\$csv" ] || cp "$stand_in/table/gpu-check/cuda-lstm1024-fp32.csv" "\$csv"
EOF
cat >"$stand_in/bin/nvidia-smi" <<'EOF'
#!/usr/bin/env bash
# gpu-check-dry-run: a stand-in GPU, its utilization a constant.
case " $* " in
*" -lms "*) while sleep 0.1; do echo 50; done ;;
*" -L "*) echo "GPU 0: stand-in for gpu-check-dry-run (no GPU)" ;;
*) echo "name, driver_version"; echo "stand-in, none" ;;
esac
EOF
chmod +x "$stand_in/build/tools/cellrun/cellrun" "$stand_in/build/bench/cuda_task_bench" \
  "$stand_in/bin/nvidia-smi"
for program in "$build"/test/*-cuda-tests "$build"/test/cuda-backend-tests "$build/bench/task_bench"; do
  [ -f "$program" ] && ln -sf "$program" "$stand_in/build/${program#"$build"/}"
done
# Every example as built, but the LSTM's hidden-1024 artifacts and weights
# are the hidden-16 one's.
for example in "$build"/examples/*; do
  [ "$(basename "$example")" = lstm ] || ln -s "$example" "$stand_in/build/examples/"
done
for file in "$build"/examples/lstm/*; do
  case "$(basename "$file")" in
  bench-*.cellpack | h1024-bench) ;;
  *) ln -s "$file" "$stand_in/build/examples/lstm/" ;;
  esac
done
for precision in fp32 tf32 bf16; do
  ln -s "$build/examples/lstm/tiny-fp32.cellpack" "$stand_in/build/examples/lstm/bench-$precision.cellpack"
done
ln -s "$build/examples/lstm/h16-tiny" "$stand_in/build/examples/lstm/h1024-bench"

echo "gpu-check-dry-run: $root/scripts/gpu-check.sh on the CPU through $stand_in/build" \
  "(steps: ${GPU_CHECK_STEPS:-all})"
code=0
env -u GPU_CHECK_MODELS PATH="$stand_in/bin:$PATH" PYTHON="${PYTHON:-/usr/bin/python3}" \
  "$root/scripts/gpu-check.sh" "$out" "$stand_in/build" || code=$?
exit "$code"
