#!/usr/bin/env bash
# 64 B only (the one-shot's slot path), 100000 iterations, 9 rounds per run, 10 pairs in ABBA
# order.
set -u
for r in $(seq 1 10); do
  if [ $((r % 2)) = 1 ]; then order="A B"; else order="B A"; fi
  for side in $order; do
    echo "== round $r side $side sizes 64:64"
    mpiexec -n 2 /tmp/ab$side/build/bench/collx_osu -m 64:64 -i 100000 -x 5000 -r 9 --compare-mpi
  done
done
