#!/usr/bin/env bash
# Runs one fuzz target (test/fuzz/) under libFuzzer with AddressSanitizer and
# UndefinedBehaviorSanitizer for SECONDS:
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]
# TARGET: request_parser, artifact, http_infer (the runtime and the server's
# codecs), body_decoding (compressed request bodies), json_reader (the
# server's simdjson reading against the runtime's), onnx_import, manifest
# (the compiler's ONNX reader, importer, manifest parser and binder, against
# Debian's libMLIR 16).
# Builds the target with clang 16 in build-fuzz/, seeds it
# with the committed corpus (test/fuzz/corpus/TARGET) and, for the artifact
# and onnx_import targets, the example artifacts and ONNX files of the main
# build (scripts/build.sh first; the manifest target binds to those files);
# new inputs go to build-fuzz/corpus/TARGET, crashes to build-fuzz/crashes/.
# Keep a crashing input as a regression case under test/fuzz/corpus/TARGET:
# ctest replays that directory without clang (fuzz.replay.TARGET).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
targets="request_parser, artifact, http_infer, onnx_import, manifest, body_decoding, json_reader"
target="${1:?usage: fuzz.sh TARGET SECONDS [libFuzzer options]; TARGET: $targets}"
seconds="${2:?usage: fuzz.sh TARGET SECONDS}"
shift 2
case "$target" in request_parser | artifact | http_infer | onnx_import | manifest | body_decoding | json_reader) ;; *)
  echo "fuzz.sh: unknown target '$target' ($targets)" >&2
  exit 2
  ;;
esac
"$root/scripts/install-deps.sh" >/dev/null
# libFuzzer: Debian's clang 16 (the LLVM of libMLIR) and its compiler-rt.
if ! command -v clang++-16 >/dev/null ||
  [ ! -f /usr/lib/llvm-16/lib/clang/16/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  apt-get install -y --no-install-recommends clang-16 libclang-rt-16-dev
fi
build="$root/build-fuzz"
main="${BUILD_DIR:-$root/build}"
[ -f "$main/examples/lstm/model.cellpack" ] || {
  echo "fuzz.sh: no example artifacts in $main; run scripts/build.sh first" >&2
  exit 2
}
flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -g -O1"
# A build dir configured with another compiler (clang 14 before) starts over.
if [ -f "$build/CMakeCache.txt" ] &&
  ! grep -q "^CMAKE_CXX_COMPILER:.*clang++-16" "$build/CMakeCache.txt"; then
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles" "$build/build.ninja"
fi
if [ ! -f "$build/build.ninja" ]; then
  CC=clang-16 CXX=clang++-16 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCELL_FUZZ=ON -DCELL_USE_MIMALLOC=OFF -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
fi
# The example artifacts and ONNX files come from the main build: only the
# target and what it links are built.
ninja -C "$build" "test/fuzz-$target"
mkdir -p "$build/corpus/$target" "$build/crashes"
seeds=("$root/test/fuzz/corpus/$target")
if [ "$target" = artifact ]; then
  mkdir -p "$build/seeds-artifact"
  for artifact in "$main"/examples/*/model.cellpack; do
    cp "$artifact" "$build/seeds-artifact/$(basename "$(dirname "$artifact")").cellpack"
  done
  seeds+=("$build/seeds-artifact")
fi
if [ "$target" = onnx_import ]; then
  mkdir -p "$build/seeds-onnx"
  for onnx in "$main"/examples/*/h64/*.onnx; do
    cp "$onnx" "$build/seeds-onnx/$(basename "$(dirname "$(dirname "$onnx")")")-$(basename "$onnx")"
  done
  seeds+=("$build/seeds-onnx")
fi
export CELL_EXAMPLES_BUILD_DIR="$main/examples"
"$build/test/fuzz-$target" -max_total_time="$seconds" -artifact_prefix="$build/crashes/$target-" \
  -print_final_stats=1 "$@" "$build/corpus/$target" "${seeds[@]}"
