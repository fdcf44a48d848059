#!/usr/bin/env bash
# A/B of COLLX_SHM_AREAS (2: the areas used alternately, as before; 4: the new default),
# alternated run by run, the main job's sweep each time (2 ranks, 4 B - 16 MiB, float32 sum,
# MPI_Allreduce timed in the same run). Output: areas-A.N.txt for tools/median-table.
# Usage (from the repository root, after building): areas.sh ROUNDS
set -euo pipefail
out=$(dirname "$0")
for ((i = 1; i <= $1; ++i)); do
  for a in $( ((i % 2)) && echo 2 4 || echo 4 2); do
    {
      build/bench/cpu_pair_probe
      mpiexec -n 2 -genv COLLX_SHM_AREAS "$a" build/bench/collx_osu -m 4:16777216 --compare-mpi -c
    } > "$out/areas-$a.$i.txt" 2>&1
  done
done
