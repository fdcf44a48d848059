#!/usr/bin/env bash
# COLLX_SHM_AREAS 2, 3 and 4 (and whatever else is named) at 128 KiB - 8 MiB only, each round
# running every value once in rotating order, MPI_Allreduce timed in the same runs.
# Usage (from the repository root, after building): focus.sh ROUNDS AREAS...
set -euo pipefail
rounds=$1
shift
vals=("$@")
n=${#vals[@]}
for ((i = 1; i <= rounds; ++i)); do
  for ((j = 0; j < n; ++j)); do
    a=${vals[$(((i + j) % n))]}
    echo "=== round $i COLLX_SHM_AREAS=$a"
    build/bench/cpu_pair_probe
    mpiexec -n 2 -genv COLLX_SHM_AREAS "$a" build/bench/collx_osu -m 131072:8388608 --compare-mpi -c 2>&1 |
      grep -E '^ *[0-9]+ ' || true
  done
done
