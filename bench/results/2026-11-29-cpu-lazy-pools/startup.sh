#!/bin/bash
# startup.sh CELLRUN LABEL: one request through each hidden-1024 bench artifact, 3 runs
b=/work/main/build/examples
for r in 1 2 3; do
for m in lstm:one seq2seq:one-s2s attention:one-s2s treelstm:one-tree; do
  model=${m%%:*}; req=/tmp/${m##*:}.jsonl
  /usr/bin/time -f "$2 $model %e s %M KB" $1 run $b/$model/bench-fp32.cellpack --input $req --device cpu --quiet >/dev/null 2>>/tmp/startup-$2.txt
done; done
