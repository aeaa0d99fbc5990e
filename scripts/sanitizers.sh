#!/usr/bin/env bash
# Builds the runtime's tests (scheduler, engine and request processor,
# executor and pools, CPU backend,
# artifact loader, devices) with AddressSanitizer + UndefinedBehaviorSanitizer
# and with ThreadSanitizer, each in its own build directory, and runs them.
# Not part of .ci/run (it doubles the build); run it before changing the
# runtime's concurrency or memory handling. In the ThreadSanitizer build,
# cellc (which compiles the tests' artifacts) runs its passes on one thread:
# Debian's libMLIR is not instrumented, so TSan cannot see how it orders its
# pass workers and reported races inside it (compiler/driver/CompileDriver.cpp).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${JOBS:-$(nproc)}"
# Objects cached by path relative to the checkout, as in scripts/build.sh:
# a fresh clone reuses what an earlier sanitizer build compiled.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
tests=(scheduler-tests engine-tests custom-unfolder-tests executor-tests backend-examples-cpu-tests cpu-backend-tests
  fault-injection-tests worker-stop-tests
  artifact-tests device-tests)

"$root/scripts/install-deps.sh"
for kind in address thread; do
  build="$root/build-$kind"
  flags="-fsanitize=$kind -fno-omit-frame-pointer -g -O1"
  [ "$kind" = address ] && flags="$flags -fsanitize=undefined -fno-sanitize-recover=undefined"
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCELL_USE_MIMALLOC=OFF \
      -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
      -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$kind" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=$kind"
  fi
  ninja -C "$build" -j "$jobs" "${tests[@]}"
  for test in "${tests[@]}"; do
    echo "== $kind: $test"
    TSAN_OPTIONS="halt_on_error=1" ASAN_OPTIONS="detect_leaks=1" \
      "$build/test/$test" --gtest_brief=1
  done
done
echo "sanitizers.sh: all runtime tests passed under ASan+UBSan and TSan"
