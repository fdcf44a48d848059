#!/usr/bin/env bash
# The small sizes again, longer: 100000 iterations, 9 rounds per run, 8 pairs in ABBA order.
set -u
for r in 1 2 3 4 5 6 7 8; do
  if [ $((r % 2)) = 1 ]; then order="A B"; else order="B A"; fi
  for side in $order; do
    echo "== round $r side $side sizes 4:64"
    mpiexec -n 2 /tmp/ab$side/build/bench/collx_osu -m 4:64 -i 100000 -x 5000 -r 9 --compare-mpi
    echo "== round $r side $side sizes 56:56"
    mpiexec -n 2 /tmp/ab$side/build/bench/collx_osu -m 56:56 -i 100000 -x 5000 -r 9 --compare-mpi
  done
done
