#!/usr/bin/env bash
# The two-shot's stores forced, 1 - 16 MiB, 2 ranks, two rounds alternating the three modes
# (from the repository's root, with build/ made; outputs MODE-ROUND.txt here).
out=$(dirname "$0")
for round in 1 2; do
  for s in auto streaming cached; do
    COLLX_SHM_STORES=$s mpiexec -n 2 build/bench/collx_osu -m 1048576:16777216 --compare-mpi \
      -r 5 > "$out/$s-$round.txt" 2>&1
  done
done
