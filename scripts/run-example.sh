#!/usr/bin/env bash
# The main job on its embedded default: installs dependencies, builds cellc and
# exports the example LSTM language-model cell with PyTorch, then compiles it
# with cellc and prints what it produced (the `cell` dialect module and a
# per-cell summary). Pass another example name (gru, seq2seq, treelstm) to
# compile that one instead.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
model="${1:-lstm}"

"$root/scripts/build.sh" cellc examples
echo "== cellc $root/examples/$model/model.yaml --emit=mlir" >&2
"$build/tools/cellc/cellc" "$root/examples/$model/model.yaml" \
  --onnx-dir "$build/examples/$model" --emit=mlir
