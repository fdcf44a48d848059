#!/usr/bin/env bash
# Pairs in ABBA order (the VM's slow phases last seconds to minutes: compare only pairs in the
# same phase), 4 B, 32 B (in the flag lines), 64 B, 8 KiB (in the slots), 50000 iterations,
# 5 rounds per run, 8 pairs.
set -u
for r in $(seq 1 8); do
  if [ $((r % 2)) = 1 ]; then order="A B"; else order="B A"; fi
  for side in $order; do
    for m in 64:64 256:256; do
      echo "== round $r side $side sizes $m"
      mpiexec -n 2 /tmp/ab$side/build/bench/collx_osu -m $m -i 50000 -x 5000 -r 5 --compare-mpi
    done
  done
done
