#!/usr/bin/env bash
# The .deb packages (ctest install.packages): `cpack` in the build
# directory makes libcellrun-dev, cellrun and cellc; each is unpacked with
# dpkg-deb -x (not installed), the packaged cellc compiles the LSTM example
# to the same bytes as the build's cellc, and the packaged cellrun serves
# it with the same results as the build's cellrun.
#   package_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build="$1" source_dir="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"
(cd "$build" && cpack -G DEB -B "$work/packages" > "$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; exit 1; }
for package in libcellrun-dev cellrun cellc; do
  deb=$(ls "$work/packages/${package}_"*.deb)
  echo "$(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"
  dpkg-deb -x "$deb" "$work/root"
done
for file in usr/bin/cellrun usr/bin/cellc usr/include/cellrun/Engine.h \
            usr/include/cellrun/Model.h \
            usr/lib/cmake/cellrun/cellrunConfig.cmake usr/lib/cellrun/libCellEngine.a \
            usr/lib/libcellrun.so; do
  [ -e "$work/root/$file" ] || { echo "FAIL: no $file in the packages"; exit 1; }
done
# The headers are the public API: no file format, no backend.
if ls "$work/root/usr/include/cellrun" | grep -qx 'schema\|Artifact.h\|Executor.h'; then
  echo "FAIL: internal headers in the package: $(ls "$work/root/usr/include/cellrun")"
  exit 1
fi

# The packaged compiler, then the packaged runtime tool, against the build's.
"$work/root/usr/bin/cellc" "$source_dir/examples/lstm/model.yaml" \
  --onnx-dir "$build/examples/lstm" -o "$work/lstm.cellpack" --quiet
"$build/tools/cellc/cellc" "$source_dir/examples/lstm/model.yaml" \
  --onnx-dir "$build/examples/lstm" -o "$work/lstm-build.cellpack" --quiet
cmp "$work/lstm.cellpack" "$work/lstm-build.cellpack" ||
  { echo "FAIL: the packaged cellc wrote another artifact"; exit 1; }
requests="$source_dir/examples/lstm/requests.jsonl"
"$work/root/usr/bin/cellrun" --version
"$work/root/usr/bin/cellrun" run "$work/lstm.cellpack" --input "$requests" \
  --output "$work/packaged.jsonl" --device cpu --quiet > /dev/null
"$build/tools/cellrun/cellrun" run "$work/lstm.cellpack" --input "$requests" \
  --output "$work/build.jsonl" --device cpu --quiet > /dev/null
strip() { sed 's/,"queue_us".*//' "$1"; }
lines=$(wc -l < "$work/build.jsonl")
[ "$lines" -gt 0 ] || { echo "FAIL: no results"; exit 1; }
cmp <(strip "$work/packaged.jsonl") <(strip "$work/build.jsonl") ||
  { echo "FAIL: the packaged cellrun's results differ"; exit 1; }
echo "PASS: $lines results of the packaged cellc and cellrun equal the build's"
