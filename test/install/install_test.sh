#!/usr/bin/env bash
# The runtime as an installed package, from a checkout (ctest install.consumer):
#  1. configure this source tree with the compiler, the server and the tests
#     off and find_package of MLIR, LLVM and ONNX disabled (with CUDA=OFF
#     also the CUDA backend off and find_package of the CUDA toolkit
#     disabled: a CPU-only runtime), build it, and `cmake --install` it to
#     a prefix;
#  2. configure and build test/install/consumer, a project outside the tree
#     (find_package(cellrun CONFIG REQUIRED), cellrun::runtime), against it;
#  3. serve example requests with it, linked statically and with
#     libcellrun.so, and compare every output value, bit for bit, with what
#     `cellrun run` (the main build's) computed.
#   install_test.sh SOURCE_DIR CELLRUN EXAMPLES_BUILD_DIR WORK_DIR [CUDA=ON|OFF]
set -euo pipefail
source_dir="$1" cellrun="$2" examples="$3" work="$4" cuda="${5:-ON}"
disabled=(MLIR LLVM ONNX)
[ "$cuda" = OFF ] && disabled+=(CUDAToolkit)
disable_flags=()
for package in "${disabled[@]}"; do
  disable_flags+=("-DCMAKE_DISABLE_FIND_PACKAGE_$package=ON")
done
rm -rf "$work/build" "$work/prefix" "$work/consumer"
mkdir -p "$work"
# Objects cached by path relative to the work directory (scripts/build.sh).
export CCACHE_BASEDIR="$work" CCACHE_NOHASHDIR=1

cmake -S "$source_dir" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCELL_BUILD_COMPILER=OFF -DCELL_BUILD_SERVER=OFF -DCELL_BUILD_TESTS=OFF \
  -DCELL_ENABLE_CUDA="$cuda" \
  "${disable_flags[@]}" \
  > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
for package in "${disabled[@]}"; do
  if grep -q "^${package}_DIR:PATH=/" "$work/build/CMakeCache.txt"; then
    echo "FAIL: the runtime-only configure found $package"; exit 1
  fi
done
echo "configured without the compiler (no ${disabled[*]})"
cmake --build "$work/build" -j 2 > "$work/build.log" 2>&1 ||
  { tail -50 "$work/build.log"; exit 1; }
cmake --install "$work/build" --prefix "$work/prefix" > "$work/install.log"
for file in lib/cmake/cellrun/cellrunConfig.cmake \
            lib/cmake/cellrun/cellrunConfigVersion.cmake \
            include/cellrun/Engine.h lib/cellrun/libCellEngine.a lib/libcellrun.so; do
  [ -e "$work/prefix/$file" ] || { echo "FAIL: $file was not installed"; exit 1; }
done
if [ "$cuda" = OFF ]; then
  # Nothing of CUDA in the library.
  if ldd "$work/prefix/lib/libcellrun.so" | grep -Ei "cuda|cublas"; then
    echo "FAIL: the CPU-only libcellrun.so loads a CUDA library"; exit 1
  fi
  if nm -C "$work/prefix/lib/libcellrun.so" | grep -q " cuda[A-Z]"; then
    echo "FAIL: the CPU-only libcellrun.so holds CUDA runtime symbols"; exit 1
  fi
fi
echo "installed to $work/prefix"

cmake -S "$source_dir/test/install/consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" \
  > "$work/consumer-configure.log" 2>&1 || { cat "$work/consumer-configure.log"; exit 1; }
cmake --build "$work/consumer" > "$work/consumer-build.log" 2>&1 ||
  { cat "$work/consumer-build.log"; exit 1; }

# The GPU as the installed runtime sees it: a CPU-only one says why it has
# none; one with CUDA names the device, or says there is none.
probe=$("$work/consumer/probe_device")
echo "probe_device: $probe"
if [ "$cuda" = OFF ]; then
  [[ "$probe" == *"CELL_ENABLE_CUDA=OFF"* ]] ||
    { echo "FAIL: a CPU-only runtime should say it was built without CUDA"; exit 1; }
