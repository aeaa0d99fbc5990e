#!/usr/bin/env bash
# Installs the dependencies (scripts/install-deps.sh) and the server tests'
# Python environment (scripts/python-test-env.sh), then configures and
# builds cellc in ./build (override with BUILD_DIR) with Ninja and ccache.
# Extra arguments are passed to `ninja` (targets).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
jobs="${JOBS:-$(nproc)}"

# Object files cached by path relative to the checkout: a fresh clone
# elsewhere reuses what an earlier build compiled.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1

"$root/scripts/install-deps.sh"
"$root/scripts/python-test-env.sh" "$build/venv"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
ninja -C "$build" -j "$jobs" "$@"
