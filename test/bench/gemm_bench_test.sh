#!/usr/bin/env bash
# gemm_bench on a small, odd shape (a last panel of 6 columns, row counts
# on each side of the kernels' 6-row groups and the 16-row blocking): it
# exits non-zero when our product and OpenBLAS's differ, and prints a row
# of the table for every row count.
#   gemm_bench_test.sh GEMM_BENCH
set -euo pipefail
bench="${1:?usage: gemm_bench_test.sh GEMM_BENCH}"
out="$("$bench" --k 300 --n 70 --rows 1,5,7,17 --threads 2 --min-seconds 0.01)"
echo "$out"
for rows in 1 5 7 17; do
  if ! grep -Eq "^ *$rows +[0-9.]+ " <<<"$out"; then
    echo "gemm_bench_test: no row for $rows rows" >&2
    exit 1
  fi
done
grep -q "multiply-add peak" <<<"$out"
