#!/usr/bin/env bash
# Runs a test program with the CPU backend's kernels held to one version
# (CELLRUN_CPU_ISA: the AVX2+FMA or the portable ones) on a processor that
# would pick a wider one, so the end-to-end suites also test the versions
# other machines run. Exits 77 (ctest: skipped, with the reason) when the
# processor lacks what the version needs.
#   with-cpu-isa.sh avx2|generic PROGRAM [ARGS...]
set -euo pipefail
isa="${1:?usage: with-cpu-isa.sh avx2|generic PROGRAM [ARGS...]}"
shift
case "$isa" in
avx2)
  if ! grep -qw avx2 /proc/cpuinfo || ! grep -qw fma /proc/cpuinfo; then
    echo "skipped: this processor has no AVX2 and FMA"
    exit 77
  fi
  ;;
generic) ;;
*)
  echo "with-cpu-isa: unknown version '$isa' (avx2 or generic)" >&2
  exit 2
  ;;
esac
CELLRUN_CPU_ISA="$isa" exec "$@"