else
  [[ "$probe" == cuda:* || "$probe" == "no CUDA device: "* ]] ||
    { echo "FAIL: unexpected probe result"; exit 1; }
  [[ "$probe" != *"CELL_ENABLE_CUDA=OFF"* ]] ||
    { echo "FAIL: a runtime with CUDA says it has none"; exit 1; }
fi

for model in lstm seq2seq; do
  requests="$source_dir/examples/$model/requests.jsonl"
  artifact="$examples/$model/model.cellpack"
  "$work/consumer/serve_requests" "$artifact" "$requests" "$work/$model-consumer.txt" \
    > "$work/$model-described.txt"
  cat "$work/$model-described.txt"
  # The public description says what inspect's JSON reads from the file
  # itself: every cell's batch sizes and inputs (name, role, element type).
  "$cellrun" inspect "$artifact" > "$work/$model-inspect.json"
  /usr/bin/python3 - "$work/$model-inspect.json" "$work/$model-described.txt" <<'PY'
import json, sys
model = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().splitlines()
for cell in model["cells"]:
    sizes = ",".join(str(plan["batch_size"]) for plan in cell["plans"])
    inputs = "".join(f" {t['name']}:{t['role'].lower().replace('memorymask', 'memory_mask')}:"
                     f"{t['dtype'].lower()}" for t in cell["inputs"])
    expected = f"cell {cell['name']} {sizes}{inputs}"
    if expected not in lines:
        sys.exit(f"FAIL: describeModel disagrees with inspect: no line '{expected}'")
print(f"describeModel agrees with inspect on {len(model['cells'])} cells")
PY
  grep -q "^model .* (${model/lstm/chain}, fp32)$" "$work/$model-described.txt" ||
    { echo "FAIL: describeModel's unfolding of $model"; exit 1; }
  "$work/consumer/serve_requests_shared" "$artifact" "$requests" "$work/$model-shared.txt"
  cmp "$work/$model-consumer.txt" "$work/$model-shared.txt" ||
    { echo "FAIL: libcellrun.so served $model otherwise than the static libraries"; exit 1; }
  ldd "$work/consumer/serve_requests_shared" > "$work/ldd.txt"
  grep -q "libcellrun.so" "$work/ldd.txt" ||
    { echo "FAIL: serve_requests_shared does not load libcellrun.so"; exit 1; }
  "$cellrun" run "$artifact" --input "$requests" --output "$work/$model-run.jsonl" \
    --device cpu --quiet > /dev/null
  /usr/bin/python3 - "$work/$model-consumer.txt" "$work/$model-run.jsonl" <<'PY'
import json, struct, sys
def bits(value):
    return struct.unpack("<I", struct.pack("<f", float(value)))[0]
consumer = {}
for line in open(sys.argv[1]):
    fields = line.split()
    consumer[(fields[0], fields[1])] = fields[2:]
compared = 0
for line in open(sys.argv[2]):
    result = json.loads(line)
    for name, tensor in result["outputs"].items():
        ours = consumer.pop((result["id"], name), None)
        if ours is None:
            sys.exit(f"FAIL: the consumer has no {name} for {result['id']}")
        flat = []
        stack = [tensor["data"]]
        while stack:
            item = stack.pop()
            if isinstance(item, list):
                stack.extend(reversed(item))
            else:
                flat.append(item)
        if len(flat) != len(ours):
            sys.exit(f"FAIL: {result['id']} {name}: {len(ours)} values, cellrun run has {len(flat)}")
        for k, (a, b) in enumerate(zip(ours, flat)):
            same = (int(a) == b) if isinstance(b, int) else bits(a) == bits(b)
            if not same:
                sys.exit(f"FAIL: {result['id']} {name}[{k}]: {a} against cellrun run's {b}")
        compared += len(flat)
if consumer:
    sys.exit(f"FAIL: outputs cellrun run does not have: {sorted(consumer)[:3]}")
if compared == 0:
    sys.exit("FAIL: nothing compared")
print(f"{sys.argv[1]}: {compared} values equal to cellrun run's, bit for bit")
PY
done
echo "PASS"
