#!/usr/bin/env bash
# The compiler as an installed package (ctest install.cellc_add_artifact):
# `cmake --install --component compiler` to a prefix, then
# test/install/compiler-consumer, a project outside the tree, compiles the
# LSTM example at build time with cellc_add_artifact: the artifact equals
# what the build's cellc writes, a second build does nothing, and touching
# the ONNX file or the manifest compiles it again.
#   compiler_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build="$1" source_dir="$2" work="$3"
rm -rf "$work"
mkdir -p "$work/model/h64"
cmake --install "$build" --prefix "$work/prefix" --component compiler > "$work/install.log"
[ -x "$work/prefix/bin/cellc" ] || { echo "FAIL: cellc was not installed"; exit 1; }
cp "$source_dir/examples/lstm/model.yaml" "$work/model/model.yaml"
cp "$build/examples/lstm/h64/lstm.onnx" "$work/model/h64/lstm.onnx"

cmake -S "$source_dir/test/install/compiler-consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DMODEL_MANIFEST="$work/model/model.yaml" \
  -DMODEL_ONNX_DIR="$work/model" > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
build_consumer() { ninja -C "$work/consumer" 2>&1 | tee -a "$work/builds.log"; }
compiled() { grep -c "Compiling model.cellpack with cellc" <<< "$1" || true; }

out=$(build_consumer)
[ "$(compiled "$out")" = 1 ] || { echo "FAIL: the first build did not compile"; exit 1; }
"$build/tools/cellc/cellc" "$work/model/model.yaml" --onnx-dir "$work/model" \
  -o "$work/direct.cellpack" --quiet
cmp "$work/consumer/model.cellpack" "$work/direct.cellpack" ||
  { echo "FAIL: cellc_add_artifact wrote another artifact"; exit 1; }
echo "first build: compiled, equal to cellc's own output"

out=$(build_consumer)
[ "$(compiled "$out")" = 0 ] || { echo "FAIL: a build with nothing changed compiled again"; exit 1; }
echo "second build: nothing to do"

for changed in h64/lstm.onnx model.yaml; do
  # Newer than the artifact, whatever the clock's resolution.
  built=$(stat -c %Y "$work/consumer/model.cellpack")
  touch -d "@$((built + 2))" "$work/model/$changed"
  out=$(build_consumer)
  [ "$(compiled "$out")" = 1 ] ||
    { echo "FAIL: changing $changed did not compile the model again"; exit 1; }
  out=$(build_consumer)
  [ "$(compiled "$out")" = 0 ] ||
    { echo "FAIL: after $changed, a build with nothing changed compiled again"; exit 1; }
  echo "after touching $changed: compiled again, then nothing to do"
done
echo "PASS"
