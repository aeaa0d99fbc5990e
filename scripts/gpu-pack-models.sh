#!/usr/bin/env bash
# Packs the hidden-1024 benchmark artifacts (fp32, and the LSTM's tf32 and bf16) that do not fit beside the rest
# of a device call's carry (LSTM 34 MB, seq2seq 72 MB, attention seq2seq 85
# MB, TreeLSTM 56 MB, GRU 25 MB against the device tool's 64 MiB a call, the checkout
# and gpu-pack/'s 27 MB of binaries and examples included) into
# parts that each do: one uncompressed tar of the artifacts (random weights
# do not compress), cut into OUT_DIR/part-1, part-2, ... Each part carries
# the manifest (the tar's SHA-256, the number of parts, and the digest of
# every PyTorch weight file the artifacts were compiled from), so that
# scripts/gpu-check.sh can put the tar back together on the GPU machine,
# check it, and check the weights it regenerates there for the peers
# (generate.py --weights-only) against the artifacts' (GPU_CHECK_MODELS).
#
# The parts go to the machine in consecutive device calls, one part a call
# (carry: ["OUT_DIR/part-K"]), each copying its part out of the checkout's
# copy into /tmp/gpu-models, which stays while the machine is held; the last
# call, carrying gpu-pack/, finds them all there (GPU_CHECK_MODELS). A
# machine given back between the calls loses them: gpu-check.sh then says
# which part is missing and skips the hidden-1024 steps.
#   scripts/gpu-pack-models.sh [OUT_DIR] [MODEL ...]   (default gpu-models,
#                                       lstm seq2seq attention treelstm gru; after
#                                       ninja -C build bench-artifacts)
# GPU_PACK_VARIANTS: the artifacts packed beside each model's fp32 one where
# it has them (default "tf32 bf16 hoisted-fp32"; empty: fp32 alone, e.g. the
# LSTM in one part instead of two when a call benches fp32 only).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
out="${1:-$root/gpu-models}"
shift || true
models=("$@")
[ "${#models[@]}" -gt 0 ] || models=(lstm seq2seq attention treelstm gru)
variants="${GPU_PACK_VARIANTS-tf32 bf16 hoisted-fp32}"
# What a call may carry beside the checkout (as gpu-pack.sh counts it).
tree_bytes=$(git -C "$root" ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | cut -f1)
part_bytes=$((63 * 1048576 - tree_bytes - 1048576))
[ "$part_bytes" -gt 1048576 ] || { echo "gpu-pack-models: the checkout leaves no room" >&2; exit 1; }

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/examples"
digests="$stage/weights.sha256"
: >"$digests"
for model in "${models[@]}"; do
  artifact="$build/examples/$model/bench-fp32.cellpack"
  weights=("$build/examples/$model/h1024-bench/"*.pt)
  [ -f "$artifact" ] && [ -f "${weights[0]}" ] || {
    echo "gpu-pack-models: $artifact or its weights are missing (ninja -C build bench-artifacts)" >&2
    exit 1
  }
  mkdir -p "$stage/examples/$model"
  cp "$artifact" "$stage/examples/$model/"
  # The tf32 and bf16 artifacts where the model has them (the LSTM's
  # kernel tables), and the GRU's with its input projection hoisted.
  for variant in $variants; do
    other="$build/examples/$model/bench-$variant.cellpack"
    [ ! -f "$other" ] || cp "$other" "$stage/examples/$model/"
  done
  # model, digest, weight file: one line per weight file.
  /usr/bin/python3 "$root/examples/common/weights_digest.py" "${weights[@]}" |
    while read -r digest file; do echo "$model $digest $file"; done >>"$digests"
done
tar -C "$stage" -cf "$stage/models.tar" examples
rm -rf "$out" && mkdir -p "$out"
split -b "$part_bytes" -d -a 2 "$stage/models.tar" "$stage/models.tar."
chunks=("$stage"/models.tar.[0-9][0-9])
sha="$(sha256sum "$stage/models.tar" | cut -d' ' -f1)"
for k in "${!chunks[@]}"; do
  part="$out/part-$((k + 1))"
  mkdir -p "$part"
  mv "${chunks[$k]}" "$part/"
  {
    echo "sha256 $sha"
    echo "parts ${#chunks[@]}"
    echo "models ${models[*]}"
    echo "commit $(git -C "$root" describe --always --dirty 2>/dev/null)"
  } >"$part/manifest.txt"
  cp "$digests" "$part/weights.sha256"
done
echo "gpu-pack-models: ${models[*]} (fp32${variants:+, $variants where built}) in ${#chunks[@]} parts of at most $((part_bytes / 1048576)) MiB under $out:"
du -sh "$out"/part-*
echo "device calls, one a part while the machine stays held (it goes back after 30 s idle):"
for k in $(seq 1 "${#chunks[@]}"); do
  echo "  carry [\"${out#"$root"/}/part-$k\"]: mkdir -p /tmp/gpu-models && cp -r ${out#"$root"/}/part-$k /tmp/gpu-models/"
done
echo "then, carry [\"gpu-pack\"]: GPU_CHECK_MODELS=/tmp/gpu-models scripts/gpu-check.sh \$OUT/x --pack gpu-pack"
