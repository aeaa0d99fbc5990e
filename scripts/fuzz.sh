#!/usr/bin/env bash
# Runs one fuzz target (test/fuzz/) under libFuzzer with AddressSanitizer and
# UndefinedBehaviorSanitizer for SECONDS:
#   scripts/fuzz.sh request_parser|artifact|http_infer SECONDS [libFuzzer options...]
# Builds the target with clang in build-fuzz/ (the runtime and, for
# http_infer, the server's codecs only), seeds it
# with the committed corpus (test/fuzz/corpus/TARGET) and, for the artifact
# target, the example artifacts of the main build (scripts/build.sh first);
# new inputs go to build-fuzz/corpus/TARGET, crashes to build-fuzz/crashes/.
# Keep a crashing input as a regression case under test/fuzz/corpus/TARGET:
# ctest replays that directory without clang (fuzz.replay.TARGET).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${1:?usage: fuzz.sh request_parser|artifact|http_infer SECONDS [libFuzzer options]}"
seconds="${2:?usage: fuzz.sh TARGET SECONDS}"
shift 2
case "$target" in request_parser | artifact | http_infer) ;; *)
  echo "fuzz.sh: unknown target '$target' (request_parser, artifact, http_infer)" >&2
  exit 2
  ;;
esac
"$root/scripts/install-deps.sh" >/dev/null
# libFuzzer: Debian's clang (14 on bookworm) and its compiler-rt.
if ! command -v clang++ >/dev/null ||
  ! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  apt-get install -y --no-install-recommends clang libclang-rt-14-dev
fi
build="$root/build-fuzz"
main="${BUILD_DIR:-$root/build}"
[ -f "$main/examples/lstm/model.cellpack" ] || {
  echo "fuzz.sh: no example artifacts in $main; run scripts/build.sh first" >&2
  exit 2
}
flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -g -O1"
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCELL_FUZZ=ON -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
fi
# The example artifacts come from the main build: only the runtime is built.
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
export CELL_EXAMPLES_BUILD_DIR="$main/examples"
"$build/test/fuzz-$target" -max_total_time="$seconds" -artifact_prefix="$build/crashes/$target-" \
  -print_final_stats=1 "$@" "$build/corpus/$target" "${seeds[@]}"
