#!/usr/bin/env bash
# Other dtype x op pairs than the main job's float32 sum, against MPICH's MPI_Allreduce in the
# same run (2 ranks, 4 B - 16 MiB, every size validated), six rounds of the four, alternated
# (ROUNDS="4 5 6" runs only those).
# Run from the repository root with the release build in build/; writes here.
set -euo pipefail
out=$(dirname "$0")
for round in ${ROUNDS:-1 2 3 4 5 6}; do
  for t in "float64 sum" "int32 prod" "int64 max" "uint8 bxor"; do
    set -- $t
    f="$out/$1-$2.$round.txt"
    build/bench/cpu_pair_probe > "$f"
    mpiexec -n 2 build/bench/collx_osu -m 4:16777216 --compare-mpi -c -T "$1" --op "$2" >> "$f"
  done
done
