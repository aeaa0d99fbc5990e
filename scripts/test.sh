#!/usr/bin/env bash
# The whole test suite from a fresh machine: installs dependencies, builds
# everything (compiler, tools, example models) and runs ctest, which drives the
# lit/FileCheck suites and the GoogleTest binaries. Exits non-zero on failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
jobs="${JOBS:-$(nproc)}"

start=$(date +%s)
"$root/scripts/build.sh"
ctest --test-dir "$build" --output-on-failure -j "$jobs"
echo "scripts/test.sh: finished in $(( $(date +%s) - start )) s"
