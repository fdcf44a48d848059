#!/usr/bin/env bash
# The one-shot and the two-shot forced, 1 - 16 KiB, alternated over 8 rounds with the CPU pair
# probe before each (2 ranks, float32 sum; collx_osu's median of 5 rounds per size).
set -eu
b=${1:-/work/main/build}
for r in 1 2 3 4 5 6 7 8; do
  for a in shm_one_shot shm_two_shot; do
    { mpiexec -n 1 $b/bench/cpu_pair_probe 2>/dev/null | head -1 || true
      mpiexec -n 2 $b/bench/collx_osu -m 1024:16384 --compare-mpi -c --algo $a; } > r$r-$a.txt 2>&1
  done
done
